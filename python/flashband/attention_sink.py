"""FlashInfer's BatchAttentionWithAttentionSinkWrapper (flashinfer/attention/_core.py, 0.7.2):
a paged prefill wrapper whose JIT variant takes the sinks as its extra run() arguments,
run(q, paged_kv_cache, sink, sm_scale). Here it is the paged wrapper with run(sinks=)
(SPEC.md "Attention sinks"); the constructor's kernel choices are checked against the plan
instead of compiling a kernel."""

import math
from typing import Any, Optional

from . import _args
from . import _frameworks as fw
from ._common import refuse_unsupported
from .errors import UnsupportedError
from .prefill import BatchPrefillWithPagedKVCacheWrapper

__all__ = ["BatchAttentionWithAttentionSinkWrapper"]


class BatchAttentionWithAttentionSinkWrapper(BatchPrefillWithPagedKVCacheWrapper):
    """FlashInfer's sink wrapper. q_data_type, kv_data_type, head_dim_qk, head_dim_vo and
    window_left name the kernel FlashInfer compiles: plan() must agree with them (its
    window_left >= 0 only where the constructor's is, as FlashInfer's sliding-window flag),
    or it raises naming the argument. run(q, paged_kv_cache, sink[, sm_scale]): sm_scale, if
    given, must be the plan's (FlashInfer passes the scale to its variant twice)."""

    def __init__(self, float_workspace_buffer: Any, kv_layout: str = "NHD",
                 use_cuda_graph: bool = False, qo_indptr_buf: Any = None,
                 paged_kv_indptr_buf: Any = None, paged_kv_indices_buf: Any = None,
                 paged_kv_last_page_len_buf: Any = None, custom_mask_buf: Any = None,
                 mask_indptr_buf: Any = None, backend: str = "auto",
                 pos_encoding_mode: str = "NONE", use_fp16_qk_reduction: bool = False,
                 q_data_type: Any = "bfloat16", kv_data_type: Any = "bfloat16",
                 head_dim_qk: int = 128, head_dim_vo: int = 128, window_left: int = -1) -> None:
        refuse_unsupported(pos_encoding_mode=pos_encoding_mode, use_fp16_qk_reduction=use_fp16_qk_reduction)
        super().__init__(float_workspace_buffer, kv_layout, use_cuda_graph, qo_indptr_buf=qo_indptr_buf,
                         paged_kv_indptr_buf=paged_kv_indptr_buf, paged_kv_indices_buf=paged_kv_indices_buf,
                         paged_kv_last_page_len_buf=paged_kv_last_page_len_buf,
                         custom_mask_buf=custom_mask_buf, mask_indptr_buf=mask_indptr_buf, backend=backend)
        self._kernel = dict(q_data_type=fw.canonical_dtype(q_data_type, "q_data_type"),
                            kv_data_type=fw.canonical_dtype(kv_data_type, "kv_data_type", fp8=fw.FP8_DTYPES),
                            head_dim_qk=_args.integer(head_dim_qk, "head_dim_qk"),
                            head_dim_vo=_args.integer(head_dim_vo, "head_dim_vo"))
        self._sliding = _args.window_left(window_left) >= 0

    def plan(self, *args: Any, **kwargs: Any) -> None:
        """As BatchPrefillWithPagedKVCacheWrapper.plan, within the constructor's kernel."""
        names = ("qo_indptr", "paged_kv_indptr", "paged_kv_indices", "paged_kv_last_page_len",
                 "num_qo_heads", "num_kv_heads", "head_dim_qk", "page_size")
        given = dict(zip(names, args), **kwargs)
        planned = dict(q_data_type=given.get("q_data_type", "float16"),
                       kv_data_type=given.get("kv_data_type") or given.get("q_data_type", "float16"),
                       head_dim_qk=given.get("head_dim_qk"),
                       head_dim_vo=given.get("head_dim_vo") or given.get("head_dim_qk"))
        for name, want in self._kernel.items():
            got = planned[name]
            if name.endswith("data_type"):
                got = fw.canonical_dtype(got, name, fp8=fw.FP8_DTYPES if name == "kv_data_type" else ())
            if got != want:
                raise UnsupportedError(f"{name}: plan() got {got}, the wrapper was constructed for {want}")
        if _args.window_left(given.get("window_left", -1)) >= 0 and not self._sliding:
            raise UnsupportedError(f"window_left: plan() got {given['window_left']}, but the wrapper was "
                                   "constructed without a sliding window (window_left=-1)")
        super().plan(*args, **kwargs)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """FlashInfer's deprecated forward() has no place for the sink: refused."""
        raise UnsupportedError("forward: BatchAttentionWithAttentionSinkWrapper takes the sink in "
                               "run(q, paged_kv_cache, sink[, sm_scale]); plan() and run() instead")

    def run(self, q: Any, paged_kv_cache: Any, *args: Any, **kwargs: Any) -> Any:
        """run(q, paged_kv_cache, sink, sm_scale=None, **the paged wrapper's run() options)."""
        if not 1 <= len(args) <= 2:
            raise UnsupportedError(f"run: takes (q, paged_kv_cache, sink[, sm_scale]), got {2 + len(args)} "
                                   "positional arguments")
        if "sinks" in kwargs:
            raise UnsupportedError("sinks: give the sink positionally, as FlashInfer's variant takes it")
        if len(args) == 2 and args[1] is not None:
            planned = self._sm_scale if self._sm_scale is not None else 1.0 / math.sqrt(self._plan_sizes[2])
            if not math.isclose(float(args[1]), planned, rel_tol=1e-6):
                raise UnsupportedError(f"sm_scale: run() got {args[1]}, the plan's is {planned}; "
                                       "plan() again to change it")
        return super().run(q, paged_kv_cache, sinks=args[0], **kwargs)
