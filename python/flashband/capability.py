"""What this build and machine can run. supports() and select_backend() ask the same
capability table and selection function that every run uses, so "supported?" and "what
runs" cannot disagree."""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

from . import _C
from . import _args
from ._common import backend_name
from . import _frameworks as fw
from .errors import InvalidArgumentError

__all__ = ["supports", "select_backend", "caps", "support_matrix", "batch_workspace_bytes",
           "batch_plan_bytes", "built_backends", "ProblemDesc", "SupportAnswer"]

ProblemDesc = _C.ProblemDesc
SupportAnswer = _C.SupportAnswer


def _device(device: Any) -> Tuple[str, int]:
    """'cpu', 'cuda', 'cuda:1' or a torch.device -> (type, index)."""
    text = str(device)
    kind, _, index = text.partition(":")
    if kind not in ("cpu", "cuda"):
        raise InvalidArgumentError(f"device: {text!r} is not 'cpu', 'cuda' or 'cuda:N'")
    return kind, int(index) if index else 0


def _problem(op: str, dtype: Any, device: Any, head_dim: int, num_qo_heads: int,
             num_kv_heads: int, causal: bool, window_left: int, window_right: int,
             logits_soft_cap: Optional[float], return_lse: bool, kv_layout: str,
             page_size: int, has_empty_rows: bool, cuda_graph: bool = False,
             disable_split_kv: bool = False, kv_dtype: Any = None,
             sinks: bool = False, custom_mask: bool = False) -> "_C.ProblemDesc":
    kind, index = _device(device)
    cap = _args.real(logits_soft_cap, "logits_soft_cap")
    num_qo_heads, num_kv_heads, head_dim = _args.heads(num_qo_heads, num_kv_heads, head_dim)
    # dtype: q's; float8_e4m3fn asks about fp8 attention (SPEC.md), with kv_dtype e4m3 too.
    return _C.ProblemDesc(op=_args.text(op, "op"), dtype=fw.canonical_dtype(dtype, "dtype", fp8=fw.FP8_Q_DTYPES),
                          device=kind,
                          device_id=index, head_dim=head_dim, num_qo_heads=num_qo_heads,
                          num_kv_heads=num_kv_heads, causal=_args.flag(causal, "causal"),
                          window_left=_args.window_left(window_left),
                          window_right=_args.window_right(window_right),
                          soft_cap=bool(cap), return_lse=_args.flag(return_lse, "return_lse"),
                          kv_layout=_args.text(kv_layout, "kv_layout"),
                          page_size=_args.integer(page_size, "page_size"),
                          has_empty_rows=_args.flag(has_empty_rows, "has_empty_rows"),
                          cuda_graph=_args.flag(cuda_graph, "use_cuda_graph"),
                          disable_split_kv=_args.flag(disable_split_kv, "disable_split_kv"),
                          kv_dtype=None if kv_dtype is None else fw.canonical_dtype(kv_dtype, "kv_dtype", fp8=fw.FP8_DTYPES),
                          sinks=_args.flag(sinks, "sinks"), custom_mask=_args.flag(custom_mask, "custom_mask"))


def supports(op: str = "single_prefill", *, backend: str = "auto", dtype: Any = "bfloat16",
             device: Any = "cuda", head_dim: int = 128, num_qo_heads: int = 1,
             num_kv_heads: int = 1, causal: bool = False, window_left: int = -1,
             logits_soft_cap: Optional[float] = None, return_lse: bool = False,
             kv_layout: str = "NHD", page_size: int = 0,
             has_empty_rows: bool = False, disable_split_kv: bool = False,
             window_right: int = -1, kv_dtype: Any = None,
             sinks: bool = False, custom_mask: bool = False) -> "_C.SupportAnswer":
    """Whether `backend` can run this problem on this machine. The answer is truthy when it
    can; otherwise .reason names the parameter. op: 'single_prefill', 'ragged_prefill',
    'paged_prefill' or 'paged_decode'. window_left is taken as given (a window wider than
    every kv_len is normalised to -1 by plan(); pass -1 for it here). has_empty_rows: some
    query row sees no key (causal with qo_len > kv_len, or an empty KV). disable_split_kv:
    as the wrappers' plan() argument (cudnn refuses it). window_right: as plan() takes it
    (>= 1 for a two-sided window; 0 is causal). dtype: q's; 'float8_e4m3fn' is fp8 attention
    (with kv_dtype 'float8_e4m3fn'). kv_dtype: the K/V storage (None: dtype's;
    'float8_e4m3fn' / 'float8_e5m2': an fp8 cache, the capability table's K/V dtype column).
    sinks: runs pass attention sinks (run()'s `sinks`; cudnn: prefill only, cuDNN >= 9.13).
    custom_mask: the plan has a custom mask (cpu, sm80 and sm90 prefill serve one)."""
    problem = _problem(op, dtype, device, head_dim, num_qo_heads, num_kv_heads, causal,
                       window_left, window_right, logits_soft_cap, return_lse, kv_layout, page_size,
                       has_empty_rows, disable_split_kv=disable_split_kv, kv_dtype=kv_dtype,
                       sinks=sinks, custom_mask=custom_mask)
    return _C.supports(problem, backend_name(backend))


