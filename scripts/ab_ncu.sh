#!/usr/bin/env bash
# On the GPU machine after a device_check.sh build: A/B of source variants by Nsight
# Compute duration (clocks locked by ncu, so differences of ~1% are visible, unlike the
# benchmark's boost-clock runs). Each variant is a patch (`git diff` output) applied to the
# tree, rebuilt incrementally, probed, and reverted; the baseline is the tree as it is.
#   scripts/ab_ncu.sh "--seq 512" "--page 16" -- variants/a.patch variants/b.patch
# Prints one row per probe: the baseline's duration, then each variant's. A probe written
# "time:ARGS" is the whole call's time instead (measure_time below).
# A variant written env:NAME=VALUE is no patch but an environment setting for its probes (a
# runtime knob such as FLASHBAND_SM90_CAUSAL_MAX_ROWS=0): no rebuild, and never kept.
# With --keep first, the variants that win are then applied together (best first, skipping
# one that no longer applies), everything is rebuilt, and `device_check.sh gpu sanitize` runs
# on the result (FB_GPU_GROUPS / FB_SANITIZE_SKIP pass through), all in one device call.
# A variant wins when the geometric mean of its time ratios to the baseline is below
# FB_KEEP_GAIN (0.99) and no probe is slower than FB_KEEP_WORST (1.03): set the probes so
# that a variant's losses show, since one that helps some shapes and hurts others is not
# kept.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
keep=0
[ "${1:-}" = "--keep" ] && { keep=1; shift; }
probes=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do probes+=("$1"); shift; done
[ $# -gt 0 ] && shift
patches=("$@")
[ ${#probes[@]} -gt 0 ] || { echo "usage: $0 \"probe args\"... -- variant.patch..." >&2; exit 2; }
declare -A dur us
# Every result line also goes to $OUT/ab_ncu.txt on the GPU machine, which comes back even
# when the call runs out of time (stdout piped through tail would show nothing then).
say() {
  echo "$@"
  if [ -n "${OUT:-}" ]; then echo "$@" >> "$OUT/ab_ncu.txt"; fi
}

measure() {  # $1: column name; each duration is printed as soon as it is known, so a
  # call that runs out of time still shows what it measured
  for args in "${probes[@]}"; do
    if [ "${AB_TIME:-0}" = 1 ] || [[ "$args" == time:* ]]; then measure_time "$1" "$args"; continue; fi
    out=$(NCU_SECTIONS="--section SpeedOfLight" NCU_TAIL=40 bash scripts/ncu_probe.sh "$args" 2>&1)
    d=$(awk '/ Duration /{print $NF $(NF-1); exit}' <<< "$out")
    # The throughputs tell a bound that moved (e.g. L2 requests of a gather) from noise.
    tp=$(awk '/SM Throughput|L1\/TEX Cache Throughput|L2 Cache Throughput|DRAM Throughput/{printf "%s=%s ", $1, $NF}' <<< "$out")
    dur["$1|$args"]="${d:-failed}"
    us["$1|$args"]=$(awk '/ Duration /{v = $NF; if ($(NF-1) ~ /^ms/) v *= 1000; else if ($(NF-1) ~ /^s/) v *= 1e6; print v; exit}' <<< "$out")
    say "ab: $1 | $args | ${d:-failed} | $tp"
  done
}

# The do_bench median of the whole call (bench/probe.py --time) at the GPU's own clocks
# instead of ncu's kernel duration, for a variant that adds or removes a launch (the
# split-KV merge): every probe with AB_TIME=1, or one probe written "time:ARGS" beside ncu
# probes of the same builds (e.g. a kernel's ncu duration and the call it is part of).
# Run-to-run spread is ~1%, so put a control probe beside the others. $1: column, $2: probe.
measure_time() {
  local args=${2#time:}
  mod=$(dirname "$(dirname "$(find build -name '_C*.so' | head -1)")")
  t=$(PYTHONPATH="$root/$mod:$root/python" timeout 120 python3 bench/probe.py $args --time 2>&1 |
    awk '/^probe time/{print $3; exit}')
  dur["$1|$2"]="${t:-failed}${t:+us}"
  us["$1|$2"]="$t"
  say "ab: $1 | $2 | ${t:-failed}"
}

source "$root/scripts/build_sync.sh"
rebuild() {  # arguments for cmake --build; the tree's content decides, not its file times
  touch_changed_sources
  cmake --build build -j 16 "$@"
}

apply() {  # $1: patch, $2: -R to revert; git apply works outside a repository too
  if command -v git > /dev/null; then git apply ${2:-} "$1"; else patch -p1 ${2:-} --forward --quiet < "$1"; fi
}

applies() {  # $1: patch; whether it applies to the tree as it is now
  if command -v git > /dev/null; then git apply --check "$1" 2> /dev/null
  else patch -p1 --dry-run --forward --quiet < "$1" > /dev/null 2>&1; fi
}

variant_stamp=build/.ab_variant_built
# A fresh machine has no configured build/ (its first ab_ncu call otherwise says only that
# the build failed).
[ -f build/build.ninja ] || [ -f build/Makefile ] ||
  { say "no configured build/: run scripts/device_check.sh build first"; exit 1; }
# The baseline is the tree as it is: build/ may hold the last call's variant (AB_RESTORE=0).
rebuild --target _C flashband_python_sources > /tmp/ab_base.log 2>&1 ||
  { say "base: build failed"; grep -E "error" /tmp/ab_base.log | head -5; exit 1; }
measure base
for p in "${patches[@]}"; do
  if [[ "$p" == env:* ]]; then  # $p has no '/', so basename below gives it back unchanged
    setting=${p#env:}
    export "$setting"
    measure "$p"
    unset "${setting%%=*}"
    continue
  fi
  name=$(basename "$p" .patch)
  if ! apply "$p"; then
    say "$name: patch does not apply"; continue
  fi
  # Only the Python module the probes load: the test binaries would rebuild too otherwise.
  # The patch whose module build/ then holds is stamped after the sync and before the build,
  # so that scripts/apply_built_variant.sh can date its sources back to before its objects.
  touch_changed_sources
  sha1sum < "$p" | cut -d' ' -f1 > "$variant_stamp"
  if cmake --build build -j 16 --target _C flashband_python_sources > "/tmp/ab_$name.log" 2>&1; then
    measure "$name"
  else
    rm -f "$variant_stamp"
    say "$name: build failed"; grep -E "error" "/tmp/ab_$name.log" | head -5
  fi
  apply "$p" -R
done
# Leave the baseline built (--keep rebuilds everything below anyway), unless AB_RESTORE=0:
# a call that ends here, whose next call rebuilds anyway (ninja sees the patched files' new
# times), saves a full kernel rebuild; and the next call can keep the last variant's build
# (scripts/apply_built_variant.sh; any rebuild here or below voids its stamp).
[ "$keep" = 1 ] || [ "${AB_RESTORE:-1}" = 0 ] || rebuild --target _C flashband_python_sources > /dev/null 2>&1

printf '%-40s %14s' probe base
for p in "${patches[@]}"; do printf ' %14s' "$(basename "$p" .patch)"; done
echo
for args in "${probes[@]}"; do
  printf '%-40s %14s' "$args" "${dur["base|$args"]}"
  for p in "${patches[@]}"; do printf ' %14s' "${dur["$(basename "$p" .patch)|$args"]:--}"; done
  echo
done

[ "$keep" = 1 ] || exit 0
# Each variant's score: "gmean worst name", winners first.
scores=$(for p in "${patches[@]}"; do
  [[ "$p" == env:* ]] && continue
  name=$(basename "$p" .patch)
  for args in "${probes[@]}"; do echo "${us["base|$args"]:-} ${us["$name|$args"]:-}"; done |
    awk -v n="$name" -v p="$p" '$1 > 0 && $2 > 0 {s += log($2 / $1); if ($2 / $1 > w) w = $2 / $1; k++}
      END {if (k) printf "%.4f %.4f %s %s\n", exp(s / k), w, n, p; else printf "9 9 %s %s\n", n, p}'
done | sort -n)
echo "$scores" | awk '{printf "score: %-28s gmean %.3f worst %.3f\n", $3, $1, $2}'
kept=()
while read -r g w name p; do
  [ -n "$name" ] || continue
  awk -v g="$g" -v w="$w" -v G="${FB_KEEP_GAIN:-0.99}" -v W="${FB_KEEP_WORST:-1.03}" 'BEGIN {exit !(g < G && w <= W)}' || continue
  if applies "$p"; then apply "$p" && kept+=("$name"); else say "keep: $name no longer applies"; fi
done <<< "$scores"
say "kept: ${kept[*]:-none (testing the baseline)}"
rebuild > /tmp/ab_keep_build.log 2>&1 || { say "keep: build failed"; grep -E "error" /tmp/ab_keep_build.log | head -5; exit 1; }
bash scripts/device_check.sh gpu sanitize
