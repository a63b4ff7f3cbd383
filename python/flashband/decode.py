"""Decode: one query per request over a paged KV cache (FlashInfer's ``flashinfer.decode``
names and arguments). Decode is prefill with qo_len = 1 and gives the same result."""

from __future__ import annotations

from typing import Any, Optional, Tuple, Union

from . import _C
from . import _frameworks as fw
from ._common import refuse_unsupported
from ._wrapper import BatchWrapperBase, plan_sizes
from .errors import InvalidArgumentError
from .prefill import _num_pages, _paged_call, single_prefill_with_kv_cache

__all__ = ["single_decode_with_kv_cache", "BatchDecodeWithPagedKVCacheWrapper"]


def single_decode_with_kv_cache(
    q: Any, k: Any, v: Any, *,
    kv_layout: str = "NHD",
    window_left: int = -1,
    logits_soft_cap: Optional[float] = None,
    sm_scale: Optional[float] = None,
    return_lse: bool = False,
    backend: str = "auto",
    pos_encoding_mode: str = "NONE",
    use_tensor_cores: bool = False,
    rope_scale: Optional[float] = None,
    rope_theta: Optional[float] = None,
) -> Union[Any, Tuple[Any, Any]]:
    """q [Hq, D]; k, v [kv_len, Hk, D] (NHD) or [Hk, kv_len, D] (HND). Returns out [Hq, D],
    or (out, lse [Hq]) when return_lse."""
    del use_tensor_cores  # a kernel-choice hint: the backend picks its decode kernel
    refuse_unsupported(pos_encoding_mode=pos_encoding_mode, rope_scale=rope_scale, rope_theta=rope_theta)
    if len(q.shape) != 2:
        raise InvalidArgumentError(f"q: decode expects [num_qo_heads, head_dim], got {tuple(q.shape)}")
    result = single_prefill_with_kv_cache(
        q[None], k, v, kv_layout=kv_layout, window_left=window_left,
        logits_soft_cap=logits_soft_cap, sm_scale=sm_scale, return_lse=return_lse,
        backend=backend)
    if return_lse:
        return result[0][0], result[1][0]
    return result[0]


def _with_data_type(q_data_type: Any, kv_data_type: Any, data_type: Any) -> Tuple[Any, Any]:
    """data_type fills q_data_type and kv_data_type where they are not given; one given as
    another dtype is an error, not overridden (the run would then refuse the tensors)."""
    if data_type is None:
        return ("float16" if q_data_type is None else q_data_type), kv_data_type
    wanted = fw.canonical_dtype(data_type, "data_type")
    for name, given in (("q_data_type", q_data_type), ("kv_data_type", kv_data_type)):
        if given is not None and fw.canonical_dtype(given, name) != wanted:
            raise InvalidArgumentError(
                f"data_type: {wanted} differs from {name} {fw.canonical_dtype(given, name)}; "
                "data_type is FlashInfer's older name for both, give one or the other")
    return wanted, wanted


class BatchDecodeWithPagedKVCacheWrapper(BatchWrapperBase):
    """Batch decode: q [batch, Hq, D] against a paged cache given to run() as a (k, v) tuple
    or stacked [num_pages, 2, ...] (see BatchPrefillWithPagedKVCacheWrapper).
    float_workspace_buffer: as for BatchPrefillWithRaggedKVCacheWrapper.
    paged_kv_indptr_buffer, paged_kv_indices_buffer, paged_kv_last_page_len_buffer:
    FlashInfer's CUDA-graph buffers (1-D int32): each plan() writes its arrays into them;
    under use_cuda_graph paged_kv_last_page_len_buffer's length fixes the batch size, as in
    FlashInfer, and paged_kv_indices_buffer's length sizes the wrapper's int workspace, so
    plans up to it keep a captured graph's arrays in place. jit_args is refused."""

    _native_class = _C.BatchDecodePaged

    def __init__(self, float_workspace_buffer: Any, kv_layout: str = "NHD",
                 use_cuda_graph: bool = False, use_tensor_cores: bool = False,
                 paged_kv_indptr_buffer: Any = None, paged_kv_indices_buffer: Any = None,
                 paged_kv_last_page_len_buffer: Any = None, backend: str = "auto",
                 jit_args: Any = None) -> None:
        del use_tensor_cores  # the backend chooses its kernels
        refuse_unsupported(jit_args=jit_args)
        super().__init__(float_workspace_buffer, kv_layout, use_cuda_graph, backend=backend)
        self._take_index_buffers(
            dict(paged_kv_indptr_buffer=paged_kv_indptr_buffer,
                 paged_kv_indices_buffer=paged_kv_indices_buffer,
                 paged_kv_last_page_len_buffer=paged_kv_last_page_len_buffer),
            (("paged_kv_last_page_len_buffer", 0), ("paged_kv_indptr_buffer", 1)),
            "paged_kv_indices_buffer")

    def plan(self, indptr: Any, indices: Any, last_page_len: Any, num_qo_heads: int,
             num_kv_heads: int, head_dim: int, page_size: int, *,
             window_left: int = -1, logits_soft_cap: Optional[float] = None,
             sm_scale: Optional[float] = None, q_data_type: Any = None,
             kv_data_type: Any = None, data_type: Any = None, return_lse: bool = False,
             num_pages: Optional[int] = None, pos_encoding_mode: str = "NONE",
             rope_scale: Optional[float] = None, rope_theta: Optional[float] = None,
             non_blocking: bool = True) -> None:
        """q_data_type: float16 unless given here or through data_type, FlashInfer's older
        name for both q_data_type and kv_data_type (given beside either, it must agree).
        return_lse, num_pages: flashband extensions, as in the paged prefill wrapper."""
        refuse_unsupported(pos_encoding_mode=pos_encoding_mode, rope_scale=rope_scale, rope_theta=rope_theta)
        del non_blocking  # a scheduling hint: plan's copies are small and host-side
        q_data_type, kv_data_type = _with_data_type(q_data_type, kv_data_type, data_type)
        dtype = self._plan_dtype(q_data_type, kv_data_type, head_dim, None)
        host_indices = fw.host_int32(indices, "indices")
        host_indptr = fw.host_int32(indptr, "indptr")
        args = (host_indptr, host_indices,
                fw.host_int32(last_page_len, "last_page_len"), page_size,
                _num_pages(num_pages, host_indices, self._cache_pages), num_qo_heads, num_kv_heads,
                head_dim, dtype)
        self._do_plan(args, dict(window_left=window_left, logits_soft_cap=logits_soft_cap,
                                 sm_scale=sm_scale), return_lse, num_qo_heads,
                      plan_sizes(None, head_dim, host_indptr),
                      dict(paged_kv_indptr_buffer=host_indptr, paged_kv_indices_buffer=host_indices,
                           paged_kv_last_page_len_buffer=args[2]))

    def run(self, q: Any, paged_kv_cache: Any, *, out: Any = None, lse: Any = None,
            return_lse: bool = False, q_scale: Any = None, k_scale: Any = None,
            v_scale: Any = None) -> Union[Any, Tuple[Any, Any]]:
        """out [batch, Hq, D], or (out, lse [batch, Hq] float32, base 2)."""
        refuse_unsupported(q_scale=q_scale, k_scale=k_scale, v_scale=v_scale)
        return self._run(q, out, lse, return_lse, _paged_call(self, q, paged_kv_cache))
