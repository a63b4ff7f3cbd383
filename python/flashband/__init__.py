"""flashband: attention kernels for LLM serving with FlashInfer's semantics and names.

Calls of FlashInfer's attention functions switch by a rename:
``flashinfer.single_prefill_with_kv_cache`` -> ``flashband.single_prefill_with_kv_cache``,
and so on for the batch wrappers and ``merge_state(s)`` (python/README.md lists what is
not there). Tensors may come from any DLPack framework (torch, NumPy, CuPy) and
are never copied; errors are ``flashband.FlashbandError`` subclasses (see flashband.errors).
"""

# errors first: the native module looks its exception classes up at import.
from .errors import (CudaError, FlashbandError, InternalError, InvalidArgumentError,
                     NotBuiltError, UnsupportedError)
from . import _C
from ._build import build_info, warn_missing_backends as _warn_missing_backends
from ._common import last_run_info
from .attention_sink import BatchAttentionWithAttentionSinkWrapper
from .capability import (ProblemDesc, SupportAnswer, batch_plan_bytes, batch_workspace_bytes,
                         built_backends, caps, select_backend, support_matrix, supports)
from .cascade import (MultiLevelCascadeAttentionWrapper, merge_state, merge_state_in_place,
                      merge_states)
from .decode import BatchDecodeWithPagedKVCacheWrapper, fast_decode_plan, single_decode_with_kv_cache
from .packbits import packbits, segment_packbits
from .prefill import (BatchPrefillWithPagedKVCacheWrapper, BatchPrefillWithRaggedKVCacheWrapper,
                      single_prefill_with_kv_cache, single_prefill_with_kv_cache_return_lse)

__version__ = _C.__version__

__all__ = [
    "BatchAttentionWithAttentionSinkWrapper",
    "BatchDecodeWithPagedKVCacheWrapper",
    "BatchPrefillWithPagedKVCacheWrapper",
    "BatchPrefillWithRaggedKVCacheWrapper",
    "CudaError",
    "FlashbandError",
    "InternalError",
    "InvalidArgumentError",
    "MultiLevelCascadeAttentionWrapper",
    "NotBuiltError",
    "ProblemDesc",
    "SupportAnswer",
    "UnsupportedError",
    "batch_plan_bytes",
    "batch_workspace_bytes",
    "build_info",
    "built_backends",
    "caps",
    "fast_decode_plan",
    "last_run_info",
    "merge_state",
    "merge_state_in_place",
    "merge_states",
    "packbits",
    "segment_packbits",
    "select_backend",
    "single_decode_with_kv_cache",
    "single_prefill_with_kv_cache",
    "single_prefill_with_kv_cache_return_lse",
    "support_matrix",
    "supports",
]

# A wheel built without a backend this machine's GPU could run says so, once.
_warn_missing_backends()
