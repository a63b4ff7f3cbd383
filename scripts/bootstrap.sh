#!/usr/bin/env bash
# Installs everything the build and tests need, so a fresh machine needs nothing else.
# Third-party headers land in deps/ (ignored) so they can travel to the GPU machine.
# Idempotent: each step is skipped when its output already exists.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
deps="$root/deps"
mkdir -p "$deps"

# Pinned versions: change them here only.
CUTLASS_VERSION=4.2.0.0
CUDNN_FRONTEND_VERSION=1.32.0
NANOBIND_VERSION=3.1.0
SCIKIT_BUILD_CORE_VERSION=0.11.6
NUMPY_VERSION=2.2.6
PYTEST_VERSION=8.4.2
HYPOTHESIS_VERSION=6.170.27

have_pkg() { dpkg -s "$1" >/dev/null 2>&1; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# Debian packages the C++ build uses (compilers and CUDA come with the image).
apt_pkgs=()
for p in cmake ninja-build libgtest-dev googletest libbenchmark-dev python3-venv; do
  have_pkg "$p" || apt_pkgs+=("$p")
done
if [ ${#apt_pkgs[@]} -gt 0 ] && command -v apt-get >/dev/null; then
  echo "bootstrap: apt-get install ${apt_pkgs[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${apt_pkgs[@]}" >/dev/null
fi

# DLPack header: unpacked from Debian's libdlpack-dev into deps/ so it travels with `carry`.
if [ ! -f "$deps/dlpack/include/dlpack/dlpack.h" ]; then
  tmp="$(mktemp -d)"
  (cd "$tmp" && apt-get download libdlpack-dev >/dev/null 2>&1) || { echo "bootstrap: apt-get download libdlpack-dev failed" >&2; exit 1; }
  dpkg -x "$tmp"/libdlpack-dev_*.deb "$tmp/x"
  mkdir -p "$deps/dlpack/include"
  cp -r "$tmp/x/usr/include/dlpack" "$deps/dlpack/include/"
  rm -rf "$tmp"
fi

# Python: a venv in deps/venv with pinned packages (nanobind for the bindings, numpy + pytest for
# tests, hypothesis for the property tests of bad input).
py="${FLASHBAND_PYTHON:-python3}"
if [ ! -x "$deps/venv/bin/python" ]; then
  "$py" -m venv "$deps/venv"
fi
if ! "$deps/venv/bin/python" -c "import nanobind, numpy, pytest, hypothesis, scikit_build_core" 2>/dev/null; then
  "$deps/venv/bin/python" -m pip install -q --disable-pip-version-check \
    "nanobind==$NANOBIND_VERSION" "numpy==$NUMPY_VERSION" "pytest==$PYTEST_VERSION" \
    "hypothesis==$HYPOTHESIS_VERSION" "scikit-build-core==$SCIKIT_BUILD_CORE_VERSION"
fi

# transformers integration tests (python/tests/test_transformers.py): torch and a pinned
# transformers in their own venv, deps/venv-hf (same Python as deps/venv, so build/python's
# module loads there). PyPI's torch wheel brings its CUDA libraries: ~5.6 GB and ~2.5 min on a
# fresh machine (measured 2026-12-07). FLASHBAND_TRANSFORMERS=0 skips it.
TORCH_VERSION=2.15.0
TRANSFORMERS_VERSION=5.25.0
hf_venv="$deps/venv-hf"
hf_pins="torch==$TORCH_VERSION transformers==$TRANSFORMERS_VERSION numpy==$NUMPY_VERSION pytest==$PYTEST_VERSION"
if [ "${FLASHBAND_TRANSFORMERS:-1}" != 0 ] && [ "$(cat "$hf_venv/.pins" 2>/dev/null)" != "$hf_pins" ]; then
  [ -x "$hf_venv/bin/python" ] || "$py" -m venv "$hf_venv"
  # shellcheck disable=SC2086  # the pins are separate words
  "$hf_venv/bin/python" -m pip install -q --disable-pip-version-check $hf_pins
  echo "$hf_pins" >"$hf_venv/.pins"
fi

# Header-only GPU dependencies, from pinned PyPI wheels, keeping only the headers.
fetch_headers() {  # name version wheel-subdir dest
  local name="$1" version="$2" sub="$3" dest="$4"
  [ -d "$dest" ] && return 0
  local tmp; tmp="$(mktemp -d)"
  "$deps/venv/bin/python" -m pip download -q --disable-pip-version-check --no-deps \
    --only-binary=:all: "$name==$version" -d "$tmp"
  (cd "$tmp" && "$deps/venv/bin/python" -m zipfile -e ./*.whl x)
  mkdir -p "$dest"
  cp -r "$tmp/x/$sub"/* "$dest/"
  rm -rf "$tmp"
}
fetch_headers nvidia-cutlass "$CUTLASS_VERSION" cutlass_library/source/include "$deps/cutlass/include"
fetch_headers nvidia-cudnn-frontend "$CUDNN_FRONTEND_VERSION" include "$deps/cudnn_frontend/include"
echo "bootstrap: ok ($deps)"
