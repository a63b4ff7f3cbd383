#!/usr/bin/env bash
# Issue 58 on the GPU machine, where nothing can be downloaded: `pip install
# --no-build-isolation .` the way an offline user with CUDA does it (the build tools from
# deps/pip_tools, filled here by `scripts/pip_gpu_check.sh --prepare` and carried with the
# call; the headers from deps/), then scripts/pip_smoke.py and the given Python tests
# against site-packages. Usage: scripts/pip_gpu_check.sh [--prepare] [pytest args...]
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="$root/deps/pip_tools"
if [ "${1:-}" = --prepare ]; then
  site=$(ls -d "$root"/deps/venv/lib/python3*/site-packages)
  rm -rf "$tools" && mkdir -p "$tools"
  for p in scikit_build_core pathspec packaging nanobind; do cp -r "$site/$p" "$tools/"; done
  du -sh "$tools"; exit 0
fi
[ -d "$tools" ] || { echo "pip_gpu_check: no deps/pip_tools: run it with --prepare here and carry it" >&2; exit 3; }
OUT="${OUT:-$root/out}"; mkdir -p "$OUT"
work="${FB_PIP_WORK:-$(mktemp -d)}"  # FB_PIP_WORK keeps the venv for later commands
# The machine's torch stays visible (system site-packages); flashband goes into the venv.
python3 -m venv --system-site-packages "$work/venv"
py="$work/venv/bin/python"
d=$("$py" -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
cudnn=$(ls "$d"/libcudnn.so.9 2>/dev/null | head -1)
start=$SECONDS
if ! (cd "$root" && PYTHONPATH="$tools" CMAKE_ARGS="-DFLASHBAND_CUDA_ARCHS=90a ${cudnn:+-DFLASHBAND_CUDNN_LIB=$cudnn}" \
      "$py" -m pip install -v --no-build-isolation --no-deps --disable-pip-version-check . >"$OUT/pip_install.log" 2>&1); then
  tail -40 "$OUT/pip_install.log"; echo "pip_gpu_check: pip install FAILED"; exit 1
fi
echo "pip_gpu_check: pip install --no-build-isolation in $((SECONDS - start)) s"
grep -E "flashband backends|-- flashband" "$OUT/pip_install.log" | head -8
(cd "$work" && "$py" "$root/scripts/pip_smoke.py") || { echo "pip_gpu_check: smoke FAILED"; exit 1; }
"$py" -c "import flashband; print('build_info:', flashband.build_info())"
[ $# -gt 0 ] && (cd "$root" && "$py" -m pytest "$@")
