"""Merging partial attention states and cascade attention (FlashInfer's ``flashinfer.cascade``
names). States are (v, s) with s the base-2 LSE in float32; two empty states (s = -inf)
merge to v = 0, s = -inf (SPEC.md "Merging partial states")."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple, Union

from . import _C
from . import _args
from . import _frameworks as fw
from ._paged import paged_kv_lens
from .errors import InvalidArgumentError, UnsupportedError
from .prefill import BatchPrefillWithPagedKVCacheWrapper

__all__ = ["merge_state", "merge_state_in_place", "merge_states", "MultiLevelCascadeAttentionWrapper"]


def _check_states(values: Any, lses: Any, ndim: int = 3, writable: bool = False,
                  optional: bool = False) -> None:
    """(array, name) pairs: values [n, (states,) H, D] of a float dtype, LSEs one rank less."""
    for group, rank, layout, dtypes in ((values, ndim, "[tokens, num_heads, head_dim]", _args.FLOAT_DTYPES),
                                        (lses, ndim - 1, "[tokens, num_heads]", None)):
        if ndim == 4:
            layout = layout.replace("tokens, ", "tokens, num_states, ")
        for x, name in group:
            if not (optional and x is None):
                _args.array(x, name, rank, layout, dtypes, writable)


def merge_state(v_a: Any, s_a: Any, v_b: Any, s_b: Any, *, v_out: Any = None,
                s_out: Any = None) -> Tuple[Any, Any]:
    """v [n, H, D], s [n, H] for two results over disjoint keys -> merged (v, s)."""
    _check_states(((v_a, "v_a"), (v_b, "v_b")), ((s_a, "s_a"), (s_b, "s_b")))
    _check_states(((v_out, "v_out"),), ((s_out, "s_out"),), writable=True, optional=True)
    if v_out is None:
        v_out = fw.empty(v_a, tuple(v_a.shape), fw.dtype_name(v_a))
    if s_out is None:
        s_out = fw.empty(v_a, tuple(s_a.shape), "float32")
    with fw.device_guard(v_a):
        n = fw.native
        _C.merge_state(n(v_a), n(s_a), n(v_b), n(s_b), n(v_out), n(s_out),
                       fw.current_stream(v_a))
    return v_out, s_out


def merge_state_in_place(v: Any, s: Any, v_other: Any, s_other: Any, mask: Any = None) -> None:
    """(v, s) becomes the merge of itself and (v_other, s_other), as FlashInfer's. The merge
    writes new arrays (SPEC.md: no output aliases an input), copied into v and s after
    both are checked writable, so an error leaves both as they were. mask (FlashInfer's rows
    to merge) is refused: every row is merged."""
    if mask is not None:
        raise UnsupportedError("mask: a mask of rows to merge is not supported by flashband (allowed: None)")
    _check_states(((v, "v"), (v_other, "v_other")), ((s, "s"), (s_other, "s_other")))
    fw.check_assignable(v, "v")
    fw.check_assignable(s, "s")
    _args.disjoint({"v": v, "s": s})  # written one after the other: s would overwrite v
    with _args.renamed({"v_a": "v", "s_a": "s", "v_b": "v_other", "s_b": "s_other"}):
        v_merged, s_merged = merge_state(v, s, v_other, s_other)
    fw.assign(v, v_merged)
    fw.assign(s, s_merged)


def merge_states(v: Any, s: Any, *, v_out: Any = None, s_out: Any = None) -> Tuple[Any, Any]:
    """v [n, num_states, H, D], s [n, num_states, H] -> merged v [n, H, D], s [n, H]."""
    _check_states(((v, "v"),), ((s, "s"),), ndim=4)
    _check_states(((v_out, "v_out"),), ((s_out, "s_out"),), writable=True, optional=True)
    n, _, heads, dim = (int(x) for x in v.shape)
    if v_out is None:
        v_out = fw.empty(v, (n, heads, dim), fw.dtype_name(v))
    if s_out is None:
        s_out = fw.empty(v, (n, heads), "float32")
    with fw.device_guard(v):
        n = fw.native
        _C.merge_states(n(v), n(s), n(v_out), n(s_out), fw.current_stream(v))
    return v_out, s_out


def _per_level(values: Any, name: str, levels: int) -> List[Any]:
    if values is None:
        return [None] * levels
    if not isinstance(values, (list, tuple)) or len(values) != levels:
        got = len(values) if isinstance(values, (list, tuple)) else type(values).__name__
        raise InvalidArgumentError(f"{name}: expected a list of {levels} (one per level), got {got}")
    return list(values)


def _check_causal_cascade(qo: Any, indptr: Any, last: Any, page_size: int) -> None:
    """Causal attention over a request's whole sequence (its shared prefixes, then its own
    keys) is the last level's causal mask with every prefix key visible exactly when no
    query row precedes the prefix's end: qo_len <= own keys + 1. FlashInfer's cascade shows
    the prefix to every row regardless; a plan where that differs is refused."""
    owns = paged_kv_lens(indptr, last, page_size)
    for b in range(len(qo) - 1):
        own = int(owns[b])
        rows = int(qo[b + 1]) - int(qo[b])
        if rows > own + 1:
            raise UnsupportedError(
                f"causal: request {b} of the last level has {rows} query rows over {own} keys of "
                f"its own; its first {rows - own - 1} rows would precede the shared prefix's end, "
                "which a cascade shows them (FlashInfer's result) and causal attention hides; "
                "plan it as a paged prefill over all its keys")


class MultiLevelCascadeAttentionWrapper:
    """Cascade attention over one paged cache, as FlashInfer's: each request's keys lie in
    num_levels levels (a prefix shared by a group of requests, ..., the request's own pages
    last), and level l groups the query rows by its own qo_indptr (every level covers all of
    q's rows). Each level runs as a paged prefill with LSE and the levels' results merge by
    SPEC.md's rule, so a row attends to the union of its levels' keys.

    causal applies to the last level only (bottom-right within it), as in FlashInfer, the
    earlier levels being prefixes every row of the group sees: with each last-level group
    one request, that is causal attention over the request's whole sequence (prefixes
    first) wherever no query row precedes the prefix's end (qo_len <= own keys + 1, as in
    decode and in prefill of appended tokens); plans where it is not are refused. A sliding
    window cannot be put per level (each level would align it to its own keys), so
    window_left >= 0 is refused with more than one level. backend (flashband's): as the
    batch wrappers'. run() allocates each level's output and the merges' results, as
    FlashInfer's does (capturable with torch's caching allocator).
    """

    def __init__(self, num_levels: int, float_workspace_buffer: Any, kv_layout: str = "NHD",
                 use_cuda_graph: bool = False, qo_indptr_buf_arr: Optional[Sequence[Any]] = None,
                 paged_kv_indptr_buf_arr: Optional[Sequence[Any]] = None,
                 paged_kv_indices_buf_arr: Optional[Sequence[Any]] = None,
                 paged_kv_last_page_len_buf_arr: Optional[Sequence[Any]] = None, *,
                 backend: str = "auto") -> None:
        levels = _args.integer(num_levels, "num_levels", lo=1, hi=None)
        buffers = [_per_level(b, name, levels) for b, name in (
            (qo_indptr_buf_arr, "qo_indptr_buf_arr"), (paged_kv_indptr_buf_arr, "paged_kv_indptr_buf_arr"),
            (paged_kv_indices_buf_arr, "paged_kv_indices_buf_arr"),
            (paged_kv_last_page_len_buf_arr, "paged_kv_last_page_len_buf_arr"))]
        self._levels = [BatchPrefillWithPagedKVCacheWrapper(
            float_workspace_buffer, kv_layout, use_cuda_graph, *(b[i] for b in buffers), backend=backend)
            for i in range(levels)]
        self._use_cuda_graph = bool(use_cuda_graph)
        self._planned = False

    @property
    def is_cuda_graph_enabled(self) -> bool:
        return self._use_cuda_graph

    def reset_workspace_buffer(self, float_workspace_buffer: Any,
                               int_workspace_buffers: Optional[Sequence[Any]] = None) -> None:
        """New workspaces: one float workspace the levels share (their runs are ordered on
        one stream), and an int workspace per level or None; the next run needs a plan()."""
        ints = _per_level(int_workspace_buffers, "int_workspace_buffers", len(self._levels))
        for wrapper, buffer in zip(self._levels, ints):
            wrapper.reset_workspace_buffer(float_workspace_buffer, buffer)
        self._planned = False

    def plan(self, qo_indptr_arr: Sequence[Any], paged_kv_indptr_arr: Sequence[Any],
             paged_kv_indices_arr: Sequence[Any], paged_kv_last_page_len: Sequence[Any],
             num_qo_heads: int, num_kv_heads: int, head_dim: int, page_size: int,
             causal: bool = False, pos_encoding_mode: str = "NONE",
             use_fp16_qk_reduction: bool = False, sm_scale: Optional[float] = None,
             window_left: int = -1, logits_soft_cap: Optional[float] = None,
             rope_scale: Optional[float] = None, rope_theta: Optional[float] = None,
             q_data_type: Any = "float16", kv_data_type: Any = None, *,
             num_pages: Optional[int] = None) -> None:
        """One paged prefill plan per level (lists of one array per level, FlashInfer's
        order). num_pages (flashband's): as the paged wrapper's. A plan() that fails leaves
        the wrapper unplanned (some levels may hold the new plan): run() raises until a
        plan() succeeds."""
        levels = len(self._levels)
        page_size = _args.integer(page_size, "page_size")
        if _args.window_left(window_left) >= 0 and levels > 1:
            raise UnsupportedError(
                f"window_left: {window_left} over {levels} cascade levels: each level would align "
                "the window to its own keys, not the request's; use one level (a paged prefill)")
        lists = [_per_level(a, name, levels) for a, name in (
            (qo_indptr_arr, "qo_indptr_arr"), (paged_kv_indptr_arr, "paged_kv_indptr_arr"),
            (paged_kv_indices_arr, "paged_kv_indices_arr"),
            (paged_kv_last_page_len, "paged_kv_last_page_len"))]
        # What can be checked before any level plans, so that a refusal leaves every level's
        # previous plan in place (an error from a level's own plan leaves the wrapper
        # unplanned, some levels re-planned).
        qo, indptr, last = ([fw.host_int32(x, f"{name}[{i}]") for i, x in enumerate(arrays)]
                            for arrays, name in ((lists[0], "qo_indptr_arr"),
                                                 (lists[1], "paged_kv_indptr_arr"),
                                                 (lists[3], "paged_kv_last_page_len")))
        for i in range(levels):
            batch = max(len(qo[i]) - 1, 0)
            if len(indptr[i]) != batch + 1 or len(last[i]) != batch:
                raise InvalidArgumentError(
                    f"level {i}: qo_indptr_arr[{i}] gives {batch} groups, paged_kv_indptr_arr[{i}] "
                    f"has {len(indptr[i])} entries and paged_kv_last_page_len[{i}] {len(last[i])} "
                    f"(expected {batch + 1} and {batch})")
        rows = [int(x[-1]) if len(x) else 0 for x in qo]
        if len(set(rows)) > 1:
            raise InvalidArgumentError(
                "qo_indptr_arr: the levels cover " + ", ".join(str(r) for r in rows) +
                " query rows; every level must cover all of q's rows")
        if causal and levels > 1:
            _check_causal_cascade(qo[-1], indptr[-1], last[-1], page_size)
        self._planned = False
        for i, wrapper in enumerate(self._levels):
            wrapper.plan(qo[i], indptr[i], lists[2][i], last[i], num_qo_heads, num_kv_heads,
                         head_dim, page_size, causal=causal and i == levels - 1,
                         pos_encoding_mode=pos_encoding_mode,
                         use_fp16_qk_reduction=use_fp16_qk_reduction, sm_scale=sm_scale,
                         window_left=window_left, logits_soft_cap=logits_soft_cap,
                         rope_scale=rope_scale, rope_theta=rope_theta, q_data_type=q_data_type,
                         kv_data_type=kv_data_type, return_lse=True, num_pages=num_pages)
        self._planned = True

    begin_forward = plan

    def prewarm_paged_kv_stride_variant(self, variant: str = "independent") -> None:
        """FlashInfer 0.7's: as the paged prefill wrapper's, for every level (nothing to
        load; a plan() first, "independent" only)."""
        if not self._planned:
            raise InvalidArgumentError("prewarm_paged_kv_stride_variant: plan() has not been called")
        for wrapper in self._levels:
            wrapper.prewarm_paged_kv_stride_variant(variant)

    def run(self, q: Any, paged_kv_cache: Any, *, out: Any = None, lse: Any = None,
            return_lse: bool = False) -> Union[Any, Tuple[Any, Any]]:
        """q [rows, Hq, D] -> out like q, or (out, lse [rows, Hq] float32, base 2) with
        return_lse; out/lse given are written in place."""
        if not self._planned:
            raise InvalidArgumentError("run: plan() has not been called, or the last plan() failed")
        # The caller's out/lse are written last, by the last level's run and the merges, once
        # every prefix level has run (into arrays of its own) and both are known writable: a
        # level that raises leaves them as they were.
        for x, name in ((out, "out"), (lse, "lse")):
            if x is not None:
                fw.check_assignable(_args.array(x, name, writable=True), name)
        prefix = None
        for wrapper in self._levels[:-1]:
            level = wrapper.run(q, paged_kv_cache, return_lse=True)
            prefix = level if prefix is None else merge_state(*prefix, *level)
        out, lse = self._levels[-1].run(q, paged_kv_cache, out=out, lse=lse, return_lse=True)
        if prefix is not None:
            merge_state_in_place(out, lse, *prefix)
        return (out, lse) if return_lse else out

    forward = run
