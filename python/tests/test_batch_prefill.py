"""Batch prefill over a ragged KV and over a paged KV (separate k/v or stacked, NHD/HND,
page sizes 1 / 3 / 16) against the per-request float64 oracle. The batch has an empty
request, a request with no keys (rows -> 0 and -inf) and one with qo_len > kv_len."""

import numpy as np
import pytest

import flashband
from _cases import Paged, Ragged, kv_layout
from _checks import assert_differs, assert_empty_rows_exact, assert_lse, assert_out

# Requests: (qo_len, kv_len).
REQUESTS = [(3, 40), (0, 0), (17, 17), (9, 4), (2, 0), (1, 150), (0, 12), (64, 300)]
MASKS = [(False, -1), (True, -1), (False, 6), (True, 6)]
MASK_IDS = ["full", "causal", "window", "causal_window"]


def make_batch(seed, hq=8, hk=2, d=128, q_scale=1.0):
    rng = np.random.default_rng(seed)
    qo, kv = zip(*REQUESTS)
    return rng, Ragged(rng, qo, kv, hq, hk, d, q_scale=q_scale)


def check(env, batch, q, out, lse, dtype, causal, window, cap):
    """out (and lse) against the per-request oracle over the dtype-rounded inputs."""
    env.sync()
    q64 = env.to64(q)
    k64, v64 = env.to64(env.array(batch.k, dtype)), env.to64(env.array(batch.v, dtype))
    ref_o, ref_lse = batch.reference(env.reference, q64, k64, v64, causal=causal,
                                     window_left=window, logits_soft_cap=cap)
    if window >= 0:
        plain, _ = batch.reference(env.reference, q64, k64, v64, causal=causal,
                                   logits_soft_cap=cap)
        assert_differs(ref_o, plain)
    assert_out(env.to64(out), ref_o, dtype)
    if lse is not None:
        assert_lse(env.to64(lse), ref_lse, dtype)
    assert_empty_rows_exact(env.to64(out), ref_lse)


@pytest.mark.parametrize("layout", ["NHD", "HND"])
@pytest.mark.parametrize("cap", [None, 2.0], ids=["nocap", "cap2"])
@pytest.mark.parametrize("causal,window", MASKS, ids=MASK_IDS)
def test_ragged(env, dtype, causal, window, cap, layout):
    rng, batch = make_batch(21, q_scale=2.0 if cap else 1.0)
    env.require(op="ragged_prefill", dtype=dtype, head_dim=batch.d, num_qo_heads=batch.hq,
                num_kv_heads=batch.hk, causal=causal, window_left=window, logits_soft_cap=cap,
                return_lse=True, kv_layout=layout,
                has_empty_rows=batch.has_empty_rows_causal if causal else batch.has_empty_rows)
    q = env.array(batch.q, dtype)
    k = env.array(kv_layout(batch.k, layout), dtype)
    v = env.array(kv_layout(batch.v, layout), dtype)
    nbytes = flashband.batch_workspace_bytes(batch.batch, q.shape[0], batch.hq, batch.d,
                                             env.device)
    wrapper = flashband.BatchPrefillWithRaggedKVCacheWrapper(env.workspace(nbytes), layout,
                                                             backend=env.backend)
    wrapper.plan(env.index(batch.qo_indptr), env.index(batch.kv_indptr), batch.hq, batch.hk,
                 batch.d, causal=causal, window_left=window, logits_soft_cap=cap,
                 q_data_type=dtype, return_lse=True)
    out, lse = wrapper.run(q, k, v, return_lse=True)
    check(env, batch, q, out, lse, dtype, causal, window, cap)
    if env.backend != "auto":
        assert wrapper.last_run_info.backend == env.backend
    # The same plan runs again (plan once, run per layer) and without LSE (re-plans).
    out2 = wrapper.run(q, k, v)
    check(env, batch, q, out2, None, dtype, causal, window, cap)


@pytest.mark.parametrize("stacked", [False, True], ids=["kv_tuple", "stacked"])
@pytest.mark.parametrize("layout", ["NHD", "HND"])
@pytest.mark.parametrize("page_size", [1, 3, 16])
@pytest.mark.parametrize("causal,window", MASKS, ids=MASK_IDS)
def test_paged(env, dtype, causal, window, page_size, layout, stacked):
    rng, batch = make_batch(22)
    env.require(op="paged_prefill", dtype=dtype, head_dim=batch.d, num_qo_heads=batch.hq,
                num_kv_heads=batch.hk, causal=causal, window_left=window, return_lse=True,
                kv_layout=layout, page_size=page_size,
                has_empty_rows=batch.has_empty_rows_causal if causal else batch.has_empty_rows)
    paged = Paged(rng, batch, page_size)
    k_pages = Paged.layout(paged.k_pages, layout)
    v_pages = Paged.layout(paged.v_pages, layout)
    if stacked:
        cache = env.array(np.stack([k_pages, v_pages], axis=1), dtype)
    else:
        cache = (env.array(k_pages, dtype), env.array(v_pages, dtype))
    q = env.array(batch.q, dtype)
    nbytes = flashband.batch_workspace_bytes(batch.batch, q.shape[0], batch.hq, batch.d,
                                             env.device)
    wrapper = flashband.BatchPrefillWithPagedKVCacheWrapper(env.workspace(nbytes), layout,
                                                            backend=env.backend)
    wrapper.plan(env.index(batch.qo_indptr), env.index(paged.indptr), env.index(paged.indices),
                 env.index(paged.last_page_len), batch.hq, batch.hk, batch.d, page_size,
                 causal=causal, window_left=window, q_data_type=dtype, return_lse=True)
    out, lse = wrapper.run(q, cache, return_lse=True)
    check(env, batch, q, out, lse, dtype, causal, window, None)


