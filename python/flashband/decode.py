"""Decode: one query per request over a paged KV cache (FlashInfer's ``flashinfer.decode``
names and arguments). Decode is prefill with qo_len = 1 and gives the same result."""

from __future__ import annotations

from typing import Any, Optional, Tuple, Union

import warnings

import numpy as np

from . import _C
from . import _args
from . import _frameworks as fw
from ._common import make_options, refuse_unsupported
from ._wrapper import BatchWrapperBase, _installed_anyway, plan_sizes
from .errors import InvalidArgumentError, UnsupportedError
from .prefill import _num_pages, _paged_call, _used_indices, single_prefill_with_kv_cache

__all__ = ["single_decode_with_kv_cache", "BatchDecodeWithPagedKVCacheWrapper"]


def single_decode_with_kv_cache(
    q: Any, k: Any, v: Any, kv_layout: str = "NHD", pos_encoding_mode: str = "NONE",
    use_tensor_cores: bool = False, q_scale: Any = None, k_scale: Any = None, v_scale: Any = None,
    window_left: int = -1, logits_soft_cap: Optional[float] = None,
    sm_scale: Optional[float] = None, rope_scale: Optional[float] = None,
    rope_theta: Optional[float] = None, return_lse: bool = False, *, backend: str = "auto",
) -> Union[Any, Tuple[Any, Any]]:
    """q [Hq, D]; k, v [kv_len, Hk, D] (NHD) or [Hk, kv_len, D] (HND). Returns out [Hq, D],
    or (out, lse [Hq]) when return_lse. k_scale, v_scale: as single_prefill_with_kv_cache's
    (an fp8 k and v); q_scale (fp8 q): None or 1.0 only. fp8 q (fp8 attention) is refused:
    FlashInfer 0.7.2's single decode has no output dtype argument and flashband writes no fp8
    output; single_prefill_with_kv_cache(q[None], k, v, scale_q=, o_dtype=) serves it."""
    del use_tensor_cores  # a kernel-choice hint: the backend picks its decode kernel
    refuse_unsupported(pos_encoding_mode=pos_encoding_mode, rope_scale=rope_scale, rope_theta=rope_theta,
                       q_scale=q_scale)
    if hasattr(q, "dtype") and _args.dtype_name(q) in fw.FP8_Q_DTYPES:
        raise UnsupportedError(
            "q: float8_e4m3fn (fp8 attention) in single_decode_with_kv_cache, which has no output dtype "
            "argument (flashband writes no fp8 output); use single_prefill_with_kv_cache(q[None], k, v, "
            "scale_q=, o_dtype=) or the decode wrapper with o_data_type")
    _args.array(q, "q", 2, "[num_qo_heads, head_dim]", _args.FLOAT_DTYPES)
    result = single_prefill_with_kv_cache(
        q[None], k, v, kv_layout=kv_layout, window_left=window_left,
        logits_soft_cap=logits_soft_cap, sm_scale=sm_scale, return_lse=return_lse,
        backend=backend, k_scale=k_scale, v_scale=v_scale)
    if return_lse:
        return result[0][0], result[1][0]
    return result[0]


def _with_data_type(q_data_type: Any, kv_data_type: Any, data_type: Any) -> Tuple[Any, Any]:
    """data_type (FlashInfer's older name) fills q_data_type and kv_data_type where they are
    not given, as FlashInfer's does; SGLang passes it as the KV cache's dtype beside
    q_data_type. A kv dtype that then differs from q's is an fp8 cache, or refused by
    _plan_dtype."""
    if data_type is not None:
        q_data_type = data_type if q_data_type is None else q_data_type
        kv_data_type = data_type if kv_data_type is None else kv_data_type
    return ("float16" if q_data_type is None else q_data_type), kv_data_type


# FlashInfer 0.7's order of the decode plan's optional arguments given by position (a
# deprecated form there, which 0.7 still takes with a DeprecationWarning).
_LEGACY_POSITIONAL = ("pos_encoding_mode", "window_left", "logits_soft_cap", "q_data_type",
                      "kv_data_type", "o_data_type", "data_type", "sm_scale", "rope_scale",
                      "rope_theta", "non_blocking", "block_tables", "seq_lens", "fixed_split_size",
                      "disable_split_kv", "q_len_per_req")


