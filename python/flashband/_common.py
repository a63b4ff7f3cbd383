"""Argument handling shared by every entry point: FlashInfer options that flashband does not
implement are refused by name (never silently ignored), options become a native Options,
and the RunInfo of the calling thread's last run is kept for inspection."""

from __future__ import annotations

import math
import threading
from typing import Any, Optional

import numpy as np

from . import _C
from . import _args
from . import _frameworks as fw
from .errors import InvalidArgumentError, UnsupportedError

_last = threading.local()


def last_run_info() -> Optional["_C.RunInfo"]:
    """What the calling thread's most recent flashband call ran: backend, kernel variant and
    number of KV splits (None before the first call)."""
    return getattr(_last, "info", None)


def record(info: "_C.RunInfo") -> None:
    _last.info = info


def _is(value: Any, neutral: Any) -> bool:
    if value is neutral:
        return True
    if neutral is None or isinstance(value, (str, bytes)) != isinstance(neutral, (str, bytes)):
        return False
    try:  # a number, or a one-element array (a scale tensor)
        return bool(value == neutral)
    except (TypeError, ValueError, RuntimeError):
        return False


# FlashInfer parameters outside the contract and the values that change nothing (one table,
# built once: run() checks some on every call).
_NEUTRAL = {"pos_encoding_mode": "NONE",
            # fp8 dequantisation scales: engines pass 1.0 for fp16/bf16 caches (vLLM
            # does on every run), which scales nothing.
            "q_scale": (None, 1.0), "k_scale": (None, 1.0), "v_scale": (None, 1.0),
            "o_scale": (None, 1.0), "scale_q": (None, 1.0), "scale_k": (None, 1.0),
            "scale_v": (None, 1.0),
            # fp16 QK accumulation would lower precision below the contract's float32;
            # RoPE parameters only mean something with a RoPE mode, which is refused.
            "use_fp16_qk_reduction": False, "rope_scale": None, "rope_theta": None,
            # FlashInfer's custom-mask buffers and JIT variants: no custom masks here.
            "jit_args": None, "jit_kwargs": None,
            # FlashInfer's split-KV controls (engines pass their neutral values) and the
            # trtllm-gen/cuDNN inputs.
            "fixed_split_size": (None, -1), "seq_lens": None, "seq_lens_q": None,
            "block_tables": None, "max_token_per_sequence": None, "max_sequence_kv": None,
            # FlashInfer's approximate softmax skipping and fp4 cache scale factors.
            "skip_softmax_threshold_scale_factor": None, "kv_cache_sf": None,
            # FlashInfer's multi-item scoring (SGLang passes these neutral values).
            "prefix_len_ptr": None, "token_pos_in_items_ptr": None,
            "token_pos_in_items_len": 0, "max_item_len_ptr": None,
            # FlashInfer 0.7: trtllm-gen's fp16 softmax accumulator and sparse-compression
            # cubins (below the contract's float32), a JIT variant's own mask, and cuDNN's
            # separate V and O indptrs (flashband's V rows follow kv_indptr, O's qo_indptr).
            "use_fp16_softmax": (None, False), "uses_spcompress": (None, False),
            "variant_owns_mask": False, "v_indptr": None, "o_indptr": None}


_ALLOWED = {name: v if isinstance(v, tuple) else (v,) for name, v in _NEUTRAL.items()}


def fp8_scales(fp8: bool, **given: Any) -> dict:
    """run()'s fp8 descales as the native run takes them: q_scale where q is e4m3 (fp8
    attention), k_scale / v_scale where K/V are fp8 (FlashInfer's meaning, SPEC.md). Each a
    number (None: 1.0), or a one-element float32 array on the run's device, which the kernel
    reads when it runs, so a captured CUDA graph replays with the value it holds then.
    Without fp8 (not fp8): None or 1.0 only, as the kernels would ignore any other (scales
    dequantize fp8 inputs: plan with kv_data_type / q_data_type)."""
    if not fp8:
        refuse_unsupported(**given)
        return {}
    native = {}
    for name, scale in given.items():
        if scale is None:
            continue
        if _args.is_array(scale) and not isinstance(scale, np.generic):
            native[name + "_tensor"] = fw.native(scale)
        else:
            native[name] = _args.real(scale, name)
    return native


def kv_scales(k_scale: Any, v_scale: Any, fp8: bool) -> dict:
    """fp8_scales of an fp8 cache's k_scale and v_scale."""
    return fp8_scales(fp8, k_scale=k_scale, v_scale=v_scale)


def refuse_unsupported(**given: Any) -> None:
    """FlashInfer parameters outside flashband's contract (SPEC.md): accepted only at their
    neutral value, so that code written for FlashInfer fails loudly instead of computing
    something else."""
    for name, value in given.items():
        allowed = _ALLOWED[name]
        for neutral in allowed:  # plan() checks several per call: the usual None first, by identity
            if value is neutral or _is(value, neutral):
                break
        else:
            shown = " or ".join(repr(a) for a in allowed)
            raise UnsupportedError(f"{name}: {value!r} is not supported by flashband (allowed: {shown})")


