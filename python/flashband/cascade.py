"""Merging partial attention states (FlashInfer's ``flashinfer.cascade`` names). States are
(v, s) with s the base-2 LSE in float32; two empty states (s = -inf) merge to v = 0,
s = -inf (SPEC.md "Merging partial states")."""

from __future__ import annotations

from typing import Any, Tuple

from . import _C
from . import _frameworks as fw

__all__ = ["merge_state", "merge_states"]


def merge_state(v_a: Any, s_a: Any, v_b: Any, s_b: Any, *, v_out: Any = None,
                s_out: Any = None) -> Tuple[Any, Any]:
    """v [n, H, D], s [n, H] for two results over disjoint keys -> merged (v, s)."""
    if v_out is None:
        v_out = fw.empty(v_a, tuple(v_a.shape), fw.dtype_name(v_a))
    if s_out is None:
        s_out = fw.empty(v_a, tuple(s_a.shape), "float32")
    with fw.device_guard(v_a):
        n = fw.native
        _C.merge_state(n(v_a), n(s_a), n(v_b), n(s_b), n(v_out), n(s_out),
                       fw.current_stream(v_a))
    return v_out, s_out


def merge_states(v: Any, s: Any, *, v_out: Any = None, s_out: Any = None) -> Tuple[Any, Any]:
    """v [n, num_states, H, D], s [n, num_states, H] -> merged v [n, H, D], s [n, H]."""
    n, _, heads, dim = (int(x) for x in v.shape) if len(v.shape) == 4 else (0, 0, 0, 0)
    if v_out is None:
        v_out = fw.empty(v, (n, heads, dim), fw.dtype_name(v))
    if s_out is None:
        s_out = fw.empty(v, (n, heads), "float32")
    with fw.device_guard(v):
        n = fw.native
        _C.merge_states(n(v), n(s), n(v_out), n(s_out), fw.current_stream(v))
    return v_out, s_out
