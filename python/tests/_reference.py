"""The float64 oracle, written straight from SPEC.md "Scores, masks, softmax" and independently
of every backend: one NumPy version (host) and one torch version (runs on the GPU). Both take
NHD float64 tensors q [qo_len, Hq, D], k and v [kv_len, Hk, D] and return (o, lse) with
o [qo_len, Hq, D] and lse [qo_len, Hq] in base 2; rows that see no key give 0 and -inf.
sinks (SPEC.md "Attention sinks"): float [Hq] natural-log logits that join each row's
denominator with no value; a row that sees no key then gives 0 and sink / ln 2.
mask (SPEC.md "Custom masks"): the unpacked bool [qo_len, kv_len] matrix, ANDed with the
rest of visible(i, j) (never the packed bits: the oracle does not share the unpacking).
quantize_p (SPEC.md "fp8 attention"): the fp8-emulating oracle, which rounds each row's
weights to e4m3 as the formula states (e4m3_np, written from the format's definition)."""

import math

import numpy as np

LN2 = math.log(2.0)


def visible_np(qo_len, kv_len, causal, window_left, window_right=-1):
    """[qo_len, kv_len] bool: visible(i, j) with bottom-right alignment p(i) = i + kv - qo."""
    i = np.arange(qo_len)[:, None]
    j = np.arange(kv_len)[None, :]
    p = i + kv_len - qo_len
    vis = np.ones((qo_len, kv_len), dtype=bool)
    if causal:
        vis &= j <= p
    if window_left >= 0:
        vis &= j >= p - window_left
    if window_right >= 0:
        vis &= j <= p + window_right
    return vis


def e4m3_np(x):
    """x rounded to float8_e4m3fn: 3 mantissa bits, normal binades from 2^-6 (below it the
    subnormal step 2^-9), nearest with ties to even (np.round), saturating at +-448."""
    x = np.asarray(x, dtype=np.float64)
    a = np.abs(x)
    binade = np.maximum(np.floor(np.log2(np.where(a > 0, a, 1.0))), -6.0)
    step = np.exp2(binade - 3)
    return np.copysign(np.minimum(np.round(a / step) * step, 448.0), x)


def attention_np(q, k, v, *, causal=False, window_left=-1, window_right=-1, logits_soft_cap=None,
                 sm_scale=None, sinks=None, mask=None, quantize_p=False):
    assert not (quantize_p and sinks is not None), "fp8 attention's oracle takes no sinks here"
    qo_len, hq, d = q.shape
    kv_len, hk, _ = k.shape
    scale = 1.0 / math.sqrt(d) if sm_scale is None else sm_scale
    k = np.repeat(k, hq // hk, axis=1)  # query head h reads kv head h // (hq / hk)
    v = np.repeat(v, hq // hk, axis=1)
    s = np.einsum("ihd,jhd->hij", q, k) * scale
    if logits_soft_cap:
        s = logits_soft_cap * np.tanh(s / logits_soft_cap)
    vis = visible_np(qo_len, kv_len, causal, window_left, window_right)
    if mask is not None:
        vis &= np.asarray(mask, dtype=bool).reshape(qo_len, kv_len)
    s = np.where(vis[None], s, -np.inf)
    m = np.max(s, axis=-1, keepdims=True, initial=-np.inf)
    sink = None if sinks is None else np.asarray(sinks, dtype=np.float64).reshape(hq, 1, 1)
    if sink is not None:
        m = np.maximum(m, sink)
    m_safe = np.where(np.isfinite(m), m, 0.0)  # guards (-inf) - (-inf)
    e = np.exp(s - m_safe)
    l = e.sum(axis=-1, keepdims=True)
    if sink is not None:
        l = l + np.exp(sink - m_safe)  # the sink's term, no value
    seen = l > 0
    # fp8 attention: P8 = e4m3(2^8 exp(s - m)) against the row's final maximum, divided by
    # the row sum of the unquantized weights (the 2^8 cancels).
    p = e4m3_np(256.0 * e) / 256.0 if quantize_p else e
    o = np.einsum("hij,jhd->ihd", p / np.where(seen, l, 1.0), v)
    lse = np.where(seen, (m_safe + np.log(np.where(seen, l, 1.0))) / LN2, -np.inf)[..., 0]
    return o, lse.T.copy()


def attention_torch(q, k, v, *, causal=False, window_left=-1, window_right=-1, logits_soft_cap=None,
                    sm_scale=None, sinks=None, mask=None):
    """Same formulas in torch float64 on q's device, with an explicit mask."""
    import torch

    qo_len, hq, d = q.shape
    kv_len, hk, _ = k.shape
    sink = None if sinks is None else torch.as_tensor(sinks, dtype=torch.float64, device=q.device).reshape(hq, 1, 1)
    if kv_len == 0:
        lse = torch.full((qo_len, hq), -math.inf, dtype=q.dtype, device=q.device)
        if sink is not None:
            lse = (sink.reshape(1, hq) / LN2).expand(qo_len, hq).to(q.dtype).contiguous()
        return torch.zeros_like(q), lse
    scale = 1.0 / math.sqrt(d) if sm_scale is None else sm_scale
    k = torch.repeat_interleave(k, hq // hk, dim=1)
    v = torch.repeat_interleave(v, hq // hk, dim=1)
    s = torch.einsum("ihd,jhd->hij", q, k) * scale
    if logits_soft_cap:
        s = logits_soft_cap * torch.tanh(s / logits_soft_cap)
    i = torch.arange(qo_len, device=q.device)[:, None]
    j = torch.arange(kv_len, device=q.device)[None, :]
    p = i + kv_len - qo_len
    vis = torch.ones((qo_len, kv_len), dtype=torch.bool, device=q.device)
    if causal:
        vis &= j <= p
    if window_left >= 0:
        vis &= j >= p - window_left
    if window_right >= 0:
        vis &= j <= p + window_right
    if mask is not None:
        vis &= torch.as_tensor(np.asarray(mask, dtype=bool).reshape(qo_len, kv_len), device=q.device)
    s = s.masked_fill(~vis[None], -math.inf)
    m = s.amax(dim=-1, keepdim=True)
    if sink is not None:
        m = torch.maximum(m, sink)
    m_safe = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    e = torch.exp(s - m_safe)
    l = e.sum(dim=-1, keepdim=True)
    if sink is not None:
        l = l + torch.exp(sink - m_safe)
    seen = l > 0
    o = torch.einsum("hij,jhd->ihd", e / torch.where(seen, l, torch.ones_like(l)), v)
    lse = torch.where(seen, (m_safe + torch.log(torch.where(seen, l, torch.ones_like(l)))) / LN2,
                      torch.full_like(l, -math.inf))[..., 0]
    return o, lse.T.contiguous()


def merge_np(v_a, s_a, v_b, s_b):
    """SPEC.md "Merging partial states", float64."""
    m = np.maximum(s_a, s_b)
    m_safe = np.where(np.isfinite(m), m, 0.0)
    w_a = np.exp2(s_a - m_safe)
    w_b = np.exp2(s_b - m_safe)
    w = w_a + w_b
    seen = w > 0
    v = (w_a[..., None] * v_a + w_b[..., None] * v_b) / np.where(seen, w, 1.0)[..., None]
    s = np.where(seen, m_safe + np.log2(np.where(seen, w, 1.0)), -np.inf)
    return v, s
