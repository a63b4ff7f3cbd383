#!/usr/bin/env bash
# Regenerates the README support matrix from the capability table (build/flashband must exist).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${1:-$root/build/flashband}"
python3 - "$root/README.md" "$("$bin" caps --markdown)" <<'PY'
import sys
path, table = sys.argv[1], sys.argv[2] + "\n"
text = open(path).read()
begin, end = "<!-- support-matrix:begin -->\n", "<!-- support-matrix:end -->"
i, j = text.index(begin) + len(begin), text.index(end)
open(path, "w").write(text[:i] + table + text[j:])
PY
