#!/usr/bin/env bash
# One call on the GPU machine: build (CUDA, 16 cores), unit tests, GPU tests against the fp64
# oracle, compute-sanitizer on a subset, the Python tests with torch, optionally the
# benchmark; logs go to $OUT, a short summary table is printed last.
# Usage: scripts/device_check.sh [build] [unit] [gpu] [sanitize] [python] [bench] [quickbench]
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
OUT="${OUT:-$root/out}"
mkdir -p "$OUT"
# Logs gather in one archive ($OUT/logs.tgz): the GPU machine returns at most 8 files.
LOG=$(mktemp -d)
steps="${*:-build unit gpu sanitize python}"
declare -a summary
# Each line is printed as it comes too, so a call cut off at its limit still shows them.
note() { summary+=("$(printf '%-10s %-8s %s' "$1" "$2" "$3")"); echo "${summary[-1]}"; }
has() { [[ " $steps " == *" $1 "* ]]; }
export PYTHONUNBUFFERED=1

# Prefer the cuDNN that PyTorch loads: two different libcudnn.so.9 in one Python process
# (torch's and a system one) can crash, and BENCH.md's peers use torch's.
d=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
cudnn_lib=""
[ -n "$d" ] && cudnn_lib=$(ls "$d"/libcudnn.so.9 "$d"/libcudnn.so* 2>/dev/null | head -1)
[ -z "$cudnn_lib" ] && cudnn_lib=$(ldconfig -p 2>/dev/null | awk '/libcudnn\.so /{print $NF; exit}')
echo "cudnn library: ${cudnn_lib:-none}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader || true

source "$root/scripts/build_sync.sh"
if has build; then
  # Nothing can be downloaded on the GPU machine: the third-party headers come from deps/,
  # filled by scripts/bootstrap.sh on the machine the tree is copied from and carried with
  # the call. A new checkout has none; stop before minutes of a build that cannot succeed.
  needed=(deps/cutlass deps/cudnn_frontend deps/dlpack)
  missing=()
  for dep in "${needed[@]}"; do [ -d "$dep" ] || missing+=("$dep"); done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "device_check: missing ${missing[*]}: run scripts/bootstrap.sh first and carry ${needed[*]}" >&2
    exit 3
  fi
  start=$(date +%s)
  touch_changed_sources
  extra=()
  [ -n "$cudnn_lib" ] && extra+=("-DFLASHBAND_CUDNN_LIB=$cudnn_lib")
  cmake -S . -B build -G Ninja -DFLASHBAND_CUDA_ARCHS=90a -DFLASHBAND_BUILD_PYTHON=ON \
    -DPython_EXECUTABLE="$(command -v python3)" "${extra[@]}" ${FB_CMAKE_EXTRA:-} >"$LOG/configure.log" 2>&1
  if cmake --build build -j 16 >"$LOG/build.log" 2>&1; then
    note build ok "$(( $(date +%s) - start ))s"
  else
    note build FAILED "see build.log"; grep -E "error|FAILED" "$LOG/build.log" | head -40
  fi
fi
if has unit; then
  (cd build && ctest -j 16 -E "^gpu[.]" --output-on-failure >"$LOG/unit.log" 2>&1) \
    && note unit ok "$(grep -o '[0-9]* tests passed[^,]*' "$LOG/unit.log" | head -1)" \
    || { note unit FAILED "$(grep -E 'tests passed' "$LOG/unit.log")"; grep -A3 "FAILED\|Failure" "$LOG/unit.log" | head -40; }
fi
if has gpu && ! has unit; then
  # The planners' host tests (no GPU, seconds): a GPU group's filter reaches only
  # flashband_gpu_tests, and a change of a tile rule breaks these first (fiftieth session).
  for t in flashband_sm90_host_tests flashband_sm80_host_tests flashband_sm90_dispatch_tests; do
    [ -x "build/tests/gpu/$t" ] || continue
    if timeout 120 "./build/tests/gpu/$t" --gtest_brief=1 >"$LOG/host_$t.log" 2>&1; then
      note host ok "$t: $(grep -E '^\[  PASSED' "$LOG/host_$t.log")"
    else
      note host FAILED "$t"; grep -E "^\[  FAILED|Failure" "$LOG/host_$t.log" | head -20
    fi
  done