# FlashInfer's backend names for the kernels flashband has too: its FlashAttention-2 kernels
# (mma.sync, any arch from sm_80) are sm80's kind, its FlashAttention-3 ones (Hopper's TMA
# and wgmma) sm90's. Its other names (trtllm-gen, cutlass, cute-dsl: Blackwell kernels)
# have no counterpart and are refused by make_options, naming the backends there are.
_BACKEND_ALIASES = {"fa2": "sm80", "fa3": "sm90"}


def backend_name(backend: str) -> str:
    """flashband's name for a backend given by flashband's or FlashInfer's name."""
    return _BACKEND_ALIASES.get(backend, backend) if isinstance(backend, str) else backend


def make_options(*, causal: bool = False, window_left: int = -1, window_right: int = -1,
                 logits_soft_cap: Optional[float] = None, sm_scale: Optional[float] = None,
                 return_lse: bool = False, kv_layout: str = "NHD", backend: str = "auto",
                 stream: int = 0, cuda_graph: bool = False,
                 disable_split_kv: bool = False, sinks: bool = False,
                 custom_mask: bool = False) -> "_C.Options":
    """The native Options, each value judged under the caller's name first (_args):
    window_left / window_right past C int are -1 (no bound), float parameters are judged as float32."""
    return _C.Options(causal=_args.flag(causal, "causal"), window_left=_args.window_left(window_left),
                      window_right=_args.window_right(window_right),
                      logits_soft_cap=_args.real(logits_soft_cap, "logits_soft_cap"),
                      sm_scale=_args.real(sm_scale, "sm_scale"),
                      return_lse=_args.flag(return_lse, "return_lse"),
                      kv_layout=_args.text(kv_layout, "kv_layout"),
                      backend=_args.text(backend_name(backend), "backend"),
                      stream=stream, cuda_graph=_args.flag(cuda_graph, "use_cuda_graph"),
                      disable_split_kv=_args.flag(disable_split_kv, "disable_split_kv"),
                      sinks=bool(sinks), custom_mask=bool(custom_mask))


def outputs(q: Any, out: Any, lse: Any, return_lse: bool, heads: int, o_dtype: Optional[str] = None):
    """The caller's out/lse (checked to be writable arrays of the right rank, in memory of
    their own), or new ones in q's framework and device: out like q (of o_dtype where given:
    fp8 attention's output), lse [tokens, heads] float32 when return_lse."""
    _args.optional_array(out, "out", ndim=len(q.shape), writable=True)
    _args.optional_array(lse, "lse", ndim=2, layout="[tokens, num_qo_heads]", writable=True)
    _args.disjoint({"out": out, "lse": lse})
    if out is None:
        out = fw.empty_like(q) if o_dtype is None else fw.empty(q, tuple(q.shape), o_dtype)
    if return_lse and lse is None:
        lse = fw.empty(q, (q.shape[0], heads), "float32")
    return out, (lse if return_lse else None)


# The LSE forms FlashInfer 0.7's batch prefill run() can deliver (lse_base, lse_layout):
# the kernels write base 2 as [tokens, heads] ("log2", "NH"); "ln" is the natural log
# (torch.logsumexp's), "HN" the contiguous transpose [heads, tokens].
LSE_BASES = ("log2", "ln")
LSE_LAYOUTS = ("NH", "HN")


def lse_form(lse_base: Any, lse_layout: Any) -> tuple:
    """(lse_base, lse_layout) once both are among the forms flashband delivers."""
    for value, name, allowed in ((lse_base, "lse_base", LSE_BASES), (lse_layout, "lse_layout", LSE_LAYOUTS)):
        if not isinstance(value, str) or value not in allowed:
            raise InvalidArgumentError(f"{name}: got {value!r}, allowed: {', '.join(map(repr, allowed))}")
    return lse_base, lse_layout


def transposed_lse(q: Any, out: Any, lse: Any, heads: int) -> Any:
    """A caller's lse for lse_layout "HN": a writable float32 [heads, tokens] array on q's
    device, apart from out; checked before the run, written after it."""
    if lse is None:
        return None
    _args.array(lse, "lse", 2, "[num_qo_heads, tokens] (lse_layout 'HN')", ("float32",), writable=True)
    want = (heads, int(q.shape[0]))
    if tuple(int(n) for n in lse.shape) != want:
        raise InvalidArgumentError(f"lse: shape {tuple(lse.shape)}, expected {want} [num_qo_heads, tokens] "
                                   "for lse_layout 'HN'")
    if fw.device_of(lse) != fw.device_of(q):
        raise InvalidArgumentError(f"lse: on {fw.device_of(lse)}, q on {fw.device_of(q)}")
    fw.check_assignable(lse, "lse")
    _args.disjoint({"out": out, "lse": lse})
    return lse


def deliver_lse(lse: Any, lse_base: str, lse_layout: str, dest: Any) -> Any:
    """The kernels' base-2 [tokens, heads] lse in the form asked: rescaled in place for
    "NH", else written into dest (the caller's [heads, tokens] array, or a new one)."""
    factor = math.log(2.0) if lse_base == "ln" else 1.0
    if lse_layout == "NH":
        if factor != 1.0:
            fw.scaled_copy(lse, lse, factor)
        return lse
    source = fw.transposed(lse)
    if dest is None:
        dest = fw.empty(lse, tuple(int(n) for n in source.shape), "float32")
    fw.scaled_copy(dest, source, factor)
    return dest
