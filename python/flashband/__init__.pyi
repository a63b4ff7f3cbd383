# Type stubs for the public API of flashband (hand-written; python/tests/test_api.py checks
# that every public name is here with the runtime's parameter names).
from typing import Any, Dict, Optional, Sequence, Tuple, Union

from typing_extensions import TypeAlias

from . import _C
from .errors import (CudaError as CudaError, FlashbandError as FlashbandError,
                     InternalError as InternalError, InvalidArgumentError as InvalidArgumentError,
                     NotBuiltError as NotBuiltError, UnsupportedError as UnsupportedError)

# Any DLPack array (torch.Tensor, numpy.ndarray, cupy.ndarray, ...); never copied.
Array: TypeAlias = Any
# A dtype as "float16" / "bfloat16" / "float32", a torch dtype or a NumPy dtype; a K/V dtype
# (kv_data_type) may also be "float8_e4m3fn" / "float8_e5m2" (torch's, or ml_dtypes').
DTypeLike: TypeAlias = Any
# (k_cache, v_cache), or one stacked [num_pages, 2, ...] array.
PagedKVCache: TypeAlias = Union[Tuple[Array, Array], Array]
# An fp8 cache's dequantisation scale (k_scale, v_scale): a number, or a one-element float32
# array on the run's device read when the kernel runs; with a 16-bit cache None or 1.0 only.
# q_scale / o_scale / scale_q / scale_k / scale_v (fp8 attention): None or 1.0 only.
Scale: TypeAlias = Union[None, float, Array]

__version__: str
ProblemDesc = _C.ProblemDesc
SupportAnswer = _C.SupportAnswer

def single_prefill_with_kv_cache(
    q: Array, k: Array, v: Array, scale_q: Scale = None, scale_k: Scale = None,
    scale_v: Scale = None, o_dtype: Optional[DTypeLike] = None, custom_mask: Optional[Array] = None,
    packed_custom_mask: Optional[Array] = None, causal: bool = False, kv_layout: str = "NHD",
    pos_encoding_mode: str = "NONE", use_fp16_qk_reduction: bool = False,
    sm_scale: Optional[float] = None, window_left: int = -1,
    logits_soft_cap: Optional[float] = None, rope_scale: Optional[float] = None,
    rope_theta: Optional[float] = None, backend: str = "auto", return_lse: bool = False,
    kv_cache_sf: None = None, k_scale: Scale = None, v_scale: Scale = None, *,
    window_right: int = -1, sinks: Optional[Array] = None,
    out: Optional[Array] = None, lse: Optional[Array] = None,
) -> Union[Array, Tuple[Array, Array]]: ...

def single_prefill_with_kv_cache_return_lse(q: Array, k: Array, v: Array, *args: Any,
                                            **kwargs: Any) -> Tuple[Array, Array]: ...

def single_decode_with_kv_cache(
    q: Array, k: Array, v: Array, kv_layout: str = "NHD", pos_encoding_mode: str = "NONE",
    use_tensor_cores: bool = False, q_scale: Scale = None, k_scale: Scale = None,
    v_scale: Scale = None, window_left: int = -1, logits_soft_cap: Optional[float] = None,
    sm_scale: Optional[float] = None, rope_scale: Optional[float] = None,
    rope_theta: Optional[float] = None, return_lse: bool = False, *, backend: str = "auto",
) -> Union[Array, Tuple[Array, Array]]: ...

