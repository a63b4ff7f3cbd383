#!/usr/bin/env bash
# The test command: check that the prepared variants still apply, build, run every C++ test
# (GPU tests skip without a GPU), then the Python package's tests on the cpu backend.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/check_variants.sh
bash scripts/build.sh -DFLASHBAND_BUILD_PYTHON=ON -DPython_EXECUTABLE="$root/deps/venv/bin/python"
ctest --test-dir build --output-on-failure -j "${FLASHBAND_JOBS:-$(nproc)}"
if [ -d python/tests ]; then
  PYTHONPATH="$root/build/python:$root/python" "$root/deps/venv/bin/python" -m pytest -q python/tests
fi
# flashband under transformers' models (bootstrap's deps/venv-hf: torch + pinned transformers)
if [ -x "$root/deps/venv-hf/bin/python" ]; then
  PYTHONPATH="$root/build/python:$root/python" "$root/deps/venv-hf/bin/python" -m pytest -q \
    -W ignore::FutureWarning python/tests/test_transformers.py
fi
