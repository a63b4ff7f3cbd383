#!/usr/bin/env bash
# On the GPU machine after a device_check.sh build: Nsight Compute's per-instruction warp
# stall sampling for one launch of bench/probe.py per case: the SASS source page as CSV and
# ncu's log, all in $OUT/ncu_source_<first name>.tgz (the GPU machine returns at most 8
# files; the .ncu-rep reports stay behind, too large) for offline reading
# (scripts/stall_profile.py). The archive is named after the first case so that two calls
# in one device command (e.g. one with NCU_KERNEL for a peer) do not overwrite each other.
# Usage: scripts/ncu_source.sh name "probe args" [name "args"]...
# Build with FB_CMAKE_EXTRA=-DCMAKE_CUDA_FLAGS=-lineinfo to get source lines as well.
# NCU_KERNEL: the kernel-name regex, as in ncu_probe.sh (a peer's, e.g. "flash_fwd" for
# "--backend sdpa-fa2").
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
OUT="${OUT:-$root/out}"
mkdir -p "$OUT"
work=$(mktemp -d)
archive="$OUT/ncu_source_${1:-none}.tgz"
[ $(($# % 2)) -eq 0 ] || { echo "usage: $0 name \"probe args\" [name \"args\"]..." >&2; exit 2; }
mod=$(dirname "$(dirname "$(find build -name '_C*.so' | head -1)")")
while [ $# -ge 2 ]; do
  name=$1; args=$2; shift 2
  PYTHONPATH="$root/$mod:$root/python" timeout 240 ncu --kernel-name regex:"${NCU_KERNEL:-prefill|attention}" \
    --launch-skip 2 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section SourceCounters \
    -f -o "$work/$name" python3 bench/probe.py $args > "$work/$name.log" 2>&1 || { echo "$name: ncu failed"; tail -5 "$work/$name.log"; continue; }
  [ -s "$work/$name.ncu-rep" ] || { echo "$name: no kernel profiled"; tail -5 "$work/$name.log"; continue; }
  ncu --import "$work/$name.ncu-rep" --page source --print-source sass --csv > "$work/${name}_sass.csv" 2> "$work/${name}_sass.err"
  echo "$name ($args): $(ncu --import "$work/$name.ncu-rep" --page details 2>/dev/null | grep -E ' Duration ' | tr -s ' ') sass csv $(wc -l < "$work/${name}_sass.csv") lines"
done
tar czf "$archive" -C "$work" --exclude="*.ncu-rep" .
