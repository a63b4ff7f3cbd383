"""Prefill: single request, and batches over a ragged or a paged KV cache (FlashInfer's
``flashinfer.prefill`` names and arguments).

Every tensor may come from any DLPack framework (torch, NumPy, CuPy); nothing is copied.
Work runs on the tensors' device and, for GPU tensors, on the caller's current stream.
Arguments take FlashInfer 0.7.2's positional order (scripts/flashinfer_args.py compares
it); flashband's own (out, lse, a plan's return_lse and num_pages) are keyword-only.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple, Union

import numpy as np

from . import _C
from . import _args
from . import _fp8_attention
from . import _frameworks as fw
from ._common import kv_scales, make_options, outputs, record, refuse_unsupported
from ._custom_mask import packed_mask
from ._paged import paged_kv_lens
from ._wrapper import BatchWrapperBase, plan_sizes
from .errors import InvalidArgumentError, UnsupportedError

__all__ = [
    "single_prefill_with_kv_cache",
    "single_prefill_with_kv_cache_return_lse",
    "BatchPrefillWithRaggedKVCacheWrapper",
    "BatchPrefillWithPagedKVCacheWrapper",
]


def single_prefill_with_kv_cache(
    q: Any, k: Any, v: Any, scale_q: Any = None, scale_k: Any = None, scale_v: Any = None,
    o_dtype: Any = None, custom_mask: Any = None, packed_custom_mask: Any = None,
    causal: bool = False, kv_layout: str = "NHD", pos_encoding_mode: str = "NONE",
    use_fp16_qk_reduction: bool = False, sm_scale: Optional[float] = None, window_left: int = -1,
    logits_soft_cap: Optional[float] = None, rope_scale: Optional[float] = None,
    rope_theta: Optional[float] = None, backend: str = "auto", return_lse: bool = False,
    kv_cache_sf: Any = None, k_scale: Any = None, v_scale: Any = None, *, window_right: int = -1, sinks: Any = None,
    out: Any = None,
    lse: Any = None,
) -> Union[Any, Tuple[Any, Any]]:
    """Attention of one request: q [qo_len, Hq, D], k and v [kv_len, Hk, D] (NHD) or
    [Hk, kv_len, D] (HND). Returns out [qo_len, Hq, D] (q's dtype), or (out, lse) with lse
    [qo_len, Hq] float32 base-2 when return_lse. Causal masking is bottom-right aligned;
    window_left >= 0 keeps keys p(i) - window_left .., window_right >= 0 keys .. p(i) +
    window_right (a flashband extension; causal is window_right 0, so with causal=True only
    -1 and 0 are taken; SPEC.md). sinks: float32 [Hq] attention sinks (SPEC.md; a flashband
    extension here: FlashInfer takes them on the paged wrappers' run()).
    custom_mask: bool [qo_len, kv_len] (False hides key j from row i), or packed_custom_mask:
    its bits packed as packbits(custom_mask.reshape(-1), bitorder="little") (SPEC.md "Custom
    masks"; both given, they must agree); ANDed with the window; causal=True beside a mask
    raises (FlashInfer ignores causal there: put the causal bits into the mask).

    out/lse: written in place when given, else allocated like q (lse only with return_lse);
    the result is (out, lse) only with return_lse, as FlashInfer's.
    use_fp16_qk_reduction=True and rope_scale/rope_theta (RoPE is not in the contract) raise
    UnsupportedError: flashband always accumulates QK in float32. o_dtype: None or q's dtype;
    kv_cache_sf (fp4 scale factors): None only.

    fp8 KV (FlashInfer 0.7.2's per-tensor names): k and v of dtype float8_e4m3fn or
    float8_e5m2 (torch's, or ml_dtypes' for NumPy) with q fp16/bf16, dequantized as they are
    read: logits sm_scale * k_scale * (q . k8), output v_scale * (P . v8); each scale a
    number or a one-element float32 array on q's device (read when the kernel runs).

    fp8 attention (SPEC.md "fp8 attention"; chosen by q's dtype alone): q, k and v all
    float8_e4m3fn, logits sm_scale * q_scale * k_scale * (q8 . k8), P quantized to e4m3 for
    P . v8; approximate by design (SPEC.md states its bound). Descales: scale_q, and scale_k /
    scale_v or k_scale / v_scale (one of each pair), each a number or a one-element float32
    array; FlashInfer's per-head scale_q / scale_k / scale_v ([num_qo_heads] / [num_kv_heads])
    are refused (per-tensor only). The output is float16 or bfloat16 and must be named, by
    o_dtype or by out's dtype (FlashInfer 0.7.2 defaults o_dtype to q's, an fp8 output,
    which flashband does not write). With 16-bit q, scale_q / scale_k / scale_v are None or
    1.0 only and o_dtype None or q's dtype.
    """
    refuse_unsupported(pos_encoding_mode=pos_encoding_mode, use_fp16_qk_reduction=use_fp16_qk_reduction,
                       rope_scale=rope_scale, rope_theta=rope_theta, kv_cache_sf=kv_cache_sf)
    _check_qkv(q, k, v)
    kv_len = int(k.shape[0 if kv_layout == "NHD" else 1])
    mask, _ = packed_mask(custom_mask, packed_custom_mask, np.array([q.shape[0]]), np.array([kv_len]))
    if _args.dtype_name(q) in fw.FP8_Q_DTYPES:
        scales = _fp8_attention.single_scales(scale_q, scale_k, scale_v, k_scale, v_scale)
        o_dtype = _fp8_attention.single_output_dtype(o_dtype, out)
    else:
        refuse_unsupported(scale_q=scale_q, scale_k=scale_k, scale_v=scale_v)
        scales = kv_scales(k_scale, v_scale, fp8=_args.dtype_name(k) in fw.FP8_DTYPES)
        if o_dtype is not None and fw.canonical_dtype(o_dtype, "o_dtype", fp8=fw.FP8_DTYPES) != fw.dtype_name(q):
            raise UnsupportedError(f"o_dtype: {o_dtype} differs from q's {fw.dtype_name(q)}; flashband writes "
                                   "outputs in q's dtype (another is fp8 attention's, with float8_e4m3fn q)")
        o_dtype = None
    heads = q.shape[1]
    write_lse = return_lse or lse is not None  # a given lse is written, as in the batch wrappers
    out, lse = outputs(q, out, lse, write_lse, heads, o_dtype)
    opts = make_options(causal=causal, window_left=window_left, window_right=window_right,
                        logits_soft_cap=logits_soft_cap,
                        sm_scale=sm_scale, return_lse=write_lse, kv_layout=kv_layout,
                        backend=backend, stream=fw.current_stream(q), sinks=sinks is not None,
                        custom_mask=mask is not None)
    workspace = None
    device, _ = fw.device_of(q)
    if device == "cuda":  # room for a split-KV plan; the caching allocator makes this cheap
        nbytes = _C.batch_workspace_bytes(1, q.shape[0], heads, q.shape[2], "cuda")
        if nbytes > 0:
            workspace = fw.empty(q, (nbytes,), "uint8")
    n = fw.native
    (q_in, q_dtype), (k_bytes, kv_dtype), (v_bytes, v_dtype) = map(fw.native_and_format, (q, k, v))
    if kv_dtype != v_dtype:
        raise InvalidArgumentError(f"v: dtype {fw.dtype_name(v)}, expected k's {fw.dtype_name(k)}")
    with fw.device_guard(q):
        record(_C.single_prefill(q_in, k_bytes, v_bytes, n(out), n(lse), opts, n(workspace), kv_dtype=kv_dtype,
                                 sinks=n(sinks), custom_mask=n(mask), q_dtype=q_dtype, **scales))
    return (out, lse) if return_lse else out


def _check_qkv(q: Any, k: Any, v: Any) -> None:
    """q [tokens, Hq, D], k and v of rank 3 (either layout), all of a float dtype (fp8 ones
    where SPEC.md takes them: K/V e4m3 or e5m2, q e4m3)."""
    _args.fp8_array(q, "q", 3, "[tokens, num_qo_heads, head_dim]", _args.Q_DTYPES)
    for x, name in ((k, "k"), (v, "v")):
        _args.fp8_array(x, name, 3, "[kv_len, num_kv_heads, head_dim] (NHD) or [num_kv_heads, kv_len, head_dim] (HND)")


def single_prefill_with_kv_cache_return_lse(q: Any, k: Any, v: Any, *args: Any,
                                            **kwargs: Any) -> Tuple[Any, Any]:
    """single_prefill_with_kv_cache(..., return_lse=True), positional arguments included."""
    return single_prefill_with_kv_cache(q, k, v, *args, return_lse=True, **kwargs)


class BatchPrefillWithRaggedKVCacheWrapper(BatchWrapperBase):
    """Batch prefill over a ragged (CSR) KV: request b's queries are rows
    qo_indptr[b]..qo_indptr[b+1] of q [nnz_qo, Hq, D], its keys rows kv_indptr[b].. of
    k, v [nnz_kv, Hk, D] (NHD) or [Hk, nnz_kv, D] (HND).

    float_workspace_buffer: any contiguous array on the device the batch runs on (e.g.
    torch.empty(128 << 20, dtype=torch.uint8, device="cuda")), at least
    batch_workspace_bytes(...) bytes, for the runs' scratch; it must outlive the runs of a
    plan, and wrappers whose runs are ordered on one stream may share it. The plan's own
    arrays go to the wrapper's int workspace (reset_workspace_buffer).
    qo_indptr_buf, kv_indptr_buf: FlashInfer's CUDA-graph buffers (1-D int32): under
    use_cuda_graph, as in FlashInfer, each plan() writes its arrays into them and
    qo_indptr_buf's length fixes the batch size; without it they are only kept (FlashInfer's
    eager plan() does not write them either). custom_mask_buf, mask_indptr_buf: FlashInfer's
    mask buffers (a 1-D uint8 and a 1-D int32 array): under use_cuda_graph a masked plan()
    writes its packed bits and byte offsets into them and the runs read the bits there, so a
    graph replays over bits rewritten in place; a masked plan without them raises there.
    jit_args are refused (no JIT variants).
    """

    _native_class = _C.BatchPrefillRagged

    def __init__(self, float_workspace_buffer: Any, kv_layout: str = "NHD",
                 use_cuda_graph: bool = False, qo_indptr_buf: Any = None,
                 kv_indptr_buf: Any = None, custom_mask_buf: Any = None,
                 mask_indptr_buf: Any = None, backend: str = "auto", jit_args: Any = None,
                 jit_kwargs: Any = None, variant_owns_mask: bool = False) -> None:
        refuse_unsupported(jit_args=jit_args, jit_kwargs=jit_kwargs, variant_owns_mask=variant_owns_mask)
        super().__init__(float_workspace_buffer, kv_layout, use_cuda_graph, backend=backend)
        self._take_index_buffers(dict(qo_indptr_buf=qo_indptr_buf, kv_indptr_buf=kv_indptr_buf),
                                 (("qo_indptr_buf", 1), ("kv_indptr_buf", 1)))
        self._take_mask_buffers(custom_mask_buf, mask_indptr_buf)

    def plan(self, qo_indptr: Any, kv_indptr: Any, num_qo_heads: int, num_kv_heads: int,
             head_dim_qk: int, head_dim_vo: Optional[int] = None, custom_mask: Any = None,
             packed_custom_mask: Any = None, causal: bool = False, pos_encoding_mode: str = "NONE",
             use_fp16_qk_reduction: bool = False, window_left: int = -1,
             logits_soft_cap: Optional[float] = None, sm_scale: Optional[float] = None,
             rope_scale: Optional[float] = None, rope_theta: Optional[float] = None,
             q_data_type: Any = "float16", kv_data_type: Any = None, o_data_type: Any = None,
             non_blocking: bool = True, prefix_len_ptr: Any = None,
             token_pos_in_items_ptr: Any = None, token_pos_in_items_len: int = 0,
             max_item_len_ptr: Any = None, fixed_split_size: Optional[int] = None,
             disable_split_kv: bool = False, seq_lens: Any = None, seq_lens_q: Any = None,
             max_token_per_sequence: Optional[int] = None, max_sequence_kv: Optional[int] = None,
             v_indptr: Any = None, o_indptr: Any = None, *, return_lse: bool = False,
             window_right: int = -1) -> None:
        """Host work for a batch (index arrays may live on any device; they are copied to the
        host). custom_mask (bool, every request's [qo_len, kv_len] flattened row-major, the
        requests concatenated) or packed_custom_mask (uint8, segment_packbits(custom_mask,
        qo_len * kv_len indptr, bitorder="little")): FlashInfer's, SPEC.md "Custom masks"; both
        given, they must agree; causal=True beside one raises (put the causal bits in the mask).
        window_right (flashband extension; FlashInfer's prefill has none): keys up to
        p(i) + window_right, -1 none; with causal=True only -1 and 0 (SPEC.md). return_lse (flashband extension): plan for runs that return LSE; a run that
        differs re-plans once, so say it here to keep plan() off the run path.
        q_data_type float8_e4m3fn is fp8 attention (SPEC.md): kv_data_type then float8_e4m3fn
        (its default, as FlashInfer's) and o_data_type float16 or bfloat16, required (FlashInfer
        defaults it to q's, an fp8 output flashband does not write); run() takes q_scale.
        With 16-bit q, o_data_type is q's dtype or None. fixed_split_size: None or -1 only; disable_split_kv:
        no split-KV (one pass over each row's keys; cudnn refuses it). FlashInfer's
        multi-item scoring arguments (prefix_len_ptr, ...) are taken at their neutral values
        only; FlashInfer 0.7's cuDNN inputs (seq_lens, seq_lens_q, max_token_per_sequence,
        max_sequence_kv, v_indptr, o_indptr) as None only: the lengths come from the indptrs."""
        refuse_unsupported(pos_encoding_mode=pos_encoding_mode, use_fp16_qk_reduction=use_fp16_qk_reduction,
                           rope_scale=rope_scale, rope_theta=rope_theta,
                           fixed_split_size=fixed_split_size, prefix_len_ptr=prefix_len_ptr,
                           token_pos_in_items_ptr=token_pos_in_items_ptr,
                           token_pos_in_items_len=token_pos_in_items_len,
                           max_item_len_ptr=max_item_len_ptr, seq_lens=seq_lens,
                           seq_lens_q=seq_lens_q, max_token_per_sequence=max_token_per_sequence,
                           max_sequence_kv=max_sequence_kv, v_indptr=v_indptr, o_indptr=o_indptr)
        del non_blocking  # a scheduling hint: plan's copies are small and host-side
        dtype, kv_dtype, o_dtype = self._plan_dtype(q_data_type, kv_data_type, head_dim_qk, head_dim_vo, o_data_type)
        num_qo_heads, num_kv_heads, head_dim_qk = _args.heads(num_qo_heads, num_kv_heads, head_dim_qk, "head_dim_qk")
        qo = fw.host_int32(qo_indptr, "qo_indptr")
        kv = fw.host_int32(kv_indptr, "kv_indptr")
        args = (qo, kv, num_qo_heads, num_kv_heads, head_dim_qk, dtype)
        mask, byte_indptr = packed_mask(custom_mask, packed_custom_mask, np.diff(qo), np.diff(kv))
        target = self._mask_target(mask, byte_indptr)
        self._do_plan(args, dict(causal=causal, window_left=window_left, window_right=window_right,
                                 logits_soft_cap=logits_soft_cap, sm_scale=sm_scale,
                                 disable_split_kv=disable_split_kv, custom_mask=mask is not None),
                      return_lse, num_qo_heads, plan_sizes(qo, head_dim_qk),
                      dict(qo_indptr_buf=qo, kv_indptr_buf=kv), dtypes=(kv_dtype, o_dtype))
        self._store_mask(mask, target, byte_indptr)

    def run(self, q: Any, k: Any, v: Any, *, out: Any = None, lse: Any = None,
            return_lse: bool = False, enable_pdl: Optional[bool] = None,
            window_left: Optional[int] = None, sinks: Any = None, q_scale: Any = None,
            k_scale: Any = None, v_scale: Any = None,
            o_scale: Any = None, lse_base: str = "log2", lse_layout: str = "NH",
            kv_cache_sf: Any = None) -> Union[Any, Tuple[Any, Any]]:
        """out [nnz_qo, Hq, D], or (out, lse [nnz_qo, Hq] float32, base 2). lse_base "ln"
        (natural log) and lse_layout "HN" ([Hq, nnz_qo]) as in FlashInfer 0.7, for any lse
        written. window_left: None or the plan's; enable_pdl: a launch hint (no effect on
        results), not used; kv_cache_sf (fp4): None only.
        k_scale, v_scale: an fp8 cache's dequantization scales (kv_data_type given to plan):
        numbers or one-element float32 arrays on the run's device, read when the kernel
        runs; with a 16-bit cache None or 1.0 only. q_scale: fp8 attention's q descale (a
        plan with q_data_type float8_e4m3fn), a number or one-element float32 array as
        k_scale; with 16-bit q None or 1.0 only. o_scale: None or 1.0 only. q, k and v must
        have the plan's q_data_type / kv_data_type, out its o_data_type (ValueError otherwise)."""
        del enable_pdl
        refuse_unsupported(o_scale=o_scale, kv_cache_sf=kv_cache_sf)
        scales = self._run_scales(q_scale, k_scale, v_scale)
        self._check_run_window(window_left)
        _check_qkv(q, k, v)
        n = fw.native
        (q_in, q_dtype), (k_bytes, kv_dtype), (v_bytes, _) = map(fw.native_and_format, (q, k, v))
        return self._run(q, out, lse, return_lse,
                         lambda o, l, s: self._native.run(q_in, k_bytes, v_bytes, n(o), n(l),
                                                          stream=fw.current_stream(q), kv_dtype=kv_dtype,
                                                          sinks=n(s), custom_mask=n(self._mask_bits),
                                                          q_dtype=q_dtype, **scales),
                         sinks, lse_base, lse_layout)

    def forward(self, q: Any, k: Any, v: Any, causal: bool = False,
                pos_encoding_mode: str = "NONE", use_fp16_qk_reduction: bool = False,
                window_left: int = -1, logits_soft_cap: Optional[float] = None,
                sm_scale: Optional[float] = None, rope_scale: Optional[float] = None,
                rope_theta: Optional[float] = None, *, return_lse: bool = False) -> Any:
        """FlashInfer's deprecated run() that takes the settings (they replace the plan's,
        as in FlashInfer; a plan with other settings is re-planned)."""
        self._forward_settings(dict(causal=causal, window_left=window_left,
                                    logits_soft_cap=logits_soft_cap, sm_scale=sm_scale),
                               pos_encoding_mode=pos_encoding_mode,
                               use_fp16_qk_reduction=use_fp16_qk_reduction,
                               rope_scale=rope_scale, rope_theta=rope_theta)
        return self.run(q, k, v, return_lse=return_lse)


class BatchPrefillWithPagedKVCacheWrapper(BatchWrapperBase):
    """Batch prefill over a paged KV cache: k and v [num_pages, page_size, Hk, D] (NHD) or
    [num_pages, Hk, page_size, D] (HND), given to run() as a (k, v) tuple or stacked
    [num_pages, 2, ...]. Request b's pages are
    paged_kv_indices[paged_kv_indptr[b] : paged_kv_indptr[b+1]], its last page holding
    paged_kv_last_page_len[b] tokens.
    float_workspace_buffer: as for BatchPrefillWithRaggedKVCacheWrapper.
    qo_indptr_buf, paged_kv_indptr_buf, paged_kv_indices_buf, paged_kv_last_page_len_buf:
    FlashInfer's CUDA-graph buffers, as the ragged wrapper's; under use_cuda_graph
    paged_kv_indices_buf's length also sizes the wrapper's int workspace, as the decode
    wrapper's does."""

    _native_class = _C.BatchPrefillPaged

    def __init__(self, float_workspace_buffer: Any, kv_layout: str = "NHD",
                 use_cuda_graph: bool = False, qo_indptr_buf: Any = None,
                 paged_kv_indptr_buf: Any = None, paged_kv_indices_buf: Any = None,
                 paged_kv_last_page_len_buf: Any = None, custom_mask_buf: Any = None,
                 mask_indptr_buf: Any = None, backend: str = "auto", jit_args: Any = None,
                 jit_kwargs: Any = None, variant_owns_mask: bool = False) -> None:
        refuse_unsupported(jit_args=jit_args, jit_kwargs=jit_kwargs, variant_owns_mask=variant_owns_mask)
        super().__init__(float_workspace_buffer, kv_layout, use_cuda_graph, backend=backend)
        self._take_index_buffers(
            dict(qo_indptr_buf=qo_indptr_buf, paged_kv_indptr_buf=paged_kv_indptr_buf,
                 paged_kv_indices_buf=paged_kv_indices_buf,
                 paged_kv_last_page_len_buf=paged_kv_last_page_len_buf),
            (("qo_indptr_buf", 1), ("paged_kv_indptr_buf", 1), ("paged_kv_last_page_len_buf", 0)),
            "paged_kv_indices_buf")
        self._take_mask_buffers(custom_mask_buf, mask_indptr_buf)

    def plan(self, qo_indptr: Any, paged_kv_indptr: Any, paged_kv_indices: Any,
             paged_kv_last_page_len: Any, num_qo_heads: int, num_kv_heads: int, head_dim_qk: int,
             page_size: int, head_dim_vo: Optional[int] = None, custom_mask: Any = None,
             packed_custom_mask: Any = None, causal: bool = False, pos_encoding_mode: str = "NONE",
             use_fp16_qk_reduction: bool = False, sm_scale: Optional[float] = None,
             window_left: int = -1, logits_soft_cap: Optional[float] = None,
             rope_scale: Optional[float] = None, rope_theta: Optional[float] = None,
             q_data_type: Any = "float16", kv_data_type: Any = None, o_data_type: Any = None,
             non_blocking: bool = True, prefix_len_ptr: Any = None,
             token_pos_in_items_ptr: Any = None, token_pos_in_items_len: int = 0,
             max_item_len_ptr: Any = None, seq_lens: Any = None, seq_lens_q: Any = None,
             block_tables: Any = None, max_token_per_sequence: Optional[int] = None,
             max_sequence_kv: Optional[int] = None, fixed_split_size: Optional[int] = None,
             disable_split_kv: bool = False, *, return_lse: bool = False,
             num_pages: Optional[int] = None, window_right: int = -1) -> None:
        """custom_mask, packed_custom_mask, window_right: as for the ragged wrapper. num_pages (flashband extension): pages in the cache, to check the indices at plan
        time; by default max(paged_kv_indices) + 1, and run() checks them against the cache.
        q_data_type, o_data_type, fixed_split_size, disable_split_kv: as for the ragged wrapper;
        seq_lens, seq_lens_q, block_tables, max_token_per_sequence and max_sequence_kv
        (FlashInfer's trtllm-gen/cuDNN inputs) are taken as None only, the multi-item
        scoring arguments at their neutral values."""
        refuse_unsupported(pos_encoding_mode=pos_encoding_mode, use_fp16_qk_reduction=use_fp16_qk_reduction,
                           rope_scale=rope_scale, rope_theta=rope_theta,
                           fixed_split_size=fixed_split_size,
                           seq_lens=seq_lens, block_tables=block_tables, seq_lens_q=seq_lens_q,
                           max_token_per_sequence=max_token_per_sequence,
                           max_sequence_kv=max_sequence_kv, prefix_len_ptr=prefix_len_ptr,
                           token_pos_in_items_ptr=token_pos_in_items_ptr,
                           token_pos_in_items_len=token_pos_in_items_len,
                           max_item_len_ptr=max_item_len_ptr)
        del non_blocking  # a scheduling hint: plan's copies are small and host-side
        dtype, kv_dtype, o_dtype = self._plan_dtype(q_data_type, kv_data_type, head_dim_qk, head_dim_vo, o_data_type)
        num_qo_heads, num_kv_heads, head_dim_qk = _args.heads(num_qo_heads, num_kv_heads, head_dim_qk, "head_dim_qk")
        page_size = _args.integer(page_size, "page_size")
        qo = fw.host_int32(qo_indptr, "qo_indptr")
        indptr = fw.host_int32(paged_kv_indptr, "paged_kv_indptr")
        indices = fw.host_int32(_used_indices(paged_kv_indices, indptr), "paged_kv_indices")
        last = fw.host_int32(paged_kv_last_page_len, "paged_kv_last_page_len")
        args = (qo, indptr, indices, last, page_size, _num_pages(num_pages, indices, self._cache_pages),
                num_qo_heads, num_kv_heads, head_dim_qk, dtype)
        mask, byte_indptr = packed_mask(custom_mask, packed_custom_mask, np.diff(qo),
                                        paged_kv_lens(indptr, last, page_size))
        target = self._mask_target(mask, byte_indptr)
        self._do_plan(args, dict(causal=causal, window_left=window_left, window_right=window_right,
                                 logits_soft_cap=logits_soft_cap, sm_scale=sm_scale,
                                 disable_split_kv=disable_split_kv, custom_mask=mask is not None),
                      return_lse, num_qo_heads,
                      plan_sizes(qo, head_dim_qk, indptr, self._longest()),
                      dict(qo_indptr_buf=qo, paged_kv_indptr_buf=indptr,
                           paged_kv_indices_buf=indices, paged_kv_last_page_len_buf=last),
                      self._page_index_buffer, dtypes=(kv_dtype, o_dtype))
        self._store_mask(mask, target, byte_indptr)

    def workspace_size(self, qo_indptr: Any, paged_kv_indptr: Any, paged_kv_indices: Any,
                       paged_kv_last_page_len: Any, num_qo_heads: int, num_kv_heads: int,
                       head_dim_qk: int, page_size: int, head_dim_vo: Optional[int] = None,
                       custom_mask: Any = None, packed_custom_mask: Any = None,
                       causal: bool = False, pos_encoding_mode: str = "NONE",
                       use_fp16_qk_reduction: bool = False, sm_scale: Optional[float] = None,
                       window_left: int = -1, logits_soft_cap: Optional[float] = None,
                       rope_scale: Optional[float] = None, rope_theta: Optional[float] = None,
                       q_data_type: Any = "float16", kv_data_type: Any = None,
                       o_data_type: Any = None, prefix_len_ptr: Any = None,
                       token_pos_in_items_ptr: Any = None, token_pos_in_items_len: int = 0,
                       max_item_len_ptr: Any = None, seq_lens: Any = None,
                       seq_lens_q: Any = None, block_tables: Any = None,
                       max_token_per_sequence: Optional[int] = None,
                       max_sequence_kv: Optional[int] = None,
                       fixed_split_size: Optional[int] = None,
                       disable_split_kv: bool = False) -> Tuple[int, int]:
        """FlashInfer 0.7's: (float_workspace_buffer bytes, int workspace bytes) that plan()
        with these arguments needs on this wrapper ((0, 0) on the host); plans nothing. As
        the decode wrapper's, bounded by a use_cuda_graph wrapper's index buffers; causal,
        window_left, logits_soft_cap, sm_scale, disable_split_kv: checked as flags and
        numbers, the sizes being worst cases over their values (plan() judges those).
        custom_mask / packed_custom_mask: checked against the lengths as plan() checks them;
        no workspace bytes depend on them (the runs read the bits from the caller's array)."""
        refuse_unsupported(pos_encoding_mode=pos_encoding_mode, use_fp16_qk_reduction=use_fp16_qk_reduction,
                           rope_scale=rope_scale, rope_theta=rope_theta, prefix_len_ptr=prefix_len_ptr,
                           token_pos_in_items_ptr=token_pos_in_items_ptr,
                           token_pos_in_items_len=token_pos_in_items_len,
                           max_item_len_ptr=max_item_len_ptr, seq_lens=seq_lens, seq_lens_q=seq_lens_q,
                           block_tables=block_tables, max_token_per_sequence=max_token_per_sequence,
                           max_sequence_kv=max_sequence_kv, fixed_split_size=fixed_split_size)
        make_options(causal=causal, window_left=window_left, logits_soft_cap=logits_soft_cap,
                     sm_scale=sm_scale, disable_split_kv=disable_split_kv)
        self._plan_dtype(q_data_type, kv_data_type, head_dim_qk, head_dim_vo, o_data_type)
        num_qo_heads, num_kv_heads, head_dim_qk = _args.heads(num_qo_heads, num_kv_heads, head_dim_qk, "head_dim_qk")
        _args.integer(page_size, "page_size")
        qo = fw.host_int32(qo_indptr, "qo_indptr")
        indptr = fw.host_int32(paged_kv_indptr, "paged_kv_indptr")
        last = fw.host_int32(paged_kv_last_page_len, "paged_kv_last_page_len")
        packed_mask(custom_mask, packed_custom_mask, np.diff(qo), paged_kv_lens(indptr, last, _args.integer(page_size, "page_size")))
        sizes = plan_sizes(qo, head_dim_qk, indptr, self._longest())
        self._check_index_buffers(dict(qo_indptr_buf=qo, paged_kv_indptr_buf=indptr, paged_kv_last_page_len_buf=last,
                                       paged_kv_indices_buf=_args.array(paged_kv_indices, "paged_kv_indices", 1)),
                                  sizes[0])
        return self._workspace_sizes(sizes, num_qo_heads, self._page_index_buffer)

    def run(self, q: Any, paged_kv_cache: Any, *, out: Any = None, lse: Any = None,
            return_lse: bool = False, q_scale: Any = None, k_scale: Any = None,
            v_scale: Any = None, enable_pdl: Optional[bool] = None,
            window_left: Optional[int] = None, sinks: Any = None,
            skip_softmax_threshold_scale_factor: Optional[float] = None,
            kv_cache_sf: Any = None, lse_base: str = "log2", lse_layout: str = "NH",
            use_fp16_softmax: Optional[bool] = None,
            uses_spcompress: Optional[bool] = None) -> Union[Any, Tuple[Any, Any]]:
        """As the ragged wrapper's run() (q_scale, k_scale, v_scale included). FlashInfer's
        approximations and fp4 inputs (skip_softmax_threshold_scale_factor, kv_cache_sf) are
        taken as None only, its trtllm-gen cubin choices (use_fp16_softmax, uses_spcompress)
        as None or False."""
        del enable_pdl  # a launch hint (no effect on results)
        refuse_unsupported(skip_softmax_threshold_scale_factor=skip_softmax_threshold_scale_factor,
                           kv_cache_sf=kv_cache_sf, use_fp16_softmax=use_fp16_softmax,
                           uses_spcompress=uses_spcompress)
        scales = self._run_scales(q_scale, k_scale, v_scale)
        self._check_run_window(window_left)
        return self._run(q, out, lse, return_lse, _paged_call(self, q, paged_kv_cache, scales),
                         sinks, lse_base, lse_layout)

    def forward(self, q: Any, paged_kv_cache: Any, causal: bool = False,
                pos_encoding_mode: str = "NONE", use_fp16_qk_reduction: bool = False,
                k_scale: Any = None, v_scale: Any = None, window_left: int = -1,
                logits_soft_cap: Optional[float] = None, sm_scale: Optional[float] = None,
                rope_scale: Optional[float] = None, rope_theta: Optional[float] = None, *,
                return_lse: bool = False) -> Any:
        """As the ragged wrapper's forward(); k_scale, v_scale as run()'s (they go to the run,
        which dequantizes an fp8 cache with them and refuses others than 1.0 on a 16-bit one)."""
        kv_scales(k_scale, v_scale, fp8=self._kv_data_type is not None)  # judged before any re-plan
        self._forward_settings(dict(causal=causal, window_left=window_left,
                                    logits_soft_cap=logits_soft_cap, sm_scale=sm_scale),
                               pos_encoding_mode=pos_encoding_mode,
                               use_fp16_qk_reduction=use_fp16_qk_reduction,
                               rope_scale=rope_scale, rope_theta=rope_theta)
        return self.run(q, paged_kv_cache, k_scale=k_scale, v_scale=v_scale, return_lse=return_lse)


def _used_indices(indices: Any, host_indptr: np.ndarray) -> Any:
    """The page indices the requests use, indptr[-1] of them: engines pass longer arrays (a
    preallocated buffer, an uninitialised tail), whose rest must be neither copied to the
    host nor taken for page numbers. An indptr that runs past the array is left to the
    native plan's error."""
    shape = tuple(getattr(indices, "shape", (len(indices),) if hasattr(indices, "__len__") else ()))
    used = int(host_indptr[-1]) if len(host_indptr) else 0
    if len(shape) != 1 or not 0 <= used < shape[0]:
        return indices
    return indices[:used]


def _num_pages(num_pages: Optional[int], indices: Any, cache_pages: int = 0,
               indices_name: str = "paged_kv_indices") -> int:
    if num_pages is None:
        # Not given: the cache of the wrapper's last run() where the indices fit in it (a
        # serving pool keeps its size, and a cudnn graph is built for it, so plans keep their
        # graph), else the smallest cache they fit; run() checks them against the cache it
        # gets. (No huge sentinel: cudnn declares its page container by it.)
        fits = int(indices.max()) + 1 if len(indices) else 0
        if fits > _args.INT32_MAX:  # a page count (C int) past the largest index
            raise InvalidArgumentError(f"{indices_name}: entry {fits - 1}, allowed: < {_args.INT32_MAX} "
                                       "(a cache of that many pages has more than 2^31 - 1)")
        return cache_pages if cache_pages >= fits else fits
    return _args.integer(num_pages, "num_pages", lo=0)


def _page_of_one(x: Any, kv_layout: str, rank: int) -> Any:
    """A cache of page size 1 given without its page axis, as FlashInfer takes it: k or v
    [slots, Hk, D] read as [slots, 1, Hk, D] (NHD) or [slots, Hk, 1, D] (HND), and stacked
    [slots, 2, Hk, D] likewise. A view: the axis of length 1 is inserted, nothing copied."""
    shape = getattr(x, "shape", None)
    if shape is None or len(shape) != rank - 1:
        return x
    return x[..., None, :, :] if kv_layout == "NHD" else x[..., None, :]


def _paged_call(wrapper: BatchWrapperBase, q: Any, paged_kv_cache: Any, scales: dict):
    """run() of a paged native object, for a (k, v) pair or a stacked [P, 2, ...] cache
    (either also without the page axis, for page size 1), with the run's fp8 scales."""
    n = fw.native
    q_in, q_dtype = fw.native_and_format(q)
    scales = dict(scales, q_dtype=q_dtype)
    if isinstance(paged_kv_cache, (tuple, list)):
        if len(paged_kv_cache) != 2:
            raise InvalidArgumentError(
                f"paged_kv_cache: a tuple must be (k_cache, v_cache); got {len(paged_kv_cache)} items")
        for x, name in zip(paged_kv_cache, ("paged_kv_cache[0] (k)", "paged_kv_cache[1] (v)")):
            _args.fp8_array(x, name)
        k, v = (_page_of_one(x, wrapper._kv_layout, 4) for x in paged_kv_cache)
        wrapper._cache_pages = min(int(k.shape[0]), int(v.shape[0])) if len(k.shape) and len(v.shape) else 0
        def run_pair(o: Any, l: Any, s: Any) -> Any:
            with _args.renamed(_PAIR_NAMES):
                (k_bytes, kv_dtype), (v_bytes, _) = fw.native_and_format(k), fw.native_and_format(v)
                return wrapper._native.run(q_in, k_bytes, v_bytes, n(o), n(l), stream=fw.current_stream(q),
                                           kv_dtype=kv_dtype, sinks=n(s), custom_mask=n(wrapper._mask_bits),
                                           **scales)
        return run_pair
    _args.fp8_array(paged_kv_cache, "paged_kv_cache")
    cache = _page_of_one(paged_kv_cache, wrapper._kv_layout, 5)
    wrapper._cache_pages = int(cache.shape[0]) if len(cache.shape) else 0

    def run_stacked(o: Any, l: Any, s: Any) -> Any:
        with _args.renamed(_STACKED_NAMES):
            cache_bytes, kv_dtype = fw.native_and_format(cache)
            return wrapper._native.run_stacked(q_in, cache_bytes, n(o), n(l), stream=fw.current_stream(q),
                                               kv_dtype=kv_dtype, sinks=n(s), custom_mask=n(wrapper._mask_bits),
                                               **scales)
    return run_stacked


# The library checks a paged cache as k and v pools (C++'s PagedKVCache); the caller gave
# FlashInfer's paged_kv_cache, a (k, v) pair or one stacked tensor.
_PAIR_NAMES = {"paged_k_cache": "paged_kv_cache[0] (k)", "paged_v_cache": "paged_kv_cache[1] (v)"}
_STACKED_NAMES = {"paged_k_cache": "paged_kv_cache", "paged_v_cache": "paged_kv_cache"}