def test_paged_matches_ragged(env, dtype):
    """Paging changes addressing only: same inputs, same backend -> results within tolerance."""
    rng, batch = make_batch(23)
    env.require(op="paged_prefill", dtype=dtype, head_dim=batch.d, num_qo_heads=batch.hq,
                num_kv_heads=batch.hk, causal=True, page_size=16, has_empty_rows=True)
    env.require(op="ragged_prefill", dtype=dtype, head_dim=batch.d, num_qo_heads=batch.hq,
                num_kv_heads=batch.hk, causal=True, has_empty_rows=True)
    paged = Paged(rng, batch, 16)
    q = env.array(batch.q, dtype)
    ragged = flashband.BatchPrefillWithRaggedKVCacheWrapper(env.workspace(
        flashband.batch_workspace_bytes(batch.batch, q.shape[0], batch.hq, batch.d, env.device)),
        backend=env.backend)
    ragged.plan(env.index(batch.qo_indptr), env.index(batch.kv_indptr), batch.hq, batch.hk,
                batch.d, causal=True, q_data_type=dtype)
    out_r = ragged.run(q, env.array(batch.k, dtype), env.array(batch.v, dtype))
    wrapper = flashband.BatchPrefillWithPagedKVCacheWrapper(env.workspace(
        flashband.batch_workspace_bytes(batch.batch, q.shape[0], batch.hq, batch.d, env.device)),
        backend=env.backend)
    wrapper.plan(env.index(batch.qo_indptr), env.index(paged.indptr), env.index(paged.indices),
                 env.index(paged.last_page_len), batch.hq, batch.hk, batch.d, 16, causal=True,
                 q_data_type=dtype, num_pages=paged.num_pages)
    out_p = wrapper.run(q, (env.array(paged.k_pages, dtype), env.array(paged.v_pages, dtype)))
    env.sync()
    assert_out(env.to64(out_p), env.to64(out_r), dtype, what="paged vs ragged")


def test_q_rows_must_match_qo_indptr(env, dtype):
    """q with more (or fewer) rows than qo_indptr[-1] is refused before anything is written,
    as FlashInfer refuses it: rows past the last request would be left unwritten. Decode's
    q has one row per request."""
    rng, batch = make_batch(25)
    env.require(op="paged_prefill", dtype=dtype, head_dim=batch.d, num_qo_heads=batch.hq,
                num_kv_heads=batch.hk, page_size=16, has_empty_rows=True)
    paged = Paged(rng, batch, 16)
    kv = (env.array(paged.k_pages, dtype), env.array(paged.v_pages, dtype))
    tokens = batch.q.shape[0]
    wrapper = flashband.BatchPrefillWithPagedKVCacheWrapper(env.workspace(
        flashband.batch_workspace_bytes(batch.batch, tokens + 1, batch.hq, batch.d, env.device)),
        backend=env.backend)
    wrapper.plan(env.index(batch.qo_indptr), env.index(paged.indptr), env.index(paged.indices),
                 env.index(paged.last_page_len), batch.hq, batch.hk, batch.d, 16,
                 q_data_type=dtype, num_pages=paged.num_pages)
    for rows in (tokens + 1, tokens - 1):
        q = env.array(np.resize(batch.q, (rows,) + batch.q.shape[1:]), dtype)
        out = env.array(np.full((rows,) + batch.q.shape[1:], 7.0), dtype)
        with pytest.raises(flashband.InvalidArgumentError,
                           match=rf"^q: {rows} tokens, but the plan's qo_indptr ends at {tokens}$"):
            wrapper.run(q, kv, out=out)
        env.sync()
        assert np.all(env.to64(out) == 7.0)

    if not flashband.supports(op="paged_decode", backend=env.backend, device=env.device,
                              dtype=dtype, head_dim=batch.d, num_qo_heads=batch.hq,
                              num_kv_heads=batch.hk, page_size=16, has_empty_rows=True):
        return
    decode = flashband.BatchDecodeWithPagedKVCacheWrapper(env.workspace(
        flashband.batch_workspace_bytes(batch.batch, batch.batch, batch.hq, batch.d, env.device)),
        backend=env.backend)
    decode.plan(env.index(paged.indptr), env.index(paged.indices), env.index(paged.last_page_len),
                batch.hq, batch.hk, batch.d, 16, q_data_type=dtype, num_pages=paged.num_pages)
    q = env.array(batch.q[:batch.batch + 1], dtype)
    with pytest.raises(flashband.InvalidArgumentError,
                       match=rf"^q: decode expects \[batch_size={batch.batch},"):
        decode.run(q, kv)
