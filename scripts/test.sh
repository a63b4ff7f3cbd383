#!/usr/bin/env bash
# The test command: check that the prepared variants still apply, build, run every C++ test
# (GPU tests skip without a GPU), a new user's `pip install .` (scripts/new_user_check.sh),
# the Python package's tests on the cpu backend, the host tests under ASan/UBSan with the
# fuzz harness, and the transformers integration's tests in deps/venv-hf.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/check_variants.sh
bash scripts/build.sh -DFLASHBAND_BUILD_PYTHON=ON -DPython_EXECUTABLE="$root/deps/venv/bin/python"
ctest --test-dir build --output-on-failure -j "${FLASHBAND_JOBS:-$(nproc)}"
bash scripts/new_user_check.sh
if [ -d python/tests ]; then
  PYTHONPATH="$root/build/python:$root/python" "$root/deps/venv/bin/python" -m pytest -q python/tests
fi
# Sanitizers and fuzzing (issue 63), where clang is installed (FLASHBAND_SANITIZERS=0 skips):
# the host library and its unit tests built with ASan and UBSan, then the libFuzzer harness of
# validation and plan for FLASHBAND_FUZZ_SECONDS (default 60) from its checked-in corpus,
# printing how many inputs it executed.
if [ "${FLASHBAND_SANITIZERS:-1}" != 0 ] && command -v clang++ >/dev/null 2>&1; then
  cmake -S . -B build-asan -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFLASHBAND_WITH_CUDA=OFF -DFLASHBAND_BUILD_TOOLS=OFF \
    -DFLASHBAND_FUZZ=ON -DFLASHBAND_FUZZ_SECONDS="${FLASHBAND_FUZZ_SECONDS:-60}" \
    -DFLASHBAND_FUZZ_SEED="${FLASHBAND_FUZZ_SEED:-1}" >/dev/null
  cmake --build build-asan -j "${FLASHBAND_JOBS:-$(nproc)}"
  ctest --test-dir build-asan --output-on-failure -j "${FLASHBAND_JOBS:-$(nproc)}" -E "^(gpu|install|fuzz)[.]"
  # On a failure the sanitizer's report and the input (Base64) are printed; the fixed seed
  # (FLASHBAND_FUZZ_SEED, default 1; 0 is random) reproduces the run.
  if ! ctest --test-dir build-asan --output-on-failure -R "^fuzz[.]" -V >build-asan/fuzz.log 2>&1; then
    grep -v -E "^[0-9]+: (#[0-9]+\s|\s*NEW_FUNC)" build-asan/fuzz.log | tail -n 40
    echo "fuzz.api failed: its crash input is build-asan/tests/fuzz/crash-* (or leak-/timeout-/oom-)" >&2
    exit 1
  fi
  grep -E "^[0-9]+: (Done [0-9]+ runs|stat::number_of_executed_units)" build-asan/fuzz.log
fi
# flashband under transformers' models (bootstrap's deps/venv-hf: torch + pinned transformers),
# and the tests that need torch's fp8 dtypes (fp8 attention's q, which NumPy holds only with
# ml_dtypes)
if [ -x "$root/deps/venv-hf/bin/python" ]; then
  PYTHONPATH="$root/build/python:$root/python" "$root/deps/venv-hf/bin/python" -m pytest -q \
    -W ignore::FutureWarning python/tests/test_transformers.py python/tests/test_distributed.py \
    python/tests/test_fp8_attention.py
fi
