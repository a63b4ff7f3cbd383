"""FlashInfer's packbits and segment_packbits (flashinfer/quantization/packbits.py in 0.7.2):
the elements of a binary array packed 8 to a byte with numpy.packbits's meaning, one array
or a batch of segments each padded to whole bytes. A custom mask goes to flashband as
``segment_packbits(mask, indptr, bitorder="little")`` (SPEC.md "Custom masks").

They take torch tensors, NumPy arrays and CuPy arrays and return the input's kind on its
device. The packing itself runs on the host (FlashInfer's runs a CUDA kernel): a device
input is copied back and its result copied over, with the synchronisation that implies.
"""

from __future__ import annotations

import sys
from typing import Any, Tuple

import numpy as np

from . import _frameworks as fw
from .errors import InvalidArgumentError

__all__ = ["packbits", "segment_packbits"]


def _bitorder(bitorder: Any) -> str:
    if bitorder not in ("big", "little"):
        raise InvalidArgumentError(f"bitorder: got {bitorder!r}, allowed: 'big', 'little'")
    return bitorder


def host_copy(x: Any, what: str) -> np.ndarray:
    """x as a host NumPy array (a copy where x lives on a device)."""
    k = fw.kind(x)
    if k == "torch":
        return x.detach().to("cpu").numpy()
    if k == "cupy":
        return x.get()
    if k != "numpy":
        raise InvalidArgumentError(f"{what}: a {type(x).__name__}; give a torch tensor, a NumPy or a CuPy array")
    return np.asarray(x)


def _host_1d(x: Any, what: str) -> np.ndarray:
    a = host_copy(x, what)
    if a.ndim != 1:
        raise InvalidArgumentError(f"{what}: must be 1-D, got shape {tuple(a.shape)}")
    return a


def _like(result: np.ndarray, x: Any) -> Any:
    """result in x's framework and on x's device."""
    k = fw.kind(x)
    if k == "torch":
        return fw._torch().from_numpy(result).to(x.device)
    if k == "cupy":
        with sys.modules["cupy"].cuda.Device(x.device.id):
            return sys.modules["cupy"].asarray(result)
    return result


def packbits(x: Any, bitorder: str = "big") -> Any:
    """Packs the 1-D binary-valued x (nonzero is 1) into uint8, shape ((len(x) + 7) // 8,),
    the last byte padded with zero bits; bitorder "big" puts element 0 in the most
    significant bit, "little" in the least (numpy.packbits)."""
    order = _bitorder(bitorder)
    return _like(np.packbits(_host_1d(x, "x") != 0, bitorder=order), x)


def segment_packbits(x: Any, indptr: Any, bitorder: str = "big") -> Tuple[Any, Any]:
    """Packs each segment x[indptr[i]:indptr[i+1]] as packbits does, each padded to whole
    bytes, one after the other. Returns (y, new_indptr): y uint8 in x's kind and device,
    segment i at y[new_indptr[i]:new_indptr[i+1]] with new_indptr[i+1] - new_indptr[i] ==
    (indptr[i+1] - indptr[i] + 7) // 8; new_indptr int32 in indptr's kind and device."""
    order = _bitorder(bitorder)
    bits = _host_1d(x, "x") != 0
    ptr = _host_1d(indptr, "indptr")
    if ptr.dtype.kind not in "iu" or len(ptr) < 1:
        raise InvalidArgumentError(f"indptr: must be a non-empty integer array, got dtype {ptr.dtype} "
                                   f"and {len(ptr)} entries")
    ptr = ptr.astype(np.int64)
    if ptr[0] != 0 or np.any(np.diff(ptr) < 0) or ptr[-1] != len(bits):
        raise InvalidArgumentError(f"indptr: must start at 0, never decrease and end at len(x) = {len(bits)}; "
                                   f"got {ptr.tolist() if len(ptr) <= 8 else '[' + str(ptr[0]) + ', ..., ' + str(ptr[-1]) + ']'}")
    lengths = (np.diff(ptr) + 7) // 8
    new_indptr = np.zeros(len(ptr), dtype=np.int64)
    np.cumsum(lengths, out=new_indptr[1:])
    if new_indptr[-1] > np.iinfo(np.int32).max:
        raise InvalidArgumentError(f"x: packs into {new_indptr[-1]} bytes, more than an int32 indptr holds")
    y = np.zeros(int(new_indptr[-1]), dtype=np.uint8)
    for i in range(len(ptr) - 1):
        if ptr[i + 1] > ptr[i]:
            y[new_indptr[i]:new_indptr[i + 1]] = np.packbits(bits[ptr[i]:ptr[i + 1]], bitorder=order)
    return _like(y, x), _like(new_indptr.astype(np.int32), indptr)
