"""The caller's arguments judged before anything reaches the native module: every malformed
argument (not an array, wrong rank, a dtype flashband has no kernel for, a read-only output,
an integer past C int, a float that float32 cannot hold) becomes an InvalidArgumentError
naming the caller's argument and value. The native module's own conversion errors (a
nanobind TypeError, an OverflowError) are therefore never what a caller sees, and its
messages name the binding's parameters only where the caller's have the same name (renamed()
translates the rest)."""

from __future__ import annotations

import math
import operator
import re
from typing import Any, Dict, Optional, Sequence

import numpy as np

from . import _frameworks as fw
from .errors import FlashbandError, InvalidArgumentError

INT32_MAX = 2**31 - 1
INT32_MIN = -(2**31)
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
FLOAT_DTYPES = ("float16", "bfloat16", "float32")
KV_DTYPES = FLOAT_DTYPES + fw.FP8_DTYPES  # K and V: q's dtype, or an fp8 cache (issue 65)
Q_DTYPES = FLOAT_DTYPES + fw.FP8_Q_DTYPES  # q: 16/32-bit, or fp8 attention's e4m3 (issue 60)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def is_array(x: Any) -> bool:
    return hasattr(x, "__dlpack__")


def array(x: Any, name: str, ndim: Optional[int] = None, layout: str = "",
          dtypes: Optional[Sequence[str]] = None, writable: bool = False) -> Any:
    """x itself, once it is a DLPack array (torch, NumPy, CuPy, ...) of `ndim` dimensions
    whose dtype is one of `dtypes`, and writable when it is an output."""
    if not is_array(x):
        raise InvalidArgumentError(
            f"{name}: expected an array (torch, NumPy, CuPy or another DLPack tensor), "
            f"got {type(x).__name__} {_shown(x)}")
    if not (hasattr(x, "shape") and hasattr(x, "dtype")):
        return x  # known through DLPack alone: the native module checks it, by the same name
    shape = tuple(int(n) for n in x.shape)
    if ndim is not None and len(shape) != ndim:
        raise InvalidArgumentError(
            f"{name}: got {len(shape)} dimensions {shape}, expected {ndim}" + (f" {layout}" if layout else ""))
    if dtypes is not None:
        dtype = dtype_name(x)
        if dtype not in dtypes:
            raise InvalidArgumentError(f"{name}: dtype {dtype}, allowed: {', '.join(dtypes)}")
    if writable:
        writable_array(x, name)
    return x


def fp8_array(x: Any, name: str, ndim: Optional[int] = None, layout: str = "",
              dtypes: Sequence[str] = KV_DTYPES) -> Any:
    """An input that may be fp8 (K, V: KV_DTYPES; q: Q_DTYPES): as array(), and for a NumPy
    caller the word on how to hold fp8 there."""
    try:
        return array(x, name, ndim, layout, dtypes)
    except InvalidArgumentError as e:
        if fw.kind(x) != "numpy" or "dtype" not in str(e):
            raise
        raise InvalidArgumentError(str(e) + fw.fp8_numpy_note()) from None


def dtype_name(x: Any) -> str:
    try:
        return fw.dtype_name(x)
    except TypeError:
        return str(x.dtype)


def writable_array(x: Any, name: str) -> None:
    """Outputs and workspaces: a read-only array (a NumPy view with writeable=False, a
    broadcast) cannot be written."""
    flags = getattr(x, "flags", None)
    if fw.kind(x) == "numpy" and not flags.writeable:
        raise InvalidArgumentError(f"{name}: a read-only array; flashband writes into it")


def optional_array(x: Any, name: str, **kwargs: Any) -> Any:
    return None if x is None else array(x, name, **kwargs)


def integer(value: Any, name: str, lo: Optional[int] = INT32_MIN, hi: Optional[int] = INT32_MAX) -> int:
    """value as a Python int in [lo, hi] (None: unbounded; NumPy and torch integers
    included; not a bool, a float or a string). The default range is C int's."""
    if type(value) is int:  # the usual call (plan() judges several per call): no conversion
        v = value
    elif isinstance(value, (bool, np.bool_)):
        raise InvalidArgumentError(f"{name}: expected an integer, got {value!r}")
    else:
        try:
            v = operator.index(value)
        except TypeError:
            raise InvalidArgumentError(
                f"{name}: expected an integer, got {type(value).__name__} {_shown(value)}") from None
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        shown = f"{lo}..{hi}" if lo is not None and hi is not None else (f">= {lo}" if lo is not None else f"<= {hi}")
        raise InvalidArgumentError(f"{name}: got {v}, allowed: {shown}")
    return v