class _BatchWrapper:
    """What the three batch wrappers share (FlashInfer's aliases)."""
    @property
    def is_cuda_graph_enabled(self) -> bool: ...
    def check(self) -> None: ...
    def begin_forward(self, *args: Any, **kwargs: Any) -> None: ...
    def run_return_lse(self, *args: Any, **kwargs: Any) -> Tuple[Array, Array]: ...
    def forward_return_lse(self, *args: Any, **kwargs: Any) -> Tuple[Array, Array]: ...
    def end_forward(self) -> None: ...
    @property
    def resolved_backend(self) -> str: ...
    def prewarm_paged_kv_stride_variant(self, variant: str = "independent") -> None: ...
    # FlashInfer's attributes that engines read: the plan's settings and the index buffers
    # given to the constructor (read-only).
    @property
    def _causal(self) -> bool: ...
    @property
    def _window_left(self) -> int: ...
    @property
    def _logits_soft_cap(self) -> float: ...
    @property
    def _sm_scale(self) -> Optional[float]: ...
    @property
    def _fixed_batch_size(self) -> int: ...
    @property
    def _qo_indptr_buf(self) -> Optional[Array]: ...
    @property
    def _kv_indptr_buf(self) -> Optional[Array]: ...
    @property
    def _paged_kv_indptr_buf(self) -> Optional[Array]: ...
    @property
    def _paged_kv_indices_buf(self) -> Optional[Array]: ...
    @property
    def _paged_kv_last_page_len_buf(self) -> Optional[Array]: ...

class BatchPrefillWithRaggedKVCacheWrapper(_BatchWrapper):
    last_run_info: Optional[_C.RunInfo]
    def __init__(self, float_workspace_buffer: Array, kv_layout: str = "NHD",
                 use_cuda_graph: bool = False, qo_indptr_buf: Optional[Array] = None,
                 kv_indptr_buf: Optional[Array] = None, custom_mask_buf: Optional[Array] = None,
                 mask_indptr_buf: Optional[Array] = None, backend: str = "auto",
                 jit_args: None = None, jit_kwargs: None = None,
                 variant_owns_mask: bool = False) -> None: ...
    @property
    def kv_layout(self) -> str: ...
    @property
    def backend(self) -> str: ...
    def reset_workspace_buffer(self, float_workspace_buffer: Array,
                               int_workspace_buffer: Optional[Array] = None) -> None: ...
    def plan(self, qo_indptr: Array, kv_indptr: Array, num_qo_heads: int, num_kv_heads: int,
             head_dim_qk: int, head_dim_vo: Optional[int] = None, custom_mask: Optional[Array] = None,
             packed_custom_mask: Optional[Array] = None, causal: bool = False,
             pos_encoding_mode: str = "NONE", use_fp16_qk_reduction: bool = False,
             window_left: int = -1, logits_soft_cap: Optional[float] = None,
             sm_scale: Optional[float] = None, rope_scale: Optional[float] = None,
             rope_theta: Optional[float] = None, q_data_type: DTypeLike = "float16",
             kv_data_type: Optional[DTypeLike] = None, o_data_type: Optional[DTypeLike] = None,
             non_blocking: bool = True, prefix_len_ptr: None = None,
             token_pos_in_items_ptr: None = None, token_pos_in_items_len: int = 0,
             max_item_len_ptr: None = None, fixed_split_size: Optional[int] = None,
             disable_split_kv: bool = False, seq_lens: None = None, seq_lens_q: None = None,
             max_token_per_sequence: None = None, max_sequence_kv: None = None,
             v_indptr: None = None, o_indptr: None = None, *, return_lse: bool = False,
             window_right: int = -1) -> None: ...
    def run(self, q: Array, k: Array, v: Array, *, out: Optional[Array] = None,
            lse: Optional[Array] = None, return_lse: bool = False,
            enable_pdl: Optional[bool] = None, window_left: Optional[int] = None,
            sinks: Optional[Array] = None, q_scale: Scale = None, k_scale: Scale = None,
            v_scale: Scale = None, o_scale: Scale = None, lse_base: str = "log2",
            lse_layout: str = "NH", kv_cache_sf: None = None) -> Union[Array, Tuple[Array, Array]]: ...
    def forward(self, q: Array, k: Array, v: Array, causal: bool = False,
                pos_encoding_mode: str = "NONE", use_fp16_qk_reduction: bool = False,
                window_left: int = -1, logits_soft_cap: Optional[float] = None,
                sm_scale: Optional[float] = None, rope_scale: Optional[float] = None,
                rope_theta: Optional[float] = None, *, return_lse: bool = False) -> Union[Array, Tuple[Array, Array]]: ...

