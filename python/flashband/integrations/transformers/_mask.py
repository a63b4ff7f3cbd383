"""The mask that transformers builds for the "flashband" implementation.

transformers asks the mask function registered under an implementation's name for each mask
type (full, sliding) once per forward, and hands its result to every attention layer of that
type. Ours reads transformers' description of the mask (its mask_function, the 2-D padding
mask and the cache's offsets) and returns a BandMask: what flashband's kernels compute
(causal or not, the window, each row's first valid key, the keys in use). A pattern it cannot
express (packed sequences, chunked or block-wise overlays, holes in the padding) raises
UnsupportedError naming it, so no mask is ever dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Tuple

from ...errors import UnsupportedError


@dataclass(frozen=True)
class BandMask:
    """causal: keys at or before the query only. window: transformers' sliding_window (a
    query sees its W most recent keys, itself included) or None. kv_len: keys of the layer's
    K/V in use (a static cache's tensors are longer). first_key: per batch row, the first
    non-padding key (None: no padding), a host tuple."""
    causal: bool
    window: Optional[int]
    kv_len: int
    first_key: Optional[Tuple[int, ...]]

    # generate() prepares the masks of a static cache before the forward, which hands them to
    # the mask functions again; transformers reads ndim to tell a prepared mask from a 2-D one.
    ndim = 4


def _cells(fn: Callable) -> dict:
    code = getattr(fn, "__code__", None)
    closure = getattr(fn, "__closure__", None) or ()
    return dict(zip(code.co_freevars, (c.cell_contents for c in closure))) if code else {}


def _pattern(mask_function: Callable) -> Tuple[bool, Optional[int]]:
    """(causal, window) of the mask functions transformers' create_*_mask pass: causal,
    bidirectional, and sliding-window causal (and_masks of sliding_window_overlay(W) and the
    causal function). Recognised by identity and closure, so a version that builds them
    otherwise is refused here rather than misread."""
    from transformers import masking_utils as mu

    if mask_function is mu.causal_mask_function:
        return True, None
    if mask_function is getattr(mu, "bidirectional_mask_function", None):
        return False, None
    parts = _cells(mask_function).get("mask_functions")
    if isinstance(parts, tuple) and len(parts) == 2 and mu.causal_mask_function in parts:
        overlay = parts[0] if parts[1] is mu.causal_mask_function else parts[1]
        window = _cells(overlay).get("sliding_window")
        if getattr(overlay, "__qualname__", "").startswith("sliding_window_overlay.") and isinstance(window, int):
            return True, window
    name = getattr(mask_function, "__qualname__", repr(mask_function))
    raise UnsupportedError(
        f"attention mask: transformers asked for the mask pattern {name!r}; flashband computes "
        "causal, bidirectional and sliding-window causal masks with left padding only (packed "
        "sequences, chunked, block-wise and custom mask functions are not in its contract)")


def _first_keys(padding: Any, kv_len: int) -> Optional[Tuple[int, ...]]:
    """Each row's first valid key where the row's valid keys among the first kv_len are one
    run that ends at kv_len - 1 (left padding); None when nothing is padded."""
    import torch

    valid = padding[:, :kv_len].to(torch.bool)
    if bool(valid.all()):
        return None
    count = valid.sum(dim=1)
    first = kv_len - count
    expected = torch.arange(kv_len, device=valid.device)[None, :] >= first[:, None]
    if not bool((valid == expected).all()):
        rows = (valid != expected).any(dim=1).nonzero().flatten().tolist()
        raise UnsupportedError(
            f"attention_mask: rows {rows[:8]} are not left-padded (their valid keys are not one "
            "run ending at the last key); flashband takes left padding only (right padding or "
            "holes would need a custom mask)")
    return tuple(int(x) for x in first.tolist())


def band_mask(batch_size: int, q_length: int, kv_length: int, q_offset: Any = 0,
              kv_offset: int = 0, mask_function: Optional[Callable] = None,
              attention_mask: Any = None, **_: Any) -> BandMask:
    """transformers' mask-interface signature (the other keywords, dtype, device, config,
    allow_is_causal_skip, use_vmap, only shape a materialised mask, which this is not)."""
    from transformers import masking_utils as mu

    if isinstance(attention_mask, BandMask):  # prepared already (generate with a static cache)
        return attention_mask
    causal, window = _pattern(mu.causal_mask_function if mask_function is None else mask_function)
    # Key columns of the layer's K/V are absolute positions kv_offset...; the query rows are
    # positions q_offset..q_offset + q_length - 1, the last keys in use, as flashband's
    # bottom-right alignment puts them. A static cache's K is longer than that (its tail unused).
    kv_len = int(q_offset) - int(kv_offset) + int(q_length) if causal else int(kv_length)
    if not 0 < kv_len <= kv_length:
        raise UnsupportedError(
            f"attention mask: queries at positions {int(q_offset)}.. over keys {int(kv_offset)}.."
            f"{int(kv_offset) + kv_length - 1} cannot be aligned bottom-right (kv_len {kv_len})")
    first = None
    if attention_mask is not None:
        padding = attention_mask
        if padding.shape[-1] < kv_offset + kv_length:  # a static cache's mask ends early: padded as transformers does
            import torch.nn.functional as F
            padding = F.pad(padding, (0, kv_offset + kv_length - padding.shape[-1]))
        first = _first_keys(padding[:, kv_offset:kv_offset + kv_length], kv_len)
    return BandMask(causal=causal, window=window, kv_len=kv_len, first_key=first)
