"""Everything that depends on the array framework (torch, NumPy, CuPy) lives here.

The native module takes any DLPack array without copying; what it cannot do is allocate an
output in the caller's framework, find the caller's current CUDA stream, or copy an index
array to the host. Those few operations are dispatched on the array's type below; torch and
CuPy are never imported here, only used when the caller's array comes from them.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any, Tuple

import numpy as np

from .errors import InvalidArgumentError, UnsupportedError

_DTYPE_ALIASES = {
    "float16": "float16", "fp16": "float16", "half": "float16", "f16": "float16",
    "bfloat16": "bfloat16", "bf16": "bfloat16",
    "float32": "float32", "fp32": "float32", "float": "float32", "f32": "float32",
}

# fp8 K/V storage (issue 65): read by flashband with per-tensor scales, never written.
FP8_DTYPES = ("float8_e4m3fn", "float8_e5m2")
# fp8 attention's q (issue 60, SPEC.md "fp8 attention"): e4m3 only, with e4m3 K/V.
FP8_Q_DTYPES = ("float8_e4m3fn",)
_FP8_ALIASES = {"float8_e4m3fn": "float8_e4m3fn", "fp8_e4m3": "float8_e4m3fn", "e4m3": "float8_e4m3fn",
                "float8_e5m2": "float8_e5m2", "fp8_e5m2": "float8_e5m2", "e5m2": "float8_e5m2"}


def kind(x: Any) -> str:
    """'torch', 'numpy', 'cupy' or 'other' (any other DLPack producer)."""
    module = type(x).__module__
    for name in ("torch", "numpy", "cupy"):
        if module == name or module.startswith(name + "."):
            return name
    return "other"


def _torch():
    return sys.modules["torch"]  # imported: the caller handed us a torch tensor


def _cupy():
    return sys.modules["cupy"]


def native(x: Any) -> Any:
    """What to hand the native module for x (which converts any DLPack object).

    torch tensors go as a capsule from torch.utils.dlpack.to_dlpack, which exports without
    synchronising (what the array API's stream=-1 asks of __dlpack__): flashband already
    runs on the caller's current stream, and torch's default export (stream=None) would make
    the legacy default stream wait on that stream every call -- an extra event per tensor,
    and an error inside a CUDA graph capture. It also costs a tenth of Tensor.__dlpack__,
    whose Python-level checks took ~2 us a tensor (plan() hands over up to three, run()
    five). Tensors that require grad are detached first (DLPack refuses them; flashband has
    no backward)."""
    if x is None or kind(x) != "torch":
        return x
    if x.requires_grad:
        x = x.detach()
    return _torch().utils.dlpack.to_dlpack(x)


def dtype_name(x: Any) -> str:
    """The array's dtype as 'float16', 'bfloat16', 'float32', 'int32', ..."""
    if kind(x) == "torch":
        return str(x.dtype).removeprefix("torch.")
    return np.dtype(x.dtype).name


def canonical_dtype(spec: Any, what: str, fp8: Tuple[str, ...] = ()) -> str:
    """A dtype given as a string, a torch dtype or a NumPy dtype -> 'float16' etc.; the fp8
    names in `fp8` (torch's, or ml_dtypes') are taken too: FP8_DTYPES for K/V,
    FP8_Q_DTYPES for q (fp8 attention)."""
    if isinstance(spec, str):
        name = spec.removeprefix("torch.")
    elif type(spec).__module__.startswith("torch"):
        name = str(spec).removeprefix("torch.")
    else:
        try:
            name = np.dtype(spec).name
        except TypeError:
            raise InvalidArgumentError(f"{what}: {spec!r} is not a dtype") from None
    name = _FP8_ALIASES.get(name, name)
    if name in fp8:
        return name
    if name not in _DTYPE_ALIASES:
        allowed = ", ".join(("float16", "bfloat16", "float32") + fp8)
        note = ""
        if name in FP8_DTYPES:
            note = (" (fp8 attention takes float8_e4m3fn q with float8_e4m3fn K/V; an fp8 KV cache with "
                    "16-bit q takes kv_data_type)")
        raise InvalidArgumentError(f"{what}: {name} is not one of {allowed}{note}")
    return _DTYPE_ALIASES[name]


def native_and_format(x: Any) -> Tuple[Any, "str | None"]:
    """q, K or V for the native module, and the name of its fp8 format (None for 16/32-bit
    arrays): an fp8 array goes as its uint8 bytes, a view, since NumPy (ml_dtypes) cannot
    export fp8 through DLPack and not every torch can."""
    name = dtype_name(x) if hasattr(x, "dtype") else ""
    if name not in FP8_DTYPES:
        return native(x), None
    if kind(x) == "torch":
        return native(x.view(_torch().uint8)), name
    return x.view(np.uint8), name


def fp8_numpy_note() -> str:
    """What a NumPy caller needs for fp8 arrays (an fp8 cache, fp8 attention's q): ml_dtypes,
    whose float8 dtypes flashband reads without a copy."""
    try:
        import ml_dtypes  # noqa: F401  (optional: only NumPy callers with fp8 arrays need it)
    except ImportError:
        return ("; an fp8 array (an fp8 cache, fp8 attention's q) in NumPy needs ml_dtypes (pip install "
                "ml_dtypes), whose float8_e4m3fn / float8_e5m2 arrays flashband reads")
    return "; an fp8 array in NumPy is an ml_dtypes.float8_e4m3fn or float8_e5m2 array"


def device_of(x: Any) -> Tuple[str, int]:
    """('cpu', 0) or ('cuda', index)."""
    k = kind(x)
    if k == "torch":
        dev = x.device
        if dev.type == "cuda":
            return "cuda", dev.index if dev.index is not None else _torch().cuda.current_device()
        return dev.type, 0
    if k == "cupy":
        return "cuda", int(x.device.id)
    if k == "numpy":
        return "cpu", 0
    dev_type, dev_id = x.__dlpack_device__()
    return ("cuda" if int(dev_type) == 2 else "cpu"), int(dev_id)


def current_stream(x: Any) -> int:
    """The caller's current CUDA stream on x's device, as an int; 0 for host arrays."""
    k = kind(x)
    if k == "torch" and x.device.type == "cuda":
        return int(_torch().cuda.current_stream(x.device).cuda_stream)
    if k == "cupy":
        return int(_cupy().cuda.get_current_stream().ptr)
    return 0


def device_guard(x: Any):
    """Makes x's GPU the current device for the duration of a call (torch and CuPy)."""
    k = kind(x)
    if k == "torch" and x.device.type == "cuda":
        torch = _torch()
        if x.device.index is not None and x.device.index != torch.cuda.current_device():
            return torch.cuda.device(x.device)
    elif k == "cupy":
        return x.device
    return contextlib.nullcontext()


def empty_like(x: Any) -> Any:
    k = kind(x)
    if k == "torch":
        return _torch().empty_like(x)
    if k == "cupy":
        return _cupy().empty_like(x)
    if k == "numpy":
        return np.empty_like(x)
    raise UnsupportedError(
        f"out: cannot allocate an output like a {type(x).__name__}; pass out= explicitly")


def empty(like: Any, shape: Tuple[int, ...], dtype: str) -> Any:
    """An uninitialised array of `dtype` ('float32', 'uint8', ...) in like's framework/device."""
    k = kind(like)
    if k == "torch":
        torch = _torch()
        return torch.empty(shape, dtype=getattr(torch, dtype), device=like.device)
    if k == "cupy":
        cp = _cupy()
        with like.device:
            return cp.empty(shape, dtype=dtype)
    if k == "numpy":
        return np.empty(shape, dtype=_numpy_dtype(dtype))
    raise UnsupportedError(
        f"cannot allocate in the framework of a {type(like).__name__}; pass out=/lse= explicitly")


def _numpy_dtype(name: str) -> Any:
    """NumPy's dtype of that name. NumPy has no bfloat16 it can hand over DLPack (ml_dtypes'
    cannot be exported), so a bfloat16 output (fp8 attention's o_dtype) is refused here."""
    if name == "bfloat16":
        raise UnsupportedError("out: a NumPy array cannot hold a bfloat16 output that flashband can write "
                               "(DLPack has no NumPy bfloat16); use o_dtype float16 with NumPy, or torch tensors")
    return np.dtype(name)


def index_buffer_length(x: Any, what: str, like: Any) -> int:
    """len(x) for a contiguous 1-D int32 torch, CuPy or NumPy array on like's device (what
    copy_into writes); anything else is an error naming `what`."""
    shape = tuple(getattr(x, "shape", ()))
    dtype = str(getattr(x, "dtype", "")).removeprefix("torch.")
    if kind(x) not in ("torch", "cupy", "numpy"):
        raise InvalidArgumentError(f"{what}: a {type(x).__name__}; give a torch, CuPy or NumPy array")
    if len(shape) != 1 or dtype != "int32":
        raise InvalidArgumentError(f"{what}: must be a 1-D int32 array; got shape {shape}, dtype {dtype}")
    contiguous = x.is_contiguous() if kind(x) == "torch" else bool(x.flags.c_contiguous)
    if not contiguous:
        raise InvalidArgumentError(f"{what}: must be contiguous")
    if device_of(x) != device_of(like):
        raise InvalidArgumentError(f"{what}: on {device_of(x)}, the workspace on {device_of(like)}")
    return int(shape[0])


def copy_into(buffer: Any, values: np.ndarray) -> None:
    """buffer[:len(values)] = values (host int32), on the current stream of buffer's device."""
    n = len(values)
    k = kind(buffer)
    if k == "torch":
        source = _torch().from_numpy(values)
        if buffer.is_cuda:
            # From pageable memory the copy would wait for the GPU's queued work; torch's
            # pinned pool reuses a block only once the copy that read it has run.
            buffer[:n].copy_(source.pin_memory(), non_blocking=True)
        else:
            buffer[:n].copy_(source)
    elif k == "cupy":
        buffer[:n].set(values)
    elif k == "numpy":
        buffer[:n] = values
    else:
        raise UnsupportedError(f"cannot write into a {type(buffer).__name__}; give a torch, CuPy or NumPy array")


def check_assignable(x: Any, what: str) -> None:
    """Raises, naming `what`, unless assign() can write x: a torch, CuPy or NumPy array that
    is writable and holds each element once (no stride-0, expanded dimension)."""
    k = kind(x)
    if k not in ("torch", "cupy", "numpy"):
        raise UnsupportedError(f"{what}: cannot write into a {type(x).__name__} in place; "
                               "give a torch, CuPy or NumPy array")
    strides = x.stride() if k == "torch" else x.strides
    if any(st == 0 and n > 1 for st, n in zip(strides, x.shape)):
        raise InvalidArgumentError(f"{what}: an expanded view (stride 0) cannot be written in place")
    if k == "numpy" and not x.flags.writeable:
        raise InvalidArgumentError(f"{what}: a read-only array cannot be written in place")


def assign(dst: Any, src: Any) -> None:
    """dst[...] = src for two arrays of one framework (torch, CuPy, NumPy), on the current
    stream of dst's device."""
    k = kind(dst)
    if k == "torch":
        dst.copy_(src)
    elif k == "cupy":
        dst[...] = src
    elif k == "numpy":
        np.copyto(dst, src)
    else:
        raise UnsupportedError(f"cannot write into a {type(dst).__name__}; give a torch, CuPy or NumPy array")


def scaled_copy(dst: Any, src: Any, factor: float) -> None:
    """dst[...] = src * factor (factor 1.0: a plain copy) for two arrays of one framework,
    on the current stream of dst's device; src may be a transposed view."""
    k = kind(dst)
    if k == "torch":
        if factor == 1.0:
            dst.copy_(src)
        else:
            _torch().mul(src, factor, out=dst)
    elif k in ("cupy", "numpy"):
        xp = _cupy() if k == "cupy" else np
        xp.multiply(src, factor, out=dst)
    else:
        raise UnsupportedError(f"cannot write into a {type(dst).__name__}; give a torch, CuPy or NumPy array")


def transposed(x: Any) -> Any:
    """The 2-D array's transpose, a view (torch, CuPy, NumPy)."""
    return x.t() if kind(x) == "torch" else x.T


def host_int32(x: Any, what: str) -> np.ndarray:
    """A contiguous host int32 copy (or view) of an index array on any device.

    plan() does host work, as in FlashInfer, so device index arrays are copied back here
    (a synchronising copy). Host arrays are copied too: a plan keeps its arrays (run() may
    re-plan from them), and callers rewrite theirs between steps. Integer arrays of another
    width are converted when every value fits; anything else is an error naming `what`.
    """
    if type(x) is np.ndarray and x.dtype == np.int32 and x.ndim == 1:
        return x.copy()  # the usual call (a scheduler's host arrays): one copy, nothing else
    k = kind(x)
    if x is None:
        raise InvalidArgumentError(f"{what}: expected a 1-D int32 array, got None")
    fresh = False  # x is already a copy of its own (from the device): no second one
    if k == "torch":
        fresh = x.device.type != "cpu"
        x = (x.detach() if x.requires_grad else x).to("cpu").numpy()
    elif k == "cupy":
        x, fresh = x.get(), True
    try:
        a = np.asarray(x)
    except (TypeError, ValueError, OverflowError) as e:
        raise InvalidArgumentError(f"{what}: not an integer array ({e})") from None
    if a.ndim != 1:
        raise InvalidArgumentError(f"{what}: must be 1-D; got shape {tuple(a.shape)}")
    if a.dtype != np.int32:
        if not np.issubdtype(a.dtype, np.integer) and a.size > 0:
            raise InvalidArgumentError(f"{what}: dtype {a.dtype} is not an integer type")
        converted = a.astype(np.int32)
        if not np.array_equal(converted, a):
            raise InvalidArgumentError(f"{what}: values do not fit in int32")
        a, fresh = converted, True
    return np.ascontiguousarray(a) if fresh else np.array(a, dtype=np.int32, copy=True)