class BatchPrefillWithPagedKVCacheWrapper(_BatchWrapper):
    last_run_info: Optional[_C.RunInfo]
    def __init__(self, float_workspace_buffer: Array, kv_layout: str = "NHD",
                 use_cuda_graph: bool = False, qo_indptr_buf: Optional[Array] = None,
                 paged_kv_indptr_buf: Optional[Array] = None,
                 paged_kv_indices_buf: Optional[Array] = None,
                 paged_kv_last_page_len_buf: Optional[Array] = None, custom_mask_buf: Optional[Array] = None,
                 mask_indptr_buf: Optional[Array] = None, backend: str = "auto",
                 jit_args: None = None, jit_kwargs: None = None,
                 variant_owns_mask: bool = False) -> None: ...
    @property
    def kv_layout(self) -> str: ...
    @property
    def backend(self) -> str: ...
    def reset_workspace_buffer(self, float_workspace_buffer: Array,
                               int_workspace_buffer: Optional[Array] = None) -> None: ...
    def plan(self, qo_indptr: Array, paged_kv_indptr: Array, paged_kv_indices: Array,
             paged_kv_last_page_len: Array, num_qo_heads: int, num_kv_heads: int, head_dim_qk: int,
             page_size: int, head_dim_vo: Optional[int] = None, custom_mask: Optional[Array] = None,
             packed_custom_mask: Optional[Array] = None, causal: bool = False,
             pos_encoding_mode: str = "NONE", use_fp16_qk_reduction: bool = False,
             sm_scale: Optional[float] = None, window_left: int = -1,
             logits_soft_cap: Optional[float] = None, rope_scale: Optional[float] = None,
             rope_theta: Optional[float] = None, q_data_type: DTypeLike = "float16",
             kv_data_type: Optional[DTypeLike] = None, o_data_type: Optional[DTypeLike] = None,
             non_blocking: bool = True, prefix_len_ptr: None = None,
             token_pos_in_items_ptr: None = None, token_pos_in_items_len: int = 0,
             max_item_len_ptr: None = None, seq_lens: None = None, seq_lens_q: None = None,
             block_tables: None = None, max_token_per_sequence: None = None,
             max_sequence_kv: None = None, fixed_split_size: Optional[int] = None,
             disable_split_kv: bool = False, *, return_lse: bool = False,
             num_pages: Optional[int] = None, window_right: int = -1) -> None: ...
    def workspace_size(self, qo_indptr: Array, paged_kv_indptr: Array, paged_kv_indices: Array,
                       paged_kv_last_page_len: Array, num_qo_heads: int, num_kv_heads: int,
                       head_dim_qk: int, page_size: int, head_dim_vo: Optional[int] = None,
                       custom_mask: Optional[Array] = None, packed_custom_mask: Optional[Array] = None,
                       causal: bool = False, pos_encoding_mode: str = "NONE",
                       use_fp16_qk_reduction: bool = False, sm_scale: Optional[float] = None,
                       window_left: int = -1, logits_soft_cap: Optional[float] = None,
                       rope_scale: Optional[float] = None, rope_theta: Optional[float] = None,
                       q_data_type: DTypeLike = "float16", kv_data_type: Optional[DTypeLike] = None,
                       o_data_type: Optional[DTypeLike] = None, prefix_len_ptr: None = None,
                       token_pos_in_items_ptr: None = None, token_pos_in_items_len: int = 0,
                       max_item_len_ptr: None = None, seq_lens: None = None,
                       seq_lens_q: None = None, block_tables: None = None,
                       max_token_per_sequence: None = None, max_sequence_kv: None = None,
                       fixed_split_size: Optional[int] = None,
                       disable_split_kv: bool = False) -> Tuple[int, int]: ...
    def run(self, q: Array, paged_kv_cache: PagedKVCache, *, out: Optional[Array] = None,
            lse: Optional[Array] = None, return_lse: bool = False, q_scale: Scale = None,
            k_scale: Scale = None, v_scale: Scale = None, enable_pdl: Optional[bool] = None,
            window_left: Optional[int] = None, sinks: Optional[Array] = None,
            skip_softmax_threshold_scale_factor: None = None,
            kv_cache_sf: None = None, lse_base: str = "log2", lse_layout: str = "NH",
            use_fp16_softmax: Optional[bool] = None,
            uses_spcompress: Optional[bool] = None) -> Union[Array, Tuple[Array, Array]]: ...
    def forward(self, q: Array, paged_kv_cache: PagedKVCache, causal: bool = False,
                pos_encoding_mode: str = "NONE", use_fp16_qk_reduction: bool = False,
                k_scale: Scale = None, v_scale: Scale = None, window_left: int = -1,
                logits_soft_cap: Optional[float] = None, sm_scale: Optional[float] = None,
                rope_scale: Optional[float] = None, rope_theta: Optional[float] = None, *,
                return_lse: bool = False) -> Union[Array, Tuple[Array, Array]]: ...

