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
git apply "$p"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$(sha1sum < "$p" | cut -d' ' -f1)" ]; then
  # The files the patch touches that are in the tree now, tests/ excepted.
  files=()
  while IFS= read -r -d '' rec; do  # "added<TAB>deleted<TAB>path"
    f=${rec#*$'\t'}
    f=${f#*$'\t'}
    [[ "$f" == tests/* ]] || [ ! -e "$f" ] || files+=("$f")
  done < <(git apply --numstat -z "$p")
  [ ${#files[@]} -eq 0 ] || touch -r "$stamp" "${files[@]}"
  echo "apply_built_variant: $(basename "$p") applied; build/ keeps its library (${#files[@]} files dated back)"
else
  echo "apply_built_variant: $(basename "$p") applied; build/ holds no build of it, so the next build rebuilds"
fi
rm -f "$stamp"
