#!/usr/bin/env bash
# What a new Python user does (issue 58), run by scripts/test.sh:
#   1. the tracked tree copied to a temp dir (no deps/, no build/), a fresh venv,
#      `FLASHBAND_WITH_CUDA=OFF pip install .` with build isolation (headers come from the
#      pinned wheels), then scripts/pip_smoke.py against the installed package;
#   2. where nvcc exists: a CUDA configure without the header packages must stop with an
#      error naming the missing package, and name the next one once the first is turned off.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
py="${FLASHBAND_PYTHON:-python3}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# The pins in cmake/flashband_deps.cmake (what pip installs) and scripts/bootstrap.sh (what
# deps/ holds) must agree.
for pair in "CUTLASS_VERSION:nvidia-cutlass" "CUDNN_FRONTEND_VERSION:nvidia-cudnn-frontend"; do
  version="$(sed -n "s/^${pair%%:*}=//p" "$root/scripts/bootstrap.sh")"
  grep -q "\"${pair#*:}==$version\"" "$root/cmake/flashband_deps.cmake" \
    || { echo "new-user check: bootstrap pins ${pair#*:} $version, cmake/flashband_deps.cmake differs" >&2; exit 1; }
done

start=$SECONDS
mkdir "$tmp/src"
# deps/ may be a symlink, which .gitignore's "/deps/" does not match: drop it by name.
(cd "$root" && git ls-files -co --exclude-standard -z | grep -zv '^deps\(/\|$\)' \
  | tar --null -T - --ignore-failed-read -cf - 2>/dev/null) | tar -xf - -C "$tmp/src"
"$py" -m venv "$tmp/venv"
(cd "$tmp/src" && FLASHBAND_WITH_CUDA=OFF "$tmp/venv/bin/python" -m pip install -q \
  --disable-pip-version-check . >"$tmp/pip.log" 2>&1) || { cat "$tmp/pip.log"; exit 1; }
(cd "$tmp" && "$tmp/venv/bin/python" "$root/scripts/pip_smoke.py")
echo "new-user check: cpu-only pip install + smoke in $((SECONDS - start)) s"

nvcc="$(command -v nvcc || true)"
[ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc
if [ -z "$nvcc" ]; then
  echo "new-user check: SKIPPED the CUDA configure check (no nvcc on this machine)"
  exit 0
fi
start=$SECONDS
mkdir "$tmp/no-deps"
configure() {  # extra CMake args; prints the output, returns CMake's status
  cmake -S "$root" -B "$tmp/cuda-build" -G Ninja -DCMAKE_CUDA_COMPILER="$nvcc" \
    -DFLASHBAND_WITH_CUDA=ON -DFLASHBAND_CUDA_ARCHS="80;90a" -DFLASHBAND_DEPS_DIR="$tmp/no-deps" \
    -DFLASHBAND_BUILD_TESTS=OFF -DFLASHBAND_BUILD_TOOLS=OFF \
    -DPython_EXECUTABLE="$tmp/venv/bin/python" "$@" 2>&1
}
expect_error() {  # package-named-in-the-error, extra CMake args
  local package="$1"; shift
  if out="$(configure "$@")"; then
    echo "$out" >&2; echo "new-user check: configure without $package succeeded" >&2; exit 1
  fi
  # The error itself (from "CMake Error" to its call stack), joined across CMake's line wraps.
  local error
  error="$(sed -n '/CMake Error/,/Call Stack/p' <<<"$out" | tr -s ' \n' ' ')"
  grep -q "$package" <<<"$error" \
    || { echo "$out" >&2; echo "new-user check: the configure error does not name $package" >&2; exit 1; }
  echo "new-user check: CUDA configure without $package fails naming it"
}
expect_error "nvidia-cutlass=="
# With sm90 off, cudnn is next: an error naming cudnn-frontend where libcudnn exists, else a
# summary line saying libcudnn is missing.
if out="$(configure -DFLASHBAND_WITH_SM90=OFF)"; then
  grep -q "cudnn  NOT built: libcudnn" <<<"$out" \
    || { echo "$out" >&2; echo "new-user check: cudnn neither built nor explained" >&2; exit 1; }
  echo "new-user check: no libcudnn here; the summary says so"
else
  expect_error "nvidia-cudnn-frontend==" -DFLASHBAND_WITH_SM90=OFF
fi
out="$(configure -DFLASHBAND_WITH_SM90=OFF -DFLASHBAND_WITH_CUDNN=OFF)" || { echo "$out" >&2; exit 1; }
grep -q "sm90   NOT built: FLASHBAND_WITH_SM90=OFF" <<<"$out" \
  || { echo "$out" >&2; echo "new-user check: the summary does not say why sm90 is out" >&2; exit 1; }
echo "new-user check: CUDA configure checks in $((SECONDS - start)) s"
