"""What this build of flashband was compiled with, and a warning at import when this
machine's GPU could run a backend the build left out (a cpu-only wheel on an H100, say)."""

import ctypes
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence

from . import _C

# Which GPUs each backend runs on (compute capability as major * 10 + minor). The sm80 and
# cudnn kernels are compiled as sm_80 and sm_90a machine code, so they run on 8.x and 9.0.
_RUNS_ON: Dict[str, Callable[[int], bool]] = {
    "sm80": lambda cc: 80 <= cc < 100,
    "sm90": lambda cc: cc == 90,
    "cudnn": lambda cc: 80 <= cc < 100,
}
# What a build needs for each backend (python/README.md, "Install", tells how).
_NEEDS: Dict[str, str] = {
    "sm80": "the CUDA toolkit (nvcc) at build time",
    "sm90": "the CUDA toolkit, 90a in FLASHBAND_CUDA_ARCHS and the CUTLASS headers at build time",
    "cudnn": "the CUDA toolkit, cuDNN 9 and the cudnn-frontend headers at build time",
}


def build_info() -> Dict[str, Any]:
    """The version, the backends built, and the CUDA toolkit, cuDNN and CUDA architectures
    this build was compiled against (None where it was built without them)."""
    return {"version": _C.__version__, "backends": tuple(_C.built_backends),
            "cuda": _C.cuda_version or None, "cudnn": _C.cudnn_version or None,
            "cuda_archs": _C.cuda_archs if _C.cuda_version else None}


def gpu_compute_capabilities() -> List[int]:
    """This machine's GPUs as major * 10 + minor, read through NVML: unlike the CUDA driver
    API it creates no CUDA context, so importing flashband stays safe before a fork. Empty
    where there is no NVIDIA driver."""
    try:
        nvml = ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return []
    if nvml.nvmlInit_v2() != 0:
        return []
    try:
        count = ctypes.c_uint(0)
        if nvml.nvmlDeviceGetCount_v2(ctypes.byref(count)) != 0:
            return []
        found = []
        for index in range(count.value):
            handle = ctypes.c_void_p()
            major, minor = ctypes.c_int(0), ctypes.c_int(0)
            if (nvml.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(handle)) == 0 and
                    nvml.nvmlDeviceGetCudaComputeCapability(
                        handle, ctypes.byref(major), ctypes.byref(minor)) == 0):
                found.append(major.value * 10 + minor.value)
        return found
    finally:
        nvml.nvmlShutdown()


def missing_backends_message(built: Sequence[str], gpus: Sequence[int]) -> Optional[str]:
    """Names each backend that a GPU in `gpus` could run but `built` lacks; None when none."""
    lines = []
    for backend, runs_on in _RUNS_ON.items():
        able = sorted({cc for cc in gpus if runs_on(cc)})
        if backend not in built and able:
            archs = ", ".join(f"{cc // 10}.{cc % 10}" for cc in able)
            lines.append(f"  {backend}: runs on this machine's GPU (compute capability {archs}); "
                         f"needs {_NEEDS[backend]}")
    if not lines:
        return None
    return ("flashband was built without backends this machine's GPU could run "
            f"(built: {', '.join(built)}):\n" + "\n".join(lines) +
            "\nReinstall on a machine with what they need (python/README.md, 'Install'); "
            "flashband.build_info() shows what this build has.")


_warned = False


def warn_missing_backends(gpus: Optional[Sequence[int]] = None) -> None:
    """Warns (once per process) when this build lacks a backend this machine's GPU could run."""
    global _warned
    if _warned:
        return
    _warned = True
    message = missing_backends_message(
        tuple(_C.built_backends), gpu_compute_capabilities() if gpus is None else gpus)
    if message:
        warnings.warn(message, UserWarning, stacklevel=2)