class BatchAttentionWithAttentionSinkWrapper(BatchPrefillWithPagedKVCacheWrapper):
    def __init__(self, float_workspace_buffer: Array, kv_layout: str = "NHD",
                 use_cuda_graph: bool = False, qo_indptr_buf: Optional[Array] = None,
                 paged_kv_indptr_buf: Optional[Array] = None, paged_kv_indices_buf: Optional[Array] = None,
                 paged_kv_last_page_len_buf: Optional[Array] = None, custom_mask_buf: Optional[Array] = None,
                 mask_indptr_buf: Optional[Array] = None, backend: str = "auto", pos_encoding_mode: str = "NONE",
                 use_fp16_qk_reduction: bool = False, q_data_type: DTypeLike = "bfloat16",
                 kv_data_type: DTypeLike = "bfloat16", head_dim_qk: int = 128, head_dim_vo: int = 128,
                 window_left: int = -1) -> None: ...
    def reset_workspace_buffer(self, float_workspace_buffer: Array,
                               int_workspace_buffer: Optional[Array] = None) -> None: ...
    def plan(self, *args: Any, **kwargs: Any) -> None: ...
    def run(self, q: Array, paged_kv_cache: Any, *args: Any, **kwargs: Any) -> Any: ...
    def forward(self, *args: Any, **kwargs: Any) -> Any: ...

