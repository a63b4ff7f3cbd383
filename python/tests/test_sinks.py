"""Attention sinks (SPEC.md "Attention sinks") on every Python entry point against the float64
oracle: FlashInfer's run(sinks=) of the paged prefill and decode wrappers, and flashband's
extension to single prefill and the ragged wrapper. Each case first shows that its sinks
change the reference, so a backend ignoring them fails."""

import math

import numpy as np
import pytest

import flashband
from _cases import Paged, Ragged, rand
from _checks import assert_differs, assert_empty_rows_exact, assert_lse, assert_out

# Per-head sinks: negligible, small, about the weight of all keys together, dominant.
SINKS = np.array([-30.0, 0.5, 4.0, 6.5, -3.0, 2.5, 5.0, 1.0], dtype=np.float32)


def sinks_for(heads, shift=0):
    return np.roll(SINKS, shift)[:heads].copy()


def check(env, out, lse, ref_o, ref_lse, plain_o, plain_lse, dtype):
    assert_differs(np.concatenate([ref_o.ravel(), ref_lse[np.isfinite(ref_lse)]]),
                   np.concatenate([plain_o.ravel(), plain_lse[np.isfinite(ref_lse)]]), what="sinks")
    assert_out(env.to64(out), ref_o, dtype)
    assert_lse(env.to64(lse), ref_lse, dtype)
    assert_empty_rows_exact(env.to64(out), np.where(np.isfinite(ref_lse) & ~np.isfinite(plain_lse),
                                                    -np.inf, ref_lse))


MASKS = [(False, -1, None), (True, -1, None), (True, 5, None), (False, 9, 3.0), (True, -1, 3.0)]


@pytest.mark.parametrize("causal,window_left,cap", MASKS,
                         ids=[f"{'causal' if c else 'full'}_wl{w}_cap{cap}" for c, w, cap in MASKS])
@pytest.mark.parametrize("hq,hk", [(4, 2), (3, 3), (8, 1)])
def test_single_prefill(env, dtype, causal, window_left, cap, hq, hk):
    qo, kv, d = 70, 50, 64  # causal: the first 20 rows see no key (0, the sink's LSE)
    env.require(op="single_prefill", dtype=dtype, head_dim=d, num_qo_heads=hq, num_kv_heads=hk,
                causal=causal, window_left=window_left, logits_soft_cap=cap, return_lse=True,
                has_empty_rows=causal, sinks=True)
    rng = np.random.default_rng(8000 + hq + window_left)
    q, k, v = (env.array(rand(rng, n, h, d), dtype) for n, h in ((qo, hq), (kv, hk), (kv, hk)))
    sinks = sinks_for(hq, hk)
    out, lse = flashband.single_prefill_with_kv_cache(
        q, k, v, causal=causal, window_left=window_left, logits_soft_cap=cap, return_lse=True,
        sinks=env.array(sinks, "float32"), backend=env.backend)
    env.sync()
    kw = dict(causal=causal, window_left=window_left, logits_soft_cap=cap)
    q64, k64, v64 = env.to64(q), env.to64(k), env.to64(v)
    ref_o, ref_lse = env.reference(q64, k64, v64, sinks=sinks, **kw)
    plain_o, plain_lse = env.reference(q64, k64, v64, **kw)
    check(env, out, lse, ref_o, ref_lse, plain_o, plain_lse, dtype)
    if causal:  # rows that see no key: exactly 0 and LSE = sink / ln 2
        lse64 = env.to64(lse)
        np.testing.assert_allclose(lse64[:qo - kv], np.broadcast_to(sinks / math.log(2.0), (qo - kv, hq)),
                                   atol=1e-5)