# The library's paged plan names its arrays as the paged prefill does; the decode wrapper's
# caller gave them under FlashInfer's decode names (and, with q_len_per_req > 1, no qo_indptr).
_DECODE_NAMES = {"paged_kv_last_page_len": "last_page_len", "paged_kv_indptr": "indptr",
                 "paged_kv_indices": "indices"}
_CHUNK_NAMES = dict(_DECODE_NAMES, qo_indptr="q (batch x q_len_per_req rows), qo_indptr")
_CHUNK_NAMES["the plan's qo_indptr ends at"] = "batch x q_len_per_req is"  # q's rows (bind.cpp)


def _decode_names(chunks: bool):
    """Re-raises the native plan's and run's errors in the decode wrapper's argument names."""
    return _args.renamed(_CHUNK_NAMES if chunks else _DECODE_NAMES)


class BatchDecodeWithPagedKVCacheWrapper(BatchWrapperBase):
    """Batch decode: q [batch, Hq, D] against a paged cache given to run() as a (k, v) tuple
    or stacked [num_pages, 2, ...] (see BatchPrefillWithPagedKVCacheWrapper).
    float_workspace_buffer: as for BatchPrefillWithRaggedKVCacheWrapper.
    paged_kv_indptr_buffer, paged_kv_indices_buffer, paged_kv_last_page_len_buffer:
    FlashInfer's CUDA-graph buffers (1-D int32): under use_cuda_graph, as in FlashInfer,
    each plan() writes its arrays into them, paged_kv_last_page_len_buffer's length fixes
    the batch size, and paged_kv_indices_buffer's length sizes the wrapper's int workspace, so
    an sm80 wrapper's plans up to it keep a captured graph's arrays in place (where cudnn
    may plan, its page table also grows with the longest request); without it they are
    only kept (FlashInfer's eager plan() does not write them either). jit_args is refused."""

    _native_class = _C.BatchDecodePaged

    def __init__(self, float_workspace_buffer: Any, kv_layout: str = "NHD",
                 use_cuda_graph: bool = False, use_tensor_cores: bool = False,
                 paged_kv_indptr_buffer: Any = None, paged_kv_indices_buffer: Any = None,
                 paged_kv_last_page_len_buffer: Any = None, backend: str = "auto",
                 jit_args: Any = None) -> None:
        refuse_unsupported(jit_args=jit_args)
        super().__init__(float_workspace_buffer, kv_layout, use_cuda_graph, backend=backend)
        self._use_tensor_cores = bool(use_tensor_cores)  # a hint: the backend chooses its kernels
        self._q_len_per_req: Optional[int] = None  # the last successful plan's
        self._native_chunks = False  # self._native is a BatchPrefillPaged (q_len_per_req > 1)
        self._fast_plan_indices: Any = None  # set by fast_decode_plan for its plan() only
        self._take_index_buffers(
            dict(paged_kv_indptr_buffer=paged_kv_indptr_buffer,
                 paged_kv_indices_buffer=paged_kv_indices_buffer,
                 paged_kv_last_page_len_buffer=paged_kv_last_page_len_buffer),
            (("paged_kv_last_page_len_buffer", 0), ("paged_kv_indptr_buffer", 1)),
            "paged_kv_indices_buffer")

    @property
    def use_tensor_cores(self) -> bool:
        """FlashInfer's: the constructor's hint, kept for engines that read it back."""
        return self._use_tensor_cores

    def reset_workspace_buffer(self, float_workspace_buffer: Any,
                               int_workspace_buffer: Any = None) -> None:
        super().reset_workspace_buffer(float_workspace_buffer, int_workspace_buffer)
        self._native_chunks = False

    def plan(self, indptr: Any, indices: Any, last_page_len: Any, num_qo_heads: int,
             num_kv_heads: int, head_dim: int, page_size: int, *deprecated_positional_args: Any,
             **kwargs: Any) -> None:
        """FlashInfer 0.7's plan(): the arguments after page_size by keyword (see _plan_impl),
        or, deprecated there and here (a DeprecationWarning), by position in 0.7's order
        (_LEGACY_POSITIONAL: 0.7 put o_data_type before data_type)."""
        if deprecated_positional_args:
            if len(deprecated_positional_args) > len(_LEGACY_POSITIONAL):
                raise InvalidArgumentError(
                    f"plan: at most {len(_LEGACY_POSITIONAL)} optional arguments by position after "
                    f"page_size ({', '.join(_LEGACY_POSITIONAL)}); got {len(deprecated_positional_args)}")
            for name, value in zip(_LEGACY_POSITIONAL, deprecated_positional_args):
                if name in kwargs:
                    raise InvalidArgumentError(f"{name}: given both by position and by keyword")
                kwargs[name] = value
            warnings.warn("BatchDecodeWithPagedKVCacheWrapper.plan(): optional arguments by position "
                          "are deprecated (as in FlashInfer 0.7); pass them by keyword",
                          DeprecationWarning, stacklevel=2)
        self._plan_impl(indptr, indices, last_page_len, num_qo_heads, num_kv_heads, head_dim,
                        page_size, **kwargs)

    def _plan_impl(self, indptr: Any, indices: Any, last_page_len: Any, num_qo_heads: int,
                   num_kv_heads: int, head_dim: int, page_size: int, *,
                   window_left: int = -1, logits_soft_cap: Optional[float] = None,
             sm_scale: Optional[float] = None, q_data_type: Any = None,
             kv_data_type: Any = None, data_type: Any = None, return_lse: bool = False,
             num_pages: Optional[int] = None, pos_encoding_mode: str = "NONE",
             rope_scale: Optional[float] = None, rope_theta: Optional[float] = None,
             non_blocking: bool = True, q_len_per_req: int = 1, o_data_type: Any = None,
             window_right: int = 0, fixed_split_size: Optional[int] = None,
             disable_split_kv: bool = False, seq_lens: Any = None,
             block_tables: Any = None, is_causal: Optional[bool] = None) -> None:
        """q_data_type: float16 unless given here or through data_type, FlashInfer's older
        name for both q_data_type and kv_data_type (it fills those not given); float8_e4m3fn
        is fp8 attention, which needs o_data_type (as the paged prefill wrapper's plan()).
        q_len_per_req (FlashInfer's, for speculative decoding): each request's last
        q_len_per_req tokens query the cache, causally (bottom-right, as in prefill); q
        then has batch * q_len_per_req rows, and under use_cuda_graph the value is fixed by
        the first plan, as in FlashInfer. A request shorter than q_len_per_req leaves rows
        that see no key (0 and -inf, SPEC.md), where FlashInfer raises. return_lse, num_pages: flashband extensions, as in
        the paged prefill wrapper. o_data_type, fixed_split_size, disable_split_kv,
        seq_lens, block_tables: as for the paged prefill wrapper. window_right (FlashInfer's):
        with q_len_per_req > 1 it replaces the causal bound (keys up to p(i) + window_right;
        0, the default, is causal; -1 none), as FlashInfer's decode does; a single query per
        request sits on its last key, which no window_right >= 0 clips.
        is_causal (FlashInfer 0.7's): None, or what q_len_per_req gives (causal exactly when
        q_len_per_req > 1), as in FlashInfer."""
        refuse_unsupported(pos_encoding_mode=pos_encoding_mode, rope_scale=rope_scale, rope_theta=rope_theta,
                           fixed_split_size=fixed_split_size,
                           seq_lens=seq_lens, block_tables=block_tables)
        del non_blocking  # a scheduling hint: plan's copies are small and host-side
        q_len = _args.integer(q_len_per_req, "q_len_per_req", lo=1)
        window_right = _args.window_right(window_right)
        if is_causal is not None and _args.flag(is_causal, "is_causal") != (q_len > 1):
            raise UnsupportedError(
                f"is_causal: got {is_causal!r} with q_len_per_req {q_len}; flashband's decode mask "
                f"follows q_len_per_req (causal exactly when it is > 1, here {q_len > 1}), as FlashInfer's")
        num_qo_heads, num_kv_heads, head_dim = _args.heads(num_qo_heads, num_kv_heads, head_dim)
        page_size = _args.integer(page_size, "page_size")
        if self._use_cuda_graph and self._q_len_per_req not in (None, q_len):
            raise InvalidArgumentError(
                f"q_len_per_req: got {q_len}, but this use_cuda_graph wrapper was planned with "
                f"{self._q_len_per_req}, part of the captured shape; use a wrapper per value")
        q_data_type, kv_data_type = _with_data_type(q_data_type, kv_data_type, data_type)
        dtype, kv_dtype, o_dtype = self._plan_dtype(q_data_type, kv_data_type, head_dim, None, o_data_type)
        host_indptr = fw.host_int32(indptr, "indptr")
        batch = max(len(host_indptr) - 1, 0)
        if batch * q_len > _args.INT32_MAX:
            raise InvalidArgumentError(
                f"q_len_per_req: got {q_len}; with {batch} requests q would have {batch * q_len} rows, "
                f"past {_args.INT32_MAX} (2^31 - 1)")
        # fast_decode_plan gives no host page indices: the runs read the device array it names.
        device_indices = self._fast_plan_indices
        if device_indices is None:
            device_indices = self._page_index_buffer
            host_indices = fw.host_int32(_used_indices(indices, host_indptr), "indices")
            cache_pages = _num_pages(num_pages, host_indices, self._cache_pages, "indices")
        else:
            host_indices = None
            cache_pages = self._cache_pages if num_pages is None else _num_pages(num_pages, [])
        pages = (host_indptr, host_indices, fw.host_int32(last_page_len, "last_page_len"), page_size,
                 cache_pages)
        semantics = dict(window_left=window_left, logits_soft_cap=logits_soft_cap, sm_scale=sm_scale,
                         disable_split_kv=disable_split_kv)
        buffers = dict(paged_kv_indptr_buffer=host_indptr, paged_kv_indices_buffer=host_indices,
                       paged_kv_last_page_len_buffer=pages[2])
        heads = (num_qo_heads, num_kv_heads, head_dim, dtype)
        # q_len_per_req > 1 is a paged prefill with equal query chunks, causal unless
        # window_right says otherwise; the native
        # object changes only once that plan succeeds (a refused plan keeps the previous one).
        previous, previous_chunks = self._native, self._native_chunks
        if (q_len > 1) != self._native_chunks:
            self._native = _C.BatchPrefillPaged() if q_len > 1 else _C.BatchDecodePaged()
            self._native_chunks = q_len > 1
        if q_len == 1:
            args, sizes = pages + heads, plan_sizes(None, head_dim, host_indptr, self._longest())
        else:
            qo_indptr = (np.arange(batch + 1, dtype=np.int64) * q_len).astype(np.int32)
            args = (qo_indptr,) + pages + heads
            sizes = plan_sizes(qo_indptr, head_dim, host_indptr, self._longest())
            # FlashInfer's decode: window_right replaces the causal bound (SPEC.md).
            if window_right == 0:
                semantics["causal"] = True
            else:
                semantics["window_right"] = window_right
        with _decode_names(q_len > 1):
            try:
                self._do_plan(args, semantics, return_lse, num_qo_heads, sizes, buffers,
                              device_indices, dtypes=(kv_dtype, o_dtype))
            except Exception as e:
                if self._native is not previous and not _installed_anyway(e):
                    self._native, self._native_chunks = previous, previous_chunks
                raise
        self._q_len_per_req = q_len

    def workspace_size(self, indptr: Any, indices: Any, last_page_len: Any, num_qo_heads: int,
                       num_kv_heads: int, head_dim: int, page_size: int,
                       pos_encoding_mode: str = "NONE", window_left: int = -1,
                       logits_soft_cap: Optional[float] = None, q_data_type: Any = "float16",
                       kv_data_type: Any = None, o_data_type: Any = None, data_type: Any = None,
                       sm_scale: Optional[float] = None, rope_scale: Optional[float] = None,
                       rope_theta: Optional[float] = None, block_tables: Any = None,
                       seq_lens: Any = None, fixed_split_size: Optional[int] = None,
                       disable_split_kv: bool = False, q_len_per_req: int = 1) -> Tuple[int, int]:
        """FlashInfer 0.7's: (float_workspace_buffer bytes, int workspace bytes) that plan()
        with these arguments needs on this wrapper ((0, 0) on the host); plans nothing. As
        in FlashInfer, a use_cuda_graph wrapper's batch size and index buffers bound it.
        window_left, logits_soft_cap, sm_scale, disable_split_kv: checked as numbers and
        flags; flashband's sizes are worst cases over their values (plan() judges those)."""
        refuse_unsupported(pos_encoding_mode=pos_encoding_mode, rope_scale=rope_scale,
                           rope_theta=rope_theta, block_tables=block_tables, seq_lens=seq_lens,
                           fixed_split_size=fixed_split_size)
        make_options(window_left=window_left, logits_soft_cap=logits_soft_cap, sm_scale=sm_scale,
                     disable_split_kv=disable_split_kv)
        q_len = _args.integer(q_len_per_req, "q_len_per_req", lo=1)
        num_qo_heads, num_kv_heads, head_dim = _args.heads(num_qo_heads, num_kv_heads, head_dim)
        _args.integer(page_size, "page_size")
        q_data_type, kv_data_type = _with_data_type(q_data_type, kv_data_type, data_type)
        self._plan_dtype(q_data_type, kv_data_type, head_dim, None, o_data_type)
        host_indptr = fw.host_int32(indptr, "indptr")
        last = fw.host_int32(last_page_len, "last_page_len")
        batch = max(len(host_indptr) - 1, 0)
        self._check_index_buffers(dict(paged_kv_indptr_buffer=host_indptr, paged_kv_last_page_len_buffer=last,
                                       paged_kv_indices_buffer=_args.array(indices, "indices", 1)), batch)
        qo_indptr = None if q_len == 1 else np.arange(batch + 1, dtype=np.int64) * q_len
        sizes = plan_sizes(qo_indptr, head_dim, host_indptr, self._longest())
        return self._workspace_sizes(sizes, num_qo_heads, self._page_index_buffer)

    def run(self, q: Any, paged_kv_cache: Any, *, out: Any = None, lse: Any = None,
            return_lse: bool = False, q_scale: Any = None, k_scale: Any = None,
            v_scale: Any = None, enable_pdl: Optional[bool] = None,
            window_left: Optional[int] = None, sinks: Any = None,
            q_len_per_req: Optional[int] = None,
            skip_softmax_threshold_scale_factor: Optional[float] = None,
            kv_cache_sf: Any = None) -> Union[Any, Tuple[Any, Any]]:
        """q [batch * q_len_per_req, Hq, D]. out like q, or (out, lse [rows, Hq] float32,
        base 2). window_left, q_len_per_req (FlashInfer's older place for it): None or the
        plan's; enable_pdl: a launch hint, not used; skip_softmax_threshold_scale_factor and
        kv_cache_sf: None only. k_scale, v_scale: an fp8 cache's scales (kv_data_type given
        to plan), numbers or one-element float32 arrays on the run's device read when the
        kernel runs (a captured graph replays with their value then); with a 16-bit cache
        None or 1.0 only. q_scale: fp8 attention's q descale (a plan with q_data_type
        float8_e4m3fn), as k_scale; with 16-bit q None or 1.0 only. q and the cache must have
        the plan's q_data_type / kv_data_type, out its o_data_type (ValueError)."""
        del enable_pdl
        refuse_unsupported(skip_softmax_threshold_scale_factor=skip_softmax_threshold_scale_factor,
                           kv_cache_sf=kv_cache_sf)
        scales = self._run_scales(q_scale, k_scale, v_scale)
        if q_len_per_req is not None and _args.integer(q_len_per_req, "q_len_per_req", lo=None, hi=None) != (self._q_len_per_req or 1):
            raise UnsupportedError(
                f"q_len_per_req: run() got {q_len_per_req}, the plan's is {self._q_len_per_req or 1}; "
                "plan() again to change it")
        self._check_run_window(window_left)
        with _decode_names(self._native_chunks):
            return self._run(q, out, lse, return_lse, _paged_call(self, q, paged_kv_cache, scales), sinks)

    def forward(self, q: Any, paged_kv_cache: Any, pos_encoding_mode: str = "NONE",
                q_scale: Any = None, k_scale: Any = None, v_scale: Any = None,
                window_left: int = -1, logits_soft_cap: Optional[float] = None,
                sm_scale: Optional[float] = None, rope_scale: Optional[float] = None,
                rope_theta: Optional[float] = None, *, return_lse: bool = False) -> Any:
        """FlashInfer's deprecated run() that takes the settings (they replace the plan's,
        as in FlashInfer; a plan with other settings is re-planned); the scales go to run()."""
        self._run_scales(q_scale, k_scale, v_scale)  # judged before any re-plan
        with _decode_names(self._native_chunks):
            self._forward_settings(dict(window_left=window_left, logits_soft_cap=logits_soft_cap,
                                        sm_scale=sm_scale),
                                   pos_encoding_mode=pos_encoding_mode, rope_scale=rope_scale,
                                   rope_theta=rope_theta)
        return self.run(q, paged_kv_cache, q_scale=q_scale, k_scale=k_scale, v_scale=v_scale,
                        return_lse=return_lse)