class BatchDecodeWithPagedKVCacheWrapper(_BatchWrapper):
    last_run_info: Optional[_C.RunInfo]
    def __init__(self, float_workspace_buffer: Array, kv_layout: str = "NHD",
                 use_cuda_graph: bool = False, use_tensor_cores: bool = False,
                 paged_kv_indptr_buffer: Optional[Array] = None,
                 paged_kv_indices_buffer: Optional[Array] = None,
                 paged_kv_last_page_len_buffer: Optional[Array] = None, backend: str = "auto",
                 jit_args: None = None) -> None: ...
    @property
    def use_tensor_cores(self) -> bool: ...
    @property
    def kv_layout(self) -> str: ...
    @property
    def backend(self) -> str: ...
    def reset_workspace_buffer(self, float_workspace_buffer: Array,
                               int_workspace_buffer: Optional[Array] = None) -> None: ...
    def plan(self, indptr: Array, indices: Array, last_page_len: Array, num_qo_heads: int,
             num_kv_heads: int, head_dim: int, page_size: int, *deprecated_positional_args: Any,
             **kwargs: Any) -> None: ...
    # plan()'s keywords (FlashInfer 0.7's _plan_impl, flashband's return_lse and num_pages).
    def _plan_impl(self, indptr: Array, indices: Array, last_page_len: Array, num_qo_heads: int,
             num_kv_heads: int, head_dim: int, page_size: int, *, window_left: int = -1,
             logits_soft_cap: Optional[float] = None, sm_scale: Optional[float] = None,
             q_data_type: Optional[DTypeLike] = None, kv_data_type: Optional[DTypeLike] = None,
             data_type: Optional[DTypeLike] = None, return_lse: bool = False,
             num_pages: Optional[int] = None, pos_encoding_mode: str = "NONE",
             rope_scale: Optional[float] = None, rope_theta: Optional[float] = None,
             non_blocking: bool = True, q_len_per_req: int = 1,
             o_data_type: Optional[DTypeLike] = None, window_right: int = 0,
             fixed_split_size: Optional[int] = None, disable_split_kv: bool = False,
             seq_lens: None = None, block_tables: None = None,
             is_causal: Optional[bool] = None) -> None: ...
    def workspace_size(self, indptr: Array, indices: Array, last_page_len: Array,
                       num_qo_heads: int, num_kv_heads: int, head_dim: int, page_size: int,
                       pos_encoding_mode: str = "NONE", window_left: int = -1,
                       logits_soft_cap: Optional[float] = None,
                       q_data_type: DTypeLike = "float16", kv_data_type: Optional[DTypeLike] = None,
                       o_data_type: Optional[DTypeLike] = None, data_type: Optional[DTypeLike] = None,
                       sm_scale: Optional[float] = None, rope_scale: Optional[float] = None,
                       rope_theta: Optional[float] = None, block_tables: None = None,
                       seq_lens: None = None, fixed_split_size: Optional[int] = None,
                       disable_split_kv: bool = False, q_len_per_req: int = 1) -> Tuple[int, int]: ...
    def run(self, q: Array, paged_kv_cache: PagedKVCache, *, out: Optional[Array] = None,
            lse: Optional[Array] = None, return_lse: bool = False, q_scale: Scale = None,
            k_scale: Scale = None, v_scale: Scale = None, enable_pdl: Optional[bool] = None,
            window_left: Optional[int] = None, sinks: Optional[Array] = None,
            q_len_per_req: Optional[int] = None, skip_softmax_threshold_scale_factor: None = None,
            kv_cache_sf: None = None) -> Union[Array, Tuple[Array, Array]]: ...
    def forward(self, q: Array, paged_kv_cache: PagedKVCache, pos_encoding_mode: str = "NONE",
                q_scale: Scale = None, k_scale: Scale = None, v_scale: Scale = None,
                window_left: int = -1, logits_soft_cap: Optional[float] = None,
                sm_scale: Optional[float] = None, rope_scale: Optional[float] = None,
                rope_theta: Optional[float] = None, *, return_lse: bool = False) -> Union[Array, Tuple[Array, Array]]: ...

def merge_state(v_a: Array, s_a: Array, v_b: Array, s_b: Array, *,
                v_out: Optional[Array] = None,
                s_out: Optional[Array] = None) -> Tuple[Array, Array]: ...
def merge_states(v: Array, s: Array, *, v_out: Optional[Array] = None,
                 s_out: Optional[Array] = None) -> Tuple[Array, Array]: ...
def merge_state_in_place(v: Array, s: Array, v_other: Array, s_other: Array,
                         mask: None = None) -> None: ...


def fast_decode_plan(self: BatchDecodeWithPagedKVCacheWrapper, indptr: Array, indices: Optional[Array],
                     last_page_len: Array, num_qo_heads: int, num_kv_heads: int, head_dim: int,
                     page_size: int, pos_encoding_mode: str = "NONE", window_left: int = -1,
                     logits_soft_cap: Optional[float] = None, q_data_type: Optional[DTypeLike] = None,
                     kv_data_type: Optional[DTypeLike] = None, data_type: Optional[DTypeLike] = None,
                     sm_scale: Optional[float] = None, rope_scale: Optional[float] = None,
                     rope_theta: Optional[float] = None, non_blocking: bool = True,
                     fixed_split_size: Optional[int] = None, disable_split_kv: bool = False,
                     q_len_per_req: int = 1, global_override_indptr_cpu: Optional[Array] = None, *,
                     num_pages: Optional[int] = None, return_lse: bool = False) -> None: ...

