#!/usr/bin/env bash
# Every patch in variants/ must apply to this tree: a prepared variant that no longer applies
# is lost work that nothing else would notice (variants/README.md).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
shopt -s nullglob
failed=0
patches=(variants/*.patch)
for patch in "${patches[@]}"; do
  if ! err="$(git apply --check "$patch" 2>&1)"; then
    echo "check_variants: $patch no longer applies to this tree:" >&2
    echo "$err" | sed 's/^/  /' >&2
    failed=1
  fi
done
if [ "$failed" -ne 0 ]; then
  echo "check_variants: rebase the patch onto this tree (git apply -3 it, fix, git diff > it)," >&2
  echo "  or delete it and record why in docs/findings.md, section Variants." >&2
  exit 1
fi
echo "check_variants: ${#patches[@]} patches in variants/ apply"
