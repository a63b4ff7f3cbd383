"""A prefill's custom mask (FlashInfer's custom_mask / packed_custom_mask, SPEC.md "Custom
masks"): the packed bits flashband's runs read, checked against the requests' lengths here,
on the host, so that a wrong mask is refused by the argument's name before any run."""

from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from . import _frameworks as fw
from .errors import InvalidArgumentError
from .packbits import host_copy, segment_packbits


def packed_mask(custom_mask: Any, packed_custom_mask: Any, qo_lens: np.ndarray,
                kv_lens: np.ndarray) -> Tuple[Optional[Any], np.ndarray]:
    """The packed bits for requests of these lengths (None without a mask) and each
    request's byte offset into them ([batch + 1], what flashband's plan derives too).

    custom_mask: bool, each request's [qo_len, kv_len] matrix flattened row-major and the
    requests concatenated (any shape of that many elements: single prefill's 2-D one too),
    packed as FlashInfer's plan() packs it, segment_packbits(..., bitorder="little").
    packed_custom_mask: uint8, already so packed; FlashInfer then ignores custom_mask, and
    flashband, which ignores no argument, takes both only where they agree."""
    if custom_mask is None and packed_custom_mask is None:
        return None, np.zeros(1, dtype=np.int64)
    # Arrays the native plan refuses (lengths of other batch sizes, negative lengths) give
    # some offsets here; the plan then raises naming them.
    n = min(len(qo_lens), len(kv_lens))
    bits = np.maximum(qo_lens[:n].astype(np.int64), 0) * np.maximum(kv_lens[:n].astype(np.int64), 0)
    byte_indptr = np.zeros(len(bits) + 1, dtype=np.int64)
    np.cumsum((bits + 7) // 8, out=byte_indptr[1:])
    indptr = np.zeros(len(bits) + 1, dtype=np.int64)
    np.cumsum(bits, out=indptr[1:])
    packed = None
    if custom_mask is not None:
        flat = custom_mask.reshape(-1)
        if int(flat.shape[0]) != int(indptr[-1]):
            raise InvalidArgumentError(
                f"custom_mask: {int(flat.shape[0])} elements, expected {int(indptr[-1])} "
                "(sum over requests of qo_len * kv_len, each request's [qo_len, kv_len] flattened)")
        packed, _ = segment_packbits(flat, indptr, bitorder="little")
    if packed_custom_mask is None:
        return packed, byte_indptr
    want = int(byte_indptr[-1])
    shape = tuple(int(n) for n in getattr(packed_custom_mask, "shape", ()))
    if fw.dtype_name(packed_custom_mask) != "uint8" or shape != (want,):
        raise InvalidArgumentError(
            f"packed_custom_mask: shape {shape}, dtype {fw.dtype_name(packed_custom_mask)}; expected ({want},) "
            "uint8: each request's qo_len * kv_len bits packed little-endian and padded to whole bytes "
            "(segment_packbits(..., bitorder='little'))")
    if packed is not None and not np.array_equal(host_copy(packed, "custom_mask"),
                                                 host_copy(packed_custom_mask, "packed_custom_mask")):
        raise InvalidArgumentError(
            "custom_mask: differs from packed_custom_mask (FlashInfer would use packed_custom_mask and ignore "
            "custom_mask; flashband ignores no argument: give one of them)")
    return packed_custom_mask, byte_indptr