class MultiLevelCascadeAttentionWrapper:
    def __init__(self, num_levels: int, float_workspace_buffer: Array, kv_layout: str = "NHD",
                 use_cuda_graph: bool = False, qo_indptr_buf_arr: Optional[Sequence[Array]] = None,
                 paged_kv_indptr_buf_arr: Optional[Sequence[Array]] = None,
                 paged_kv_indices_buf_arr: Optional[Sequence[Array]] = None,
                 paged_kv_last_page_len_buf_arr: Optional[Sequence[Array]] = None, *,
                 backend: str = "auto") -> None: ...
    @property
    def is_cuda_graph_enabled(self) -> bool: ...
    def reset_workspace_buffer(self, float_workspace_buffer: Array,
                               int_workspace_buffers: Optional[Sequence[Array]] = None) -> None: ...
    def plan(self, qo_indptr_arr: Sequence[Array], paged_kv_indptr_arr: Sequence[Array],
             paged_kv_indices_arr: Sequence[Array], paged_kv_last_page_len: Sequence[Array],
             num_qo_heads: int, num_kv_heads: int, head_dim: int, page_size: int,
             causal: bool = False, pos_encoding_mode: str = "NONE",
             use_fp16_qk_reduction: bool = False, sm_scale: Optional[float] = None,
             window_left: int = -1, logits_soft_cap: Optional[float] = None,
             rope_scale: Optional[float] = None, rope_theta: Optional[float] = None,
             q_data_type: DTypeLike = "float16", kv_data_type: Optional[DTypeLike] = None, *,
             num_pages: Optional[int] = None) -> None: ...
    begin_forward = plan
    def prewarm_paged_kv_stride_variant(self, variant: str = "independent") -> None: ...
    def run(self, q: Array, paged_kv_cache: PagedKVCache, *, out: Optional[Array] = None,
            lse: Optional[Array] = None,
            return_lse: bool = False) -> Union[Array, Tuple[Array, Array]]: ...
    def forward(self, q: Array, paged_kv_cache: PagedKVCache, *, out: Optional[Array] = None,
                lse: Optional[Array] = None,
                return_lse: bool = False) -> Union[Array, Tuple[Array, Array]]: ...

def supports(op: str = "single_prefill", *, backend: str = "auto",
             dtype: DTypeLike = "bfloat16", device: Any = "cuda", head_dim: int = 128,
             num_qo_heads: int = 1, num_kv_heads: int = 1, causal: bool = False,
             window_left: int = -1, logits_soft_cap: Optional[float] = None,
             return_lse: bool = False, kv_layout: str = "NHD", page_size: int = 0,
             has_empty_rows: bool = False, disable_split_kv: bool = False,
             window_right: int = -1,
             kv_dtype: Optional[DTypeLike] = None, sinks: bool = False, custom_mask: bool = False) -> _C.SupportAnswer: ...
def select_backend(op: str = "single_prefill", *, dtype: DTypeLike = "bfloat16",
                   device: Any = "cuda", head_dim: int = 128, num_qo_heads: int = 1,
                   num_kv_heads: int = 1, causal: bool = False, window_left: int = -1,
                   logits_soft_cap: Optional[float] = None, return_lse: bool = False,
                   kv_layout: str = "NHD", page_size: int = 0,
                   has_empty_rows: bool = False, use_cuda_graph: bool = False,
                   disable_split_kv: bool = False, window_right: int = -1,
                   kv_dtype: Optional[DTypeLike] = None, sinks: bool = False, custom_mask: bool = False) -> str: ...
def built_backends() -> Tuple[str, ...]: ...
def build_info() -> Dict[str, Any]: ...
def support_matrix() -> str: ...
def caps() -> Dict[str, Any]: ...
def batch_workspace_bytes(max_batch: int, max_qo_tokens: int, num_qo_heads: int,
                          head_dim: int, device: Any = "cuda", max_page_indices: int = 0) -> int: ...
def batch_plan_bytes(max_batch: int, max_qo_tokens: int, num_qo_heads: int, head_dim: int,
                     device: Any = "cuda", max_page_indices: int = 0,
                     max_request_pages: int = -1) -> int: ...
def last_run_info() -> Optional[_C.RunInfo]: ...

# FlashInfer's (flashinfer/quantization/packbits.py): numpy.packbits's meaning, on torch,
# NumPy or CuPy arrays; a custom mask is segment_packbits(..., bitorder="little").
def packbits(x: Array, bitorder: str = "big") -> Array: ...
def segment_packbits(x: Array, indptr: Array, bitorder: str = "big") -> Tuple[Array, Array]: ...
