"""The PEP 517 backend of `pip install .`: scikit-build-core, plus the header-only build
requirements that this machine's build will use. The CUTLASS and cudnn-frontend wheels drag
in about 260 MB of dependencies (scipy, cuda-python, the CUTLASS DSL libraries), so they are
required only where CMake will compile the backend that needs them: nvcc is found and the
backend is not turned off (and, for cudnn, libcudnn exists). DLPack's header, from the small
apache-tvm-ffi wheel, is always required: the Python module needs it.

The pins live in cmake/flashband_deps.cmake, which finds the installed wheels at configure.
A guess here that disagrees with CMake ends in a configure error naming the package and the
option (FLASHBAND_WITH_CUDA/SM90/CUDNN=ON fetch the headers whatever this file guesses)."""

import ctypes.util
import glob
import os
import re
import shlex
import shutil
from pathlib import Path

from scikit_build_core import build as _skbuild
from scikit_build_core.build import (build_editable, build_sdist, build_wheel,  # noqa: F401
                                     get_requires_for_build_sdist,
                                     prepare_metadata_for_build_editable,
                                     prepare_metadata_for_build_wheel)

_DEPS_CMAKE = Path(__file__).resolve().parents[1] / "flashband_deps.cmake"


def _pin(name):
    text = _DEPS_CMAKE.read_text()
    return re.search(rf'set\(FLASHBAND_{name}_WHEEL "([^"]+)"\)', text).group(1)


def _option(name, config_settings, default="AUTO"):
    """The value CMake will see: the environment variable (pyproject passes it through),
    then -C cmake.define.NAME=..., then -DNAME=... in CMAKE_ARGS (scikit-build-core's order)."""
    value = os.environ.get(name, default)
    value = (config_settings or {}).get(f"cmake.define.{name}", value)
    for arg in shlex.split(os.environ.get("CMAKE_ARGS", "")):
        found = re.fullmatch(rf"-D{name}(?::\w+)?=(.*)", arg)
        if found:
            value = found.group(1)
    return value


def _is_off(value):
    return value.upper() in ("OFF", "0", "FALSE", "NO", "N")


def _nvcc():
    """Where CMake's check_language(CUDA) can find nvcc (a superset of its search)."""
    candidates = [os.environ.get("CUDACXX"), shutil.which("nvcc")]
    candidates += [os.path.join(os.environ[v], "bin", "nvcc")
                   for v in ("CUDA_PATH", "CUDA_HOME") if os.environ.get(v)]
    candidates.append("/usr/local/cuda/bin/nvcc")
    return next((c for c in candidates if c and os.access(c, os.X_OK)), None)


def _have_libcudnn(nvcc):
    if ctypes.util.find_library("cudnn"):
        return True
    root = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
    dirs = [os.path.join(root, "lib64"), os.path.join(root, "lib"), "/usr/local/cuda/lib64",
            "/usr/local/cuda/lib", "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/local/lib"]
    for var in ("LD_LIBRARY_PATH", "LIBRARY_PATH"):
        dirs += [d for d in os.environ.get(var, "").split(os.pathsep) if d]
    return any(glob.glob(os.path.join(d, "libcudnn.so*")) for d in dirs)


def header_requirements(config_settings=None):
    """The pinned header wheels this build needs (also used by scripts/test.sh's check)."""
    requires = [_pin("DLPACK")]
    cuda = _option("FLASHBAND_WITH_CUDA", config_settings)
    nvcc = None if _is_off(cuda) else _nvcc()
    if not (nvcc or cuda.upper() == "ON"):
        return requires
    archs = _option("FLASHBAND_CUDA_ARCHS", config_settings, "80;90a")
    sm90 = _option("FLASHBAND_WITH_SM90", config_settings)
    if sm90.upper() == "ON" or (not _is_off(sm90) and "90a" in archs.split(";")):
        requires.append(_pin("CUTLASS"))
    cudnn = _option("FLASHBAND_WITH_CUDNN", config_settings)
    if cudnn.upper() == "ON" or (not _is_off(cudnn) and nvcc and _have_libcudnn(nvcc)):
        requires.append(_pin("CUDNN_FRONTEND"))
    return requires


def get_requires_for_build_wheel(config_settings=None):
    return _skbuild.get_requires_for_build_wheel(config_settings) + header_requirements(config_settings)


def get_requires_for_build_editable(config_settings=None):
    return _skbuild.get_requires_for_build_editable(config_settings) + header_requirements(config_settings)