def select_backend(op: str = "single_prefill", *, dtype: Any = "bfloat16", device: Any = "cuda",
                   head_dim: int = 128, num_qo_heads: int = 1, num_kv_heads: int = 1,
                   causal: bool = False, window_left: int = -1,
                   logits_soft_cap: Optional[float] = None, return_lse: bool = False,
                   kv_layout: str = "NHD", page_size: int = 0,
                   has_empty_rows: bool = False, use_cuda_graph: bool = False,
                   disable_split_kv: bool = False, window_right: int = -1,
                   kv_dtype: Any = None, sinks: bool = False, custom_mask: bool = False) -> str:
    """The backend 'auto' would pick; raises UnsupportedError saying why when none can.
    use_cuda_graph: as the wrapper's (auto's order no longer depends on it);
    disable_split_kv: as the wrappers' plan() argument; kv_dtype, sinks, custom_mask: as
    supports()'."""
    return _C.select_backend(_problem(op, dtype, device, head_dim, num_qo_heads, num_kv_heads,
                                      causal, window_left, window_right, logits_soft_cap, return_lse,
                                      kv_layout, page_size, has_empty_rows, use_cuda_graph,
                                      disable_split_kv, kv_dtype, sinks, custom_mask))


def built_backends() -> Tuple[str, ...]:
    """Backends compiled into this build (supports() also checks the GPU)."""
    return tuple(_C.built_backends)


def support_matrix() -> str:
    """The support matrix, as markdown."""
    return _C.support_matrix_markdown()


def caps() -> Dict[str, Any]:
    """Version, built backends, CUDA architectures and the support matrix."""
    return {"version": _C.__version__, "built_backends": built_backends(),
            "cuda_archs": _C.cuda_archs, "support_matrix": support_matrix()}


def batch_workspace_bytes(max_batch: int, max_qo_tokens: int, num_qo_heads: int,
                          head_dim: int, device: Any = "cuda", max_page_indices: int = 0) -> int:
    """Bytes of float_workspace_buffer that serve any batch plan for these maxima (split-KV
    partial states, cuDNN's workspace); wrappers may share one such buffer. 0 for the cpu
    backend. The bound also covers a plan's own arrays in the same buffer (the C++ API
    without plan_data), which max_page_indices (entries of the paged index array) adds to."""
    kind, _ = _device(device)
    return int(_C.batch_workspace_bytes(*_size_counts(max_batch, max_qo_tokens, num_qo_heads, head_dim),
                                        kind, _args.integer(max_page_indices, "max_page_indices",
                                                            _args.INT64_MIN, _args.INT64_MAX)))


def batch_plan_bytes(max_batch: int, max_qo_tokens: int, num_qo_heads: int, head_dim: int,
                     device: Any = "cuda", max_page_indices: int = 0,
                     max_request_pages: int = -1) -> int:
    """Bytes a plan's own arrays (index arrays, work list, page indices) take at most for
    these maxima: what a wrapper's int_workspace_buffer needs. max_request_pages: pages of
    the longest request (-1: bounded by max_page_indices). 0 for the cpu backend."""
    kind, _ = _device(device)
    wide = dict(lo=_args.INT64_MIN, hi=_args.INT64_MAX)
    return int(_C.batch_plan_bytes(*_size_counts(max_batch, max_qo_tokens, num_qo_heads, head_dim), kind,
                                   _args.integer(max_page_indices, "max_page_indices", **wide),
                                   _args.integer(max_request_pages, "max_request_pages", **wide)))


def _size_counts(max_batch: Any, max_qo_tokens: Any, num_qo_heads: Any, head_dim: Any) -> Tuple[int, ...]:
    """The sizing helpers' counts in the native types (C int, int64); the library judges
    their values (negative counts, sizes past what a byte count holds)."""
    return (_args.integer(max_batch, "max_batch"),
            _args.integer(max_qo_tokens, "max_qo_tokens", _args.INT64_MIN, _args.INT64_MAX),
            _args.integer(num_qo_heads, "num_qo_heads"), _args.integer(head_dim, "head_dim"))
