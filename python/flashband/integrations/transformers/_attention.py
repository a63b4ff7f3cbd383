"""The attention function transformers calls for every layer of a model loaded with the
flashband implementation: query [B, Hq, L, D], key and value [B, Hk, S, D] (the layer's KV
cache after its update, or this step's keys without a cache), the BandMask of _mask.py.
It returns the output [B, L, Hq, D] and no weights, as transformers' own implementations do.

Copies: none of q, k or v. Each batch row's K/V ([Hk, S, D]) is flashband's HND layout and
q's row transposed ([L, Hq, D], a strided view) is NHD, so prefill runs one
single_prefill_with_kv_cache per row, reading transformers' tensors in place. Decode of an
unpadded batch reads the whole cache as a paged cache of B pages of S slots (HND), one
BatchDecodeWithPagedKVCacheWrapper run for all rows, planned once per step and shared by
the layers that have the same settings. A left-padded batch runs row by row (each row's K/V
starts at its first valid key, which pages of one size cannot express). Continuous
batching's packed requests (cu_seq_lens_q/k) run as one ragged prefill (_varlen).
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

from ...errors import InvalidArgumentError, UnsupportedError
from ...prefill import single_prefill_with_kv_cache
from ._mask import BandMask
from ._plans import plans

# Keywords transformers passes that would change the result and flashband cannot honour.
_REFUSED = {
    "position_bias": "an additive position bias (T5-style relative attention)",
    "s_aux": "attention sinks", "sinks": "attention sinks",
    "head_mask": "a per-head mask",
}


def _refuse_unsupported(module: Any, query: Any, key: Any, value: Any, dropout: float,
                        kwargs: dict) -> None:
    import torch

    if dropout:
        raise UnsupportedError(f"dropout: {dropout} (module {type(module).__name__} in training); "
                               "flashband has no attention dropout")
    for name, what in _REFUSED.items():
        if kwargs.get(name) is not None:
            raise UnsupportedError(f"{name}: flashband does not compute {what}")
    if kwargs.get("output_attentions") or _attentions_requested():
        raise UnsupportedError("output_attentions: flashband never forms the attention weights; "
                               "use attn_implementation='eager' to inspect them")
    if torch.is_grad_enabled() and any(t.requires_grad for t in (query, key, value)):
        raise UnsupportedError("flashband has no backward: run the model under torch.no_grad() "
                               "or torch.inference_mode() (gradients would silently stop here)")
    if key.shape[-1] != query.shape[-1] or value.shape[-1] != query.shape[-1]:
        raise UnsupportedError(f"head_dim: q {query.shape[-1]}, k {key.shape[-1]}, v {value.shape[-1]}; "
                               "flashband needs one head dim for q, k and v")


def _attentions_requested() -> bool:
    """transformers 5 records attention weights with hooks on the attention modules when
    output_attentions=True, without telling the attention function; its collector says so."""
    try:
        from transformers.utils.output_capturing import _active_collector
    except ImportError:
        return False
    try:
        collected = _active_collector.get()
    except (LookupError, TypeError):  # a plain ContextVar without a default in other versions
        return False
    return isinstance(collected, dict) and "attentions" in collected


def _mask_of(module: Any, attention_mask: Any, kv_length: int, q_length: int) -> BandMask:
    """The BandMask transformers built with our mask function; None when transformers built
    no mask for this call (the module's is_causal then decides, as for sdpa); anything else
    (a 4-D mask the caller prepared, a mask of another implementation) is refused."""
    if isinstance(attention_mask, BandMask):
        return attention_mask
    if attention_mask is None:
        causal = bool(getattr(module, "is_causal", True))
        if causal and q_length > kv_length:
            raise UnsupportedError(f"causal attention of {q_length} queries over {kv_length} keys without a mask")
        return BandMask(causal=causal, window=None, kv_len=kv_length, first_key=None)
    shape = tuple(getattr(attention_mask, "shape", ()))
    raise UnsupportedError(
        f"attention_mask: a {type(attention_mask).__name__} of shape {shape} reached the flashband "
        "attention; it takes the masks its own mask function builds (causal, sliding window, "
        "left padding), not prepared 4-D or custom masks")


def _settings(mask_window: Optional[int], sliding_window: Optional[int],
              softcap: Optional[float], scaling: Optional[float], module: Any) -> dict:
    """The plan settings of a layer. transformers' sliding_window W lets a query see its W
    most recent keys, itself included (sliding_window_overlay: kv_idx > q_idx - W);
    flashband's window_left counts the keys left of the diagonal, so W - 1. The layer's W and
    its mask's (mask_window) must agree."""
    if mask_window is not None and sliding_window is not None and mask_window != sliding_window:
        raise InvalidArgumentError(
            f"sliding_window: layer {type(module).__name__} passes {sliding_window} but its mask "
            f"was built for {mask_window}")
    window = sliding_window if sliding_window is not None else mask_window
    if window is not None and window < 1:
        raise InvalidArgumentError(f"sliding_window: got {window}, allowed: >= 1")
    return dict(window_left=-1 if window is None else int(window) - 1,
                logits_soft_cap=None if not softcap else float(softcap),
                sm_scale=None if scaling is None else float(scaling))


def _decode(query: Any, key: Any, value: Any, kv_len: int, settings: dict, backend: str,
            out: Any) -> None:
    """One paged decode over transformers' whole cache: page b is batch row b, [Hk, S, D]
    (HND), kv_len keys of it in use."""
    import torch

    batch, heads, dim = query.shape
    kv_heads, slots = key.shape[1], key.shape[2]

    def plan(wrapper: Any) -> None:
        indptr = torch.arange(batch + 1, dtype=torch.int32)
        last = torch.full((batch,), kv_len, dtype=torch.int32)
        wrapper.plan(indptr, indptr[:-1], last, heads, kv_heads, dim, slots,
                     q_data_type=query.dtype, kv_data_type=key.dtype, num_pages=batch, **settings)

    shape = (batch, heads, kv_heads, dim, slots, kv_len, query.dtype)
    plans.planned("decode", query, backend, settings, batch, shape, plan).run(query, (key, value), out=out)


def _varlen(query: Any, key: Any, value: Any, qo_indptr: Any, kv_indptr: Any, settings: dict,
            backend: str, out: Any) -> None:
    """transformers' continuous batching: the step's requests packed along one row, q
    [1, Hq, Tq, D] and their gathered K/V [1, Hk, Tk, D], request r's queries its last
    tokens (cu_seq_lens_q/k). One ragged causal prefill over them, read in place (q's row
    transposed is NHD, K/V's row HND)."""
    import torch

    if query.device.type == "cuda" and torch.cuda.is_current_stream_capturing():
        raise UnsupportedError("continuous batching: use_cuda_graph captures the model step, but "
                               "flashband plans each step on the host; pass "
                               "ContinuousBatchingConfig(use_cuda_graph=False)")
    qo = tuple(int(x) for x in qo_indptr.tolist())
    kv = tuple(int(x) for x in kv_indptr.tolist())
    heads, kv_heads, dim = query.shape[1], key.shape[1], query.shape[3]
    # transformers may pad the packed rows past the last request (q_padding_interval_size):
    # those rows belong to no request and come out as 0.
    rows = qo[-1]
    out[0, rows:].zero_()
    q = query[0, :, :rows].transpose(0, 1)

    def plan(wrapper: Any) -> None:
        wrapper.plan(qo_indptr, kv_indptr, heads, kv_heads, dim, causal=True,
                     q_data_type=query.dtype, kv_data_type=key.dtype, **settings)

    plan_key = (len(qo) - 1, qo, kv, heads, kv_heads, dim, query.dtype)
    wrapper = plans.planned("ragged", q, backend, settings, rows, plan_key, plan)
    wrapper.run(q, key[0], value[0], out=out[0, :rows])


def flashband_attention(module: Any, query: Any, key: Any, value: Any, attention_mask: Any,
                        dropout: float = 0.0, scaling: Optional[float] = None,
                        sliding_window: Optional[int] = None, softcap: Optional[float] = None,
                        *, backend: str = "auto", **kwargs: Any) -> Tuple[Any, None]:
    import torch

    _refuse_unsupported(module, query, key, value, dropout, kwargs)
    batch, heads, q_len, dim = query.shape
    out = torch.empty((batch, q_len, heads, dim), dtype=query.dtype, device=query.device)
    if kwargs.get("cu_seq_lens_q") is not None:  # continuous batching's packed requests
        if attention_mask is not None or batch != 1 or kwargs.get("block_table") is not None:
            raise UnsupportedError(
                "continuous batching: flashband takes packed requests (cu_seq_lens_q/k) over "
                "gathered K/V without a mask (the FlashAttention-style inputs); got "
                f"attention_mask {type(attention_mask).__name__}, batch {batch}, block_table "
                f"{type(kwargs.get('block_table')).__name__}")
        settings = _settings(None, sliding_window, softcap, scaling, module)
        _varlen(query, key, value, kwargs["cu_seq_lens_q"], kwargs["cu_seq_lens_k"], settings,
                backend, out)
        return out, None
    mask = _mask_of(module, attention_mask, key.shape[2], q_len)
    settings = _settings(mask.window, sliding_window, softcap, scaling, module)
    if q_len == 1 and mask.first_key is None and mask.causal:
        _decode(query[:, :, 0, :], key, value, mask.kv_len, settings, backend,
                out.view(batch, heads, dim))
        return out, None
    for b in range(batch):
        first = mask.first_key[b] if mask.first_key is not None else 0
        single_prefill_with_kv_cache(
            query[b].transpose(0, 1), key[b, :, first:mask.kv_len], value[b, :, first:mask.kv_len],
            causal=mask.causal, kv_layout="HND", backend=backend, out=out[b], **settings)
    return out, None
