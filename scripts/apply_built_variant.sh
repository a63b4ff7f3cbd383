#!/usr/bin/env bash
# On the GPU machine, in the call after `AB_RESTORE=0 scripts/ab_ncu.sh PROBES -- PATCH`
# (PATCH the last variant there): applies PATCH and keeps the library and Python module
# that ab_ncu built from it, so that the GPU tests of a winner cost no kernel rebuild:
#   scripts/apply_built_variant.sh variants/NAME.patch && scripts/device_check.sh build gpu sanitize
# ab_ncu stamps build/ with the patch's hash before building the variant's module; with the
# same patch applied again, its files outside tests/ get the stamp's time, older than those
# objects, so ninja keeps them and rebuilds only what ab_ncu did not build from the patch:
# the test binaries (their sources keep the new times of the apply, and their objects
# predate the stamp, so the dated-back headers still rebuild them). Without a matching stamp
# (another patch last, a baseline rebuilt, a fresh machine) it only applies the patch, and
# the next build rebuilds what the patch touches.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
p="${1:?usage: $0 variants/NAME.patch}"
stamp=build/.ab_variant_built
if command -v git > /dev/null; then git apply "$p"; else patch -p1 --forward --quiet < "$p"; fi
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$(sha1sum < "$p" | cut -d' ' -f1)" ]; then
  # The files the patch leaves in the tree ("+++ b/PATH"), tests/ excepted.
  mapfile -t files < <(sed -n 's|^+++ b/||p' "$p" | grep -v '^tests/' || true)
  [ ${#files[@]} -eq 0 ] || touch -r "$stamp" "${files[@]}"
  echo "apply_built_variant: $(basename "$p") applied; build/ keeps its library (${#files[@]} files dated back)"
else
  echo "apply_built_variant: $(basename "$p") applied; build/ holds no build of it, so the next build rebuilds"
fi
rm -f "$stamp"
