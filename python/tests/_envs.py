"""Where a test runs: an array framework, a device and a flashband backend. The same test
body runs on NumPy arrays with the cpu backend and on torch CUDA tensors with every GPU
backend that flashband.supports() reports for the problem."""

import importlib.util

import numpy as np
import pytest

import flashband

from _reference import attention_np, attention_torch


def _torch():
    if importlib.util.find_spec("torch") is None:
        return None
    import torch
    return torch


class Env:
    def __init__(self, framework, device, backend, dtypes):
        self.framework = framework
        self.device = device
        self.backend = backend
        self.dtypes = dtypes

    @property
    def id(self):
        return f"{self.framework}-{self.device}-{self.backend}"

    # --- arrays -------------------------------------------------------------------------
    def array(self, x, dtype):
        """A framework array of `dtype` from a NumPy float32 array."""
        if self.framework == "numpy":
            return np.ascontiguousarray(x).astype(dtype)
        torch = _torch()
        return torch.from_numpy(np.ascontiguousarray(x)).to(device=self.device,
                                                            dtype=getattr(torch, dtype))

    def index(self, a):
        """An int32 index array as a caller would hold it (on the device for torch CUDA)."""
        a = np.asarray(a, dtype=np.int32)
        if self.framework == "numpy":
            return a
        return _torch().from_numpy(a).to(self.device)

    def to64(self, x):
        if self.framework == "numpy":
            return np.asarray(x, dtype=np.float64)
        return x.detach().to("cpu", dtype=_torch().float64).numpy()

    def nan(self, shape, dtype):
        """An output buffer filled with NaN, so an unwritten element fails."""
        if self.framework == "numpy":
            return np.full(shape, np.nan, dtype=dtype)
        torch = _torch()
        return torch.full(shape, float("nan"), dtype=getattr(torch, dtype), device=self.device)

    def workspace(self, nbytes):
        if self.framework == "numpy":
            return np.empty(nbytes, dtype=np.uint8)
        return _torch().empty(nbytes, dtype=_torch().uint8, device=self.device)

    def is_native(self, x):
        """x is an array of this env's framework on its device."""
        if self.framework == "numpy":
            return isinstance(x, np.ndarray)
        return isinstance(x, _torch().Tensor) and x.device.type == self.device

    def sync(self):
        if self.device == "cuda":
            _torch().cuda.synchronize()

    # --- the oracle ---------------------------------------------------------------------
    def reference(self, q, k, v, **kw):
        """float64 reference of NHD float64 NumPy inputs: NumPy on the host for host envs,
        torch float64 on the GPU for CUDA envs."""
        if self.device != "cuda":
            return attention_np(q, k, v, **kw)
        torch = _torch()
        t = [torch.from_numpy(x).to(self.device) for x in (q, k, v)]
        o, lse = attention_torch(*t, **kw)
        return o.cpu().numpy(), lse.cpu().numpy()

    def require(self, **problem):
        """Skips unless flashband says this env's backend runs the problem."""
        answer = flashband.supports(backend=self.backend, device=self.device, **problem)
        if not answer:
            pytest.skip(f"{self.backend}: {answer.reason}")


def all_envs():
    """Every env, with a skip mark where this machine lacks the framework or the GPU."""
    # 'auto' on host arrays must pick cpu: one dtype is enough to show that it does.
    envs = [pytest.param(Env("numpy", "cpu", "cpu", ("float32", "float16")), id="numpy-cpu-cpu"),
            pytest.param(Env("numpy", "cpu", "auto", ("float16",)), id="numpy-cpu-auto")]
    torch = _torch()
    no_torch = pytest.mark.skip(reason="torch is not installed")
    no_cuda = pytest.mark.skip(reason="no CUDA device")
    cpu_marks = [] if torch else [no_torch]
    envs.append(pytest.param(Env("torch", "cpu", "cpu", ("float32", "bfloat16")),
                             id="torch-cpu-cpu", marks=cpu_marks))
    cuda_marks = [no_torch] if not torch else ([] if torch.cuda.is_available() else [no_cuda])
    for b in ("auto", "sm80", "sm90", "cudnn"):
        envs.append(pytest.param(Env("torch", "cuda", b, ("float16", "bfloat16")),
                                 id=f"torch-cuda-{b}", marks=cuda_marks))
    return envs


class DLPackOnly:
    """An array flashband knows only through DLPack (neither a torch, a CuPy nor a NumPy
    type, and without shape or dtype attributes), as another framework's may be: a wrapper
    puts a plan's arrays and its runs' scratch together in such a float workspace (no int
    workspace of its own), and plans on the legacy default stream."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, *args, **kwargs):
        return self._array.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()