def heads(num_qo_heads: Any, num_kv_heads: Any, head_dim: Any, head_dim_name: str = "head_dim"):
    """A plan's head counts and head dim as C ints (the library judges their values)."""
    return (integer(num_qo_heads, "num_qo_heads"), integer(num_kv_heads, "num_kv_heads"),
            integer(head_dim, head_dim_name))


def flag(value: Any, name: str) -> bool:
    """A bool option: True/False (or a NumPy bool, or the ints 0 and 1)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)) and value in (0, 1):
        return bool(value)
    raise InvalidArgumentError(f"{name}: expected True or False, got {_shown(value)}")


def text(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{name}: expected a string, got {type(value).__name__} {_shown(value)}")
    return value


def window_left(value: Any, name: str = "window_left") -> int:
    """-1 (no window) or w >= 0. A window of 2^31 - 1 keys or more covers every kv_len
    flashband can hold (lengths are int32), so it changes nothing (SPEC.md) and is -1."""
    w = integer(value, name, lo=None, hi=None)
    if w < -1:
        raise InvalidArgumentError(f"{name}: got {w}, allowed: -1 (no window) or >= 0")
    return -1 if w >= INT32_MAX else w


def window_right(value: Any, name: str = "window_right") -> int:
    """-1 (no right bound) or r >= 0. A bound of 2^31 - 1 keys or more reaches past every
    qo_len flashband can hold, so it clips nothing and is -1."""
    r = integer(value, name, lo=None, hi=None)
    if r < -1:
        raise InvalidArgumentError(f"{name}: got {r}, allowed: -1 (no right bound) or >= 0")
    return -1 if r >= INT32_MAX else r


def real(value: Any, name: str) -> Optional[float]:
    """None, or a real number that float32 (what the kernels take) holds: a nonzero finite
    value that rounds to 0 or infinity there is refused rather than silently turning, say,
    the soft cap off. NaN, 0 and negatives pass to the library, which names them."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_, str, bytes)) or not hasattr(value, "__float__"):
        raise InvalidArgumentError(f"{name}: expected a number, got {type(value).__name__} {_shown(value)}")
    try:
        v = float(value)
    except (TypeError, ValueError, OverflowError, RuntimeError):
        raise InvalidArgumentError(f"{name}: expected a number, got {_shown(value)}") from None
    with np.errstate(over="ignore", under="ignore"):
        narrowed = float(np.float32(v))
    if math.isfinite(v) and v != 0.0 and (narrowed == 0.0 or math.isinf(narrowed)):
        raise InvalidArgumentError(
            f"{name}: got {v!r}, which is {'0' if narrowed == 0.0 else 'infinite'} in float32 (the "
            "precision the kernels use); allowed: a value whose float32 is finite and nonzero")
    return v


def disjoint(outputs: Dict[str, Any]) -> None:
    """Outputs of one call must not share memory with each other: the later write would
    overwrite the earlier (merge_state_in_place's v and s, out and lse)."""
    spans = [(name, _byte_span(x)) for name, x in outputs.items() if x is not None]
    for i, (a, sa) in enumerate(spans):
        for b, sb in spans[i + 1:]:
            if sa and sb and sa[0] == sb[0] and sa[1] < sb[2] and sb[1] < sa[2]:
                raise InvalidArgumentError(f"{b}: overlaps {a} in memory; the outputs of one call need memory of their own")


def _byte_span(x: Any):
    """(device, first byte, past the last byte) x can touch, or None when unknown."""
    k = fw.kind(x)
    if k == "torch":
        base, strides, item = x.data_ptr(), x.stride(), x.element_size()
    elif k == "numpy":
        base, strides, item = x.__array_interface__["data"][0], [s // x.itemsize for s in x.strides], x.itemsize
    elif k == "cupy":
        base, strides, item = x.data.ptr, [s // x.itemsize for s in x.strides], x.itemsize
    else:
        return None
    if any(int(n) == 0 for n in x.shape):
        return None
    lo = hi = 0
    for n, s in zip(x.shape, strides):
        span = (int(n) - 1) * int(s)
        if span < 0:
            lo += span
        else:
            hi += span
    return (fw.device_of(x), base + lo * item, base + (hi + 1) * item)


class renamed:
    """Re-raises the native module's errors with its parameter names (keys) replaced by the
    caller's (values), wherever they appear as whole words. A class, not a generator
    context manager: plan() enters one on every call, and this costs a third as much."""

    def __init__(self, names: Dict[str, str]) -> None:
        self.names = names

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, e: Any, traceback: Any) -> bool:
        if not isinstance(e, FlashbandError):
            return False
        message = str(e)
        pattern = re.compile(r"(?<![\w\[])(" + "|".join(re.escape(k) for k in self.names) + r")(?![\w\]])")
        new = pattern.sub(lambda m: self.names[m.group(1)], message)
        if new == message:
            return False
        raise type(e)(new).with_traceback(traceback) from None
