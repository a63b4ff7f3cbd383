"""Argument handling shared by every entry point: FlashInfer options that flashband does not
implement are refused by name (never silently ignored), options become a native Options,
and the RunInfo of the calling thread's last run is kept for inspection."""

from __future__ import annotations

import threading
from typing import Any, Optional

from . import _C
from . import _frameworks as fw
from .errors import UnsupportedError

_last = threading.local()


def last_run_info() -> Optional["_C.RunInfo"]:
    """What the calling thread's most recent flashband call ran: backend, kernel variant and
    number of KV splits (None before the first call)."""
    return getattr(_last, "info", None)


def record(info: "_C.RunInfo") -> None:
    _last.info = info


def refuse_unsupported(**given: Any) -> None:
    """FlashInfer parameters outside flashband's contract (SPEC.md): accepted only at their
    neutral value, so that code written for FlashInfer fails loudly instead of computing
    something else."""
    neutral = {"custom_mask": None, "packed_custom_mask": None, "pos_encoding_mode": "NONE",
               "q_scale": None, "k_scale": None, "v_scale": None,
               # fp16 QK accumulation would lower precision below the contract's float32;
               # RoPE parameters only mean something with a RoPE mode, which is refused.
               "use_fp16_qk_reduction": False, "rope_scale": None, "rope_theta": None,
               # FlashInfer's custom-mask buffers and JIT variants: no custom masks here.
               "custom_mask_buf": None, "mask_indptr_buf": None, "jit_args": None, "jit_kwargs": None,
               # FlashInfer's split-KV controls (engines pass their neutral values), the
               # trtllm-gen/cuDNN inputs, a right window and attention sinks.
               "fixed_split_size": (None, -1), "seq_lens": None,
               "block_tables": None, "window_right": 0, "sinks": None}
    for name, value in given.items():
        allowed = neutral[name] if isinstance(neutral[name], tuple) else (neutral[name],)
        if not any(value is a or (a is not None and value == a) for a in allowed):
            shown = " or ".join(repr(a) for a in allowed)
            raise UnsupportedError(f"{name}: {value!r} is not supported by flashband (allowed: {shown})")


def make_options(*, causal: bool = False, window_left: int = -1,
                 logits_soft_cap: Optional[float] = None, sm_scale: Optional[float] = None,
                 return_lse: bool = False, kv_layout: str = "NHD", backend: str = "auto",
                 stream: int = 0, cuda_graph: bool = False,
                 disable_split_kv: bool = False) -> "_C.Options":
    return _C.Options(causal=bool(causal), window_left=int(window_left),
                      logits_soft_cap=None if logits_soft_cap is None else float(logits_soft_cap),
                      sm_scale=None if sm_scale is None else float(sm_scale),
                      return_lse=bool(return_lse), kv_layout=kv_layout, backend=backend,
                      stream=stream, cuda_graph=bool(cuda_graph),
                      disable_split_kv=bool(disable_split_kv))


def outputs(q: Any, out: Any, lse: Any, return_lse: bool, heads: int):
    """The caller's out/lse, or new ones in q's framework and device: out like q, lse
    [tokens, heads] float32 when return_lse."""
    if out is None:
        out = fw.empty_like(q)
    if return_lse and lse is None:
        lse = fw.empty(q, (q.shape[0], heads), "float32")
    return out, (lse if return_lse else None)