def fast_decode_plan(self: BatchDecodeWithPagedKVCacheWrapper, indptr: Any, indices: Any,
                     last_page_len: Any, num_qo_heads: int, num_kv_heads: int, head_dim: int,
                     page_size: int, pos_encoding_mode: str = "NONE", window_left: int = -1,
                     logits_soft_cap: Optional[float] = None, q_data_type: Any = None,
                     kv_data_type: Any = None, data_type: Any = None,
                     sm_scale: Optional[float] = None, rope_scale: Optional[float] = None,
                     rope_theta: Optional[float] = None, non_blocking: bool = True,
                     fixed_split_size: Optional[int] = None, disable_split_kv: bool = False,
                     q_len_per_req: int = 1, global_override_indptr_cpu: Any = None, *,
                     num_pages: Optional[int] = None, return_lse: bool = False) -> None:
    """FlashInfer's fast_decode_plan (engines patch it in as the decode wrapper's plan for
    their CUDA-graph decode steps), with its meaning: the page indices are never read on
    the host. Under use_cuda_graph the engine has written them into the wrapper's
    paged_kv_indices_buffer, which the runs read as it is when they run (only its length is
    checked against `indices`); without it the runs read `indices`, a device array, itself.
    The plan needs indptr and last_page_len on the host (global_override_indptr_cpu spares
    the device-to-host copy of indptr, as in FlashInfer). Only backends that read page
    indices at run time serve it (sm80; auto takes it)."""
    host_indptr = fw.host_int32(indptr if global_override_indptr_cpu is None else global_override_indptr_cpu,
                                "indptr")
    used = int(host_indptr[-1]) if len(host_indptr) else 0
    if self._use_cuda_graph:
        device = self._page_index_buffer
        if device is None:
            raise UnsupportedError(
                "fast_decode_plan: under use_cuda_graph the wrapper needs paged_kv_indices_buffer, and a "
                "backend that reads it at run time (sm80 or auto): it holds the page table the runs read")
        if indices is not None and len(indices) > len(device):
            raise InvalidArgumentError(
                f"indices: has {len(indices)} entries, more than paged_kv_indices_buffer's {len(device)}")
    else:
        if indices is None or fw.device_of(indices)[0] != "cuda":
            raise InvalidArgumentError("indices: fast_decode_plan without use_cuda_graph reads the page "
                                       "indices on the device; give a CUDA array")
        device = indices[:used] if len(indices) > used else indices
    self._fast_plan_indices = device
    try:
        self.plan(host_indptr, None, last_page_len, num_qo_heads, num_kv_heads, head_dim, page_size,
                  window_left=window_left, logits_soft_cap=logits_soft_cap, sm_scale=sm_scale,
                  q_data_type=q_data_type, kv_data_type=kv_data_type, data_type=data_type,
                  return_lse=return_lse, num_pages=num_pages, pos_encoding_mode=pos_encoding_mode,
                  rope_scale=rope_scale, rope_theta=rope_theta, non_blocking=non_blocking,
                  q_len_per_req=q_len_per_req, fixed_split_size=fixed_split_size,
                  disable_split_kv=disable_split_kv)
    finally:
        self._fast_plan_indices = None

