#!/usr/bin/env bash
# Bootstraps (once) and builds flashband into build/. Extra arguments go to CMake's configure.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/bootstrap.sh
jobs="${FLASHBAND_JOBS:-$(nproc)}"
cmake -S . -B build -G Ninja "$@" >build.configure.log 2>&1 || { cat build.configure.log; exit 1; }
cmake --build build -j "$jobs"