@pytest.mark.parametrize("kind", ["ragged", "paged", "paged_stacked"])
@pytest.mark.parametrize("causal", [False, True])
def test_batch_prefill(env, dtype, kind, causal):
    rng = np.random.default_rng(8100 + causal)
    qo_lens, kv_lens = [40, 0, 20, 9, 30], [263, 13, 200, 0, 11]
    hq, hk, d = 4, 2, 64
    batch = Ragged(rng, qo_lens, kv_lens, hq, hk, d)
    op = "ragged_prefill" if kind == "ragged" else "paged_prefill"
    env.require(op=op, dtype=dtype, head_dim=d, num_qo_heads=hq, num_kv_heads=hk, causal=causal,
                return_lse=True, page_size=0 if kind == "ragged" else 16, has_empty_rows=True, sinks=True)
    nbytes = flashband.batch_workspace_bytes(batch.batch, sum(qo_lens), hq, d, env.device)
    q = env.array(batch.q, dtype)
    sinks = sinks_for(hq, 3)
    if kind == "ragged":
        w = flashband.BatchPrefillWithRaggedKVCacheWrapper(env.workspace(nbytes), backend=env.backend)
        w.plan(env.index(batch.qo_indptr), env.index(batch.kv_indptr), hq, hk, d, q_data_type=dtype,
               causal=causal, return_lse=True)
        out, lse = w.run(q, env.array(batch.k, dtype), env.array(batch.v, dtype), return_lse=True,
                         sinks=env.array(sinks, "float32"))
    else:
        pages = Paged(rng, batch, 16)
        w = flashband.BatchPrefillWithPagedKVCacheWrapper(env.workspace(nbytes), backend=env.backend)
        w.plan(env.index(batch.qo_indptr), env.index(pages.indptr), env.index(pages.indices),
               env.index(pages.last_page_len), hq, hk, d, 16, q_data_type=dtype, causal=causal,
               return_lse=True)
        kp, vp = env.array(pages.k_pages, dtype), env.array(pages.v_pages, dtype)
        cache = (kp, vp)
        if kind == "paged_stacked":
            stacked = np.stack([pages.k_pages, pages.v_pages], axis=1)
            cache = env.array(stacked, dtype)
        out, lse = w.run(q, cache, return_lse=True, sinks=env.array(sinks, "float32"))
    env.sync()
    q64, k64, v64 = env.to64(q), env.to64(env.array(batch.k, dtype)), env.to64(env.array(batch.v, dtype))
    ref_o, ref_lse = batch.reference(env.reference, q64, k64, v64, causal=causal, sinks=sinks)
    plain_o, plain_lse = batch.reference(env.reference, q64, k64, v64, causal=causal)
    check(env, out, lse, ref_o, ref_lse, plain_o, plain_lse, dtype)


@pytest.mark.parametrize("window_left", [-1, 7])
def test_decode(env, dtype, window_left):
    rng = np.random.default_rng(8200)
    kv_lens = [1, 17, 0, 129, 4099]  # an empty request; a long one that GPU plans split
    hq, hk, d = 8, 2, 128
    batch = Ragged(rng, [1] * len(kv_lens), kv_lens, hq, hk, d)
    env.require(op="paged_decode", dtype=dtype, head_dim=d, num_qo_heads=hq, num_kv_heads=hk,
                window_left=window_left, return_lse=True, page_size=16, has_empty_rows=True, sinks=True)
    paged = Paged(rng, batch, 16)
    nbytes = flashband.batch_workspace_bytes(batch.batch, batch.batch, hq, d, env.device)
    w = flashband.BatchDecodeWithPagedKVCacheWrapper(env.workspace(nbytes), backend=env.backend)
    w.plan(env.index(paged.indptr), env.index(paged.indices), env.index(paged.last_page_len), hq, hk, d,
           16, q_data_type=dtype, window_left=window_left)
    sinks = sinks_for(hq, 1)
    q = env.array(batch.q, dtype)
    out, lse = w.run(q, (env.array(paged.k_pages, dtype), env.array(paged.v_pages, dtype)), return_lse=True,
                     sinks=env.array(sinks, "float32"))
    env.sync()
    q64, k64, v64 = env.to64(q), env.to64(env.array(batch.k, dtype)), env.to64(env.array(batch.v, dtype))
    ref_o, ref_lse = batch.reference(env.reference, q64, k64, v64, window_left=window_left, sinks=sinks)
    plain_o, plain_lse = batch.reference(env.reference, q64, k64, v64, window_left=window_left)
    check(env, out, lse, ref_o, ref_lse, plain_o, plain_lse, dtype)


def test_run_with_and_without_sinks_replans():
    """A plan made without sinks serves a run with them (one re-plan, as for return_lse), and
    the next run without them is plain attention again."""
    rng = np.random.default_rng(8300)
    batch = Ragged(rng, [5, 9], [12, 9], 2, 2, 64)
    w = flashband.BatchPrefillWithRaggedKVCacheWrapper(np.empty(0, np.uint8), backend="cpu")
    w.plan(batch.qo_indptr, batch.kv_indptr, 2, 2, 64, q_data_type="float32")
    sinks = np.array([5.0, 3.0], np.float32)
    with_sinks = w.run(batch.q, batch.k, batch.v, sinks=sinks)
    without = w.run(batch.q, batch.k, batch.v)
    ref_with, _ = batch.reference(flashband_reference, batch.q, batch.k, batch.v, sinks=sinks)
    ref_without, _ = batch.reference(flashband_reference, batch.q, batch.k, batch.v)
    assert_differs(ref_with, ref_without, what="sinks")
    assert_out(with_sinks, ref_with, "float32")
    assert_out(without, ref_without, "float32")


