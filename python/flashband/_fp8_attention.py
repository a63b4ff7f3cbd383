"""fp8 attention's arguments (issue 60, SPEC.md "fp8 attention"): e4m3 q, K and V with
per-tensor descales, an output dtype the caller must name. Chosen by q's dtype alone: the
callers ask only where q is float8_e4m3fn, so an fp8 cache with 16-bit q never gets here."""

from __future__ import annotations

import math
from typing import Any, Optional

from . import _args
from . import _frameworks as fw
from ._common import fp8_scales
from .errors import InvalidArgumentError, UnsupportedError

# What fp8 attention writes: there is no fp8 output (SPEC.md).
OUTPUT_DTYPES = ("float16", "bfloat16")


def output_dtype(o_dtype: Any, name: str) -> str:
    """The output dtype of fp8 attention, which the caller must name: FlashInfer 0.7.2
    defaults o_data_type / o_dtype to q's dtype (prefill.py: `if o_data_type is None:
    o_data_type = q_data_type`), an fp8 output, which flashband does not write. fp8 and
    float32 names pass on (the library refuses them by name)."""
    if o_dtype is None:
        raise InvalidArgumentError(
            f"{name}: not given; fp8 attention (float8_e4m3fn q) writes float16 or bfloat16, so pass "
            f"{name}=torch.bfloat16 or torch.float16 (FlashInfer 0.7.2 would default it to q's dtype, an "
            "fp8 output, which flashband does not write)")
    return fw.canonical_dtype(o_dtype, name, fp8=fw.FP8_DTYPES)


def single_output_dtype(o_dtype: Any, out: Any) -> str:
    """single_prefill_with_kv_cache's output dtype with e4m3 q: o_dtype (FlashInfer's), or
    the dtype of a given out (SPEC.md: out names it); both given, they must agree. Judged
    here by name, as the library sees only out."""
    if o_dtype is None and out is not None and hasattr(out, "dtype"):
        return _args.dtype_name(out)
    name = output_dtype(o_dtype, "o_dtype")
    if name not in OUTPUT_DTYPES:
        raise InvalidArgumentError(f"o_dtype: got {name} with float8_e4m3fn q, allowed: {', '.join(OUTPUT_DTYPES)}")
    if out is not None and hasattr(out, "dtype") and _args.dtype_name(out) != name:
        raise InvalidArgumentError(f"out: dtype {_args.dtype_name(out)}, but o_dtype is {name}; they must agree")
    return name


def _per_tensor(scale: Any, name: str) -> Any:
    """FlashInfer 0.7.2's single_prefill_with_kv_cache takes scale_q / scale_k / scale_v per
    head ([num_qo_heads] / [num_kv_heads]); flashband has one descale per tensor, so an
    array of more than one element is refused rather than reduced to one."""
    shape = getattr(scale, "shape", None) if _args.is_array(scale) else None
    if shape is not None and math.prod(int(n) for n in shape) > 1:
        raise UnsupportedError(
            f"{name}: {math.prod(int(n) for n in shape)} elements (shape {tuple(int(n) for n in shape)}); "
            "per-head scales are not supported: give one per-tensor descale (a number or a one-element "
            "float32 array)")
    return scale


def _one_of(per_head: Any, per_tensor: Any, names: str) -> Optional[Any]:
    """FlashInfer multiplies scale_k by k_scale (the kernel's per-head tensor, and sm_scale
    *= k_scale); flashband takes one descale, so only one of the two may be given."""
    if per_head is not None and per_tensor is not None:
        raise InvalidArgumentError(f"{names}: both given; flashband takes one per-tensor descale, give one of them")
    return per_tensor if per_head is None else per_head


def single_scales(scale_q: Any, scale_k: Any, scale_v: Any, k_scale: Any, v_scale: Any) -> dict:
    """single_prefill_with_kv_cache's descales with e4m3 q, as the native call takes them."""
    scale_q, scale_k, scale_v = (_per_tensor(s, n) for s, n in ((scale_q, "scale_q"), (scale_k, "scale_k"),
                                                                 (scale_v, "scale_v")))
    return fp8_scales(True, q_scale=scale_q, k_scale=_one_of(scale_k, k_scale, "scale_k and k_scale"),
                      v_scale=_one_of(scale_v, v_scale, "scale_v and v_scale"))