fi
if has gpu; then
  # One run per backend group, each with its own time limit, so a hang in one backend's
  # kernels cannot take the others' results with it. The cudnn group builds a cuDNN graph
  # per case (it outgrew 150 s in the thirtieth session). Full gtest output, so that a
  # group that runs out of time shows the case it was in.
  for group in ${FB_GPU_GROUPS:-"sm80:-*sm90*:*cudnn*:200" "cudnn:*cudnn*:400" "sm90:*sm90*:150"}; do
    name=${group%%:*}; rest=${group#*:}; filter=${rest%:*}; limit=${rest##*:}
    start=$(date +%s)
    if timeout "$limit" ./build/tests/gpu/flashband_gpu_tests --gtest_filter="$filter" \
        >"$LOG/gpu_$name.log" 2>&1; then
      note "gpu/$name" ok "$(grep -E '^\[  PASSED' "$LOG/gpu_$name.log") $(( $(date +%s) - start ))s"
    else
      rc=$?
      note "gpu/$name" FAILED "rc=$rc $(grep -cE '^\[  FAILED' "$LOG/gpu_$name.log") failed; $(grep -E '^\[  PASSED' "$LOG/gpu_$name.log"); $(( $(date +%s) - start ))s"
      grep -E "^\[  FAILED|Failure|exception|error" "$LOG/gpu_$name.log" | head -40
      [ "$rc" = 124 ] && echo "gpu/$name: out of time after $(grep -cE '^\[       OK' "$LOG/gpu_$name.log") passed, in $(grep -E '^\[ RUN' "$LOG/gpu_$name.log" | tail -1)"
    fi
  done
fi
if has sanitize; then
  filter=$(cat tests/gpu/sanitizer_subset 2>/dev/null || echo "*Small*")
  for tool in memcheck racecheck; do
    # cuDNN's own engine kernels report shared-memory hazards under racecheck (seen on 9.19);
    # they are not ours to fix, so racecheck covers flashband's kernels only.
    skip="${FB_SANITIZE_SKIP:-}"
    [ "$tool" = racecheck ] && skip="${skip:+$skip:}*cudnn*"
    f="$filter${skip:+-$skip}"
    if timeout 180 compute-sanitizer --tool $tool --error-exitcode 3 ./build/tests/gpu/flashband_gpu_tests \
        --gtest_filter="$f" --gtest_brief=1 >"$LOG/sanitize_$tool.log" 2>&1; then
      note "$tool" ok "$(grep -E 'ERROR SUMMARY' "$LOG/sanitize_$tool.log" | tail -1)"
    else
      note "$tool" FAILED "$(grep -E 'ERROR SUMMARY' "$LOG/sanitize_$tool.log" | tail -1)"; tail -30 "$LOG/sanitize_$tool.log"
    fi
  done
fi
if has smoke; then
  mod=$(dirname "$(dirname "$(find build -name '_C*.so' | head -1)")" 2>/dev/null)
  if PYTHONPATH="$root/$mod:$root/python" timeout 120 python3 scripts/py_smoke.py >"$LOG/smoke.log" 2>&1; then
    note smoke ok ""
  else
    note smoke FAILED "$(tail -2 "$LOG/smoke.log" | tr '\n' ' ')"; tail -30 "$LOG/smoke.log"
    PYTHONPATH="$root/$mod:$root/python" timeout 120 cuda-gdb -batch -ex run -ex bt --args python3 scripts/py_smoke.py 2>&1 | tail -40
  fi
fi
if has python; then
  mod=$(dirname "$(dirname "$(find build -name '_C*.so' | head -1)")" 2>/dev/null)
  if PYTHONPATH="$root/$mod:$root/python" timeout "${FB_PYTEST_LIMIT:-240}" python3 -m pytest -q ${FB_PYTEST_ARGS:--x} python/tests >"$LOG/pytest.log" 2>&1; then
    note python ok "$(tail -1 "$LOG/pytest.log")"
  else
    note python FAILED "$(tail -1 "$LOG/pytest.log")"; tail -40 "$LOG/pytest.log"
  fi
fi
if has bench || has quickbench; then
  mod=$(dirname "$(dirname "$(find build -name '_C*.so' | head -1)")" 2>/dev/null)
  q=""; has quickbench && q="--quick"
  if PYTHONPATH="$root/$mod:$root/python" timeout "${FB_BENCH_LIMIT:-540}" python3 bench/run.py $q ${FB_BENCH_ARGS:-} --out "$OUT/bench" >"$LOG/bench.log" 2>&1; then
    note bench ok "see benchmarks.md"
  else
    note bench FAILED "$(tail -3 "$LOG/bench.log" | tr '\n' ' ')"
  fi
fi
tar czf "$OUT/logs.tgz" -C "$LOG" . 2>/dev/null
echo
echo "==== summary ===="
printf '%s\n' "${summary[@]}"