def flashband_reference(q, k, v, **kw):
    from _reference import attention_np
    return attention_np(np.asarray(q, np.float64), np.asarray(k, np.float64), np.asarray(v, np.float64), **kw)


def test_bad_sinks_are_refused_by_name():
    rng = np.random.default_rng(8400)
    q, k, v = rand(rng, 9, 2, 64), rand(rng, 9, 2, 64), rand(rng, 9, 2, 64)
    run = lambda s: flashband.single_prefill_with_kv_cache(q, k, v, sinks=s, backend="cpu")
    with pytest.raises(flashband.InvalidArgumentError, match=r"sinks.*num_qo_heads"):
        run(np.zeros(3, np.float32))
    with pytest.raises(flashband.FlashbandError, match=r"sinks"):
        run(np.zeros(2, np.float64))
    with pytest.raises(flashband.InvalidArgumentError, match=r"sinks.*\[num_qo_heads\]"):
        run(np.zeros((1, 2), np.float32))
    with pytest.raises(flashband.InvalidArgumentError, match=r"sinks: stride"):
        run(np.zeros(4, np.float32)[::2])
    assert flashband.supports("paged_decode", backend="cpu", device="cpu", dtype="float32", page_size=16, sinks=True)
    assert flashband.select_backend("paged_prefill", device="cpu", dtype="float32", page_size=16, sinks=True) == "cpu"


def test_attention_sink_wrapper(env, dtype):
    """FlashInfer's BatchAttentionWithAttentionSinkWrapper: run(q, cache, sink, sm_scale)."""
    rng = np.random.default_rng(8500)
    qo_lens, kv_lens = [30, 1, 12], [90, 40, 12]
    hq, hk, d = 4, 2, 64
    batch = Ragged(rng, qo_lens, kv_lens, hq, hk, d)
    env.require(op="paged_prefill", dtype=dtype, head_dim=d, num_qo_heads=hq, num_kv_heads=hk, causal=True,
                window_left=20, page_size=16, sinks=True)
    pages = Paged(rng, batch, 16)
    nbytes = flashband.batch_workspace_bytes(batch.batch, sum(qo_lens), hq, d, env.device)
    w = flashband.BatchAttentionWithAttentionSinkWrapper(env.workspace(nbytes), backend=env.backend,
                                                         q_data_type=dtype, kv_data_type=dtype,
                                                         head_dim_qk=d, head_dim_vo=d, window_left=20)
    plan = (env.index(batch.qo_indptr), env.index(pages.indptr), env.index(pages.indices),
            env.index(pages.last_page_len), hq, hk, d, 16)
    w.plan(*plan, causal=True, window_left=20, q_data_type=dtype, kv_data_type=dtype)
    sinks = sinks_for(hq, 2)
    q = env.array(batch.q, dtype)
    cache = (env.array(pages.k_pages, dtype), env.array(pages.v_pages, dtype))
    out = w.run(q, cache, env.array(sinks, "float32"), 1.0 / math.sqrt(d))
    env.sync()
    q64, k64, v64 = env.to64(q), env.to64(env.array(batch.k, dtype)), env.to64(env.array(batch.v, dtype))
    ref_o, _ = batch.reference(env.reference, q64, k64, v64, causal=True, window_left=20, sinks=sinks)
    plain_o, _ = batch.reference(env.reference, q64, k64, v64, causal=True, window_left=20)
    assert_differs(ref_o, plain_o, what="sinks")
    assert_out(env.to64(out), ref_o, dtype)
    with pytest.raises(flashband.UnsupportedError, match="sm_scale"):
        w.run(q, cache, env.array(sinks, "float32"), 0.5)
    with pytest.raises(flashband.UnsupportedError, match="forward"):
        w.forward(q, cache)
    with pytest.raises(flashband.UnsupportedError, match="head_dim_qk"):
        w.plan(*plan[:6], 128, 16, q_data_type=dtype, kv_data_type=dtype)
    narrow = flashband.BatchAttentionWithAttentionSinkWrapper(env.workspace(nbytes), backend=env.backend,
                                                              q_data_type=dtype, kv_data_type=dtype,
                                                              head_dim_qk=d, head_dim_vo=d)
    with pytest.raises(flashband.UnsupportedError, match="window_left"):
        narrow.plan(*plan, window_left=20, q_data_type=dtype, kv_data_type=dtype)
