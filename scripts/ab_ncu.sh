#!/usr/bin/env bash
# On the GPU machine after a device_check.sh build: A/B of source variants by Nsight
# Compute duration (clocks locked by ncu, so differences of ~1% are visible, unlike the
# benchmark's boost-clock runs). Each variant is a patch (`git diff` output) applied to the
# tree, rebuilt incrementally, probed, and reverted; the baseline is the tree as it is.
#   scripts/ab_ncu.sh "--seq 512" "--page 16" -- variants/a.patch variants/b.patch
# Prints one row per probe: the baseline's duration, then each variant's.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
probes=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do probes+=("$1"); shift; done
[ $# -gt 0 ] && shift
patches=("$@")
[ ${#probes[@]} -gt 0 ] || { echo "usage: $0 \"probe args\"... -- variant.patch..." >&2; exit 2; }
declare -A dur

measure() {  # $1: column name; each duration is printed as soon as it is known, so a
  # call that runs out of time still shows what it measured
  for args in "${probes[@]}"; do
    out=$(NCU_SECTIONS="--section SpeedOfLight" NCU_TAIL=40 bash scripts/ncu_probe.sh "$args" 2>&1)
    d=$(awk '/ Duration /{print $NF $(NF-1); exit}' <<< "$out")
    # The throughputs tell a bound that moved (e.g. L2 requests of a gather) from noise.
    tp=$(awk '/SM Throughput|L1\/TEX Cache Throughput|L2 Cache Throughput|DRAM Throughput/{printf "%s=%s ", $1, $NF}' <<< "$out")
    dur["$1|$args"]="${d:-failed}"
    echo "ab: $1 | $args | ${d:-failed} | $tp"
  done
}

apply() {  # $1: patch, $2: -R to revert; git apply works outside a repository too
  if command -v git > /dev/null; then git apply ${2:-} "$1"; else patch -p1 ${2:-} --forward --quiet < "$1"; fi
}

measure base
for p in "${patches[@]}"; do
  name=$(basename "$p" .patch)
  if ! apply "$p"; then
    echo "$name: patch does not apply"; continue
  fi
  # Only the Python module the probes load: the test binaries would rebuild too otherwise.
  if cmake --build build -j 16 --target _C flashband_python_sources > "/tmp/ab_$name.log" 2>&1; then
    measure "$name"
  else
    echo "$name: build failed"; grep -E "error" "/tmp/ab_$name.log" | head -5
  fi
  apply "$p" -R
done
cmake --build build -j 16 --target _C flashband_python_sources > /dev/null 2>&1  # leave the baseline built

printf '%-40s %14s' probe base
for p in "${patches[@]}"; do printf ' %14s' "$(basename "$p" .patch)"; done
echo
for args in "${probes[@]}"; do
  printf '%-40s %14s' "$args" "${dur["base|$args"]}"
  for p in "${patches[@]}"; do printf ' %14s' "${dur["$(basename "$p" .patch)|$args"]:--}"; done
  echo
done
