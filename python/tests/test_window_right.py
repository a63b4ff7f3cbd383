"""window_right (SPEC.md): keys up to p(i) + window_right, on every Python entry point against
the float64 oracle. Prefill takes it as a flashband extension; the decode wrapper as
FlashInfer's plan argument, which with q_len_per_req > 1 replaces the causal bound. Each
case first shows that its right bound changes the reference, so a backend ignoring it fails."""

import numpy as np
import pytest

import flashband
from _cases import Paged, Ragged, rand
from _checks import assert_differs, assert_empty_rows_exact, assert_lse, assert_out

RIGHTS = [-1, 0, 1, 7, 128]
LEFTS = [-1, 0, 31, 127]
# causal is window_right 0: with causal=True only -1 and 0 are taken.
MASKS = [(c, wl, wr) for c in (False, True) for wl in LEFTS for wr in RIGHTS if not (c and wr > 0)]


def empty_rows(qo_lens, kv_lens, causal, window_right):
    """Some row sees no key: its right bound p(i) + r lies left of key 0, or kv_len 0."""
    right = 0 if causal else window_right
    return any(q > 0 and (kv == 0 or (right >= 0 and q > kv + right)) for q, kv in zip(qo_lens, kv_lens))


def clips(qo_lens, window_right):
    """window_right clips some row of some request (r < qo_len - 1)."""
    return window_right >= 1 and any(window_right < q - 1 for q in qo_lens)


@pytest.mark.parametrize("causal,window_left,window_right", MASKS,
                         ids=[f"{'causal' if c else 'full'}_wl{wl}_wr{wr}" for c, wl, wr in MASKS])
def test_single_prefill(env, dtype, causal, window_left, window_right):
    qo, kv, hq, hk, d = 190, 230, 4, 2, 64
    env.require(op="single_prefill", dtype=dtype, head_dim=d, num_qo_heads=hq, num_kv_heads=hk,
                causal=causal, window_left=window_left, window_right=window_right, return_lse=True,
                has_empty_rows=empty_rows([qo], [kv], causal, window_right))
    rng = np.random.default_rng(7000 + 10 * window_left + window_right)
    q, k, v = (env.array(rand(rng, n, h, d), dtype) for n, h in ((qo, hq), (kv, hk), (kv, hk)))
    q64, k64, v64 = env.to64(q), env.to64(k), env.to64(v)
    out, lse = flashband.single_prefill_with_kv_cache(
        q, k, v, causal=causal, window_left=window_left, window_right=window_right,
        return_lse=True, backend=env.backend)
    env.sync()
    kw = dict(causal=causal, window_left=window_left)
    ref_o, ref_lse = env.reference(q64, k64, v64, window_right=window_right, **kw)
    if clips([qo], window_right) and not causal:
        assert_differs(ref_o, env.reference(q64, k64, v64, **kw)[0], what="window_right")
    assert_out(env.to64(out), ref_o, dtype)
    assert_lse(env.to64(lse), ref_lse, dtype)
    assert_empty_rows_exact(env.to64(out), ref_lse)


# (window_left, window_right) pairs for the batch wrappers: a band of each width.
BANDS = [(-1, 1), (0, 7), (31, 7), (127, 128), (-1, 128)]


@pytest.mark.parametrize("paged", [False, True], ids=["ragged", "paged"])
@pytest.mark.parametrize("window_left,window_right", BANDS, ids=[f"wl{a}_wr{b}" for a, b in BANDS])
def test_batch_prefill(env, dtype, paged, window_left, window_right):
    rng = np.random.default_rng(7100 + window_right)
    qo_lens, kv_lens = [170, 0, 20, 9], [263, 13, 200, 9]
    batch = Ragged(rng, qo_lens, kv_lens, 4, 2, 64)
    op = "paged_prefill" if paged else "ragged_prefill"
    env.require(op=op, dtype=dtype, head_dim=64, num_qo_heads=4, num_kv_heads=2,
                window_left=window_left, window_right=window_right, return_lse=True,
                page_size=16 if paged else 0,
                has_empty_rows=empty_rows(qo_lens, kv_lens, False, window_right))
    nbytes = flashband.batch_workspace_bytes(batch.batch, sum(qo_lens), 4, 64, env.device)
    q = env.array(batch.q, dtype)
    k, v = env.array(batch.k, dtype), env.array(batch.v, dtype)
    if paged:
        pages = Paged(rng, batch, 16)
        w = flashband.BatchPrefillWithPagedKVCacheWrapper(env.workspace(nbytes), backend=env.backend)
        w.plan(env.index(batch.qo_indptr), env.index(pages.indptr), env.index(pages.indices),
               env.index(pages.last_page_len), 4, 2, 64, 16, q_data_type=dtype,
               window_left=window_left, window_right=window_right, return_lse=True)
        out, lse = w.run(q, (env.array(pages.k_pages, dtype), env.array(pages.v_pages, dtype)),
                         return_lse=True)
    else:
        w = flashband.BatchPrefillWithRaggedKVCacheWrapper(env.workspace(nbytes), backend=env.backend)
        w.plan(env.index(batch.qo_indptr), env.index(batch.kv_indptr), 4, 2, 64, q_data_type=dtype,
               window_left=window_left, window_right=window_right, return_lse=True)
        out, lse = w.run(q, k, v, return_lse=True)
    env.sync()
    q64, k64, v64 = env.to64(q), env.to64(k), env.to64(v)
    ref_o, ref_lse = batch.reference(env.reference, q64, k64, v64, window_left=window_left,
                                     window_right=window_right)
    assert_differs(ref_o, batch.reference(env.reference, q64, k64, v64, window_left=window_left)[0],
                   what="window_right")
    assert_out(env.to64(out), ref_o, dtype)
    assert_lse(env.to64(lse), ref_lse, dtype)
    assert_empty_rows_exact(env.to64(out), ref_lse)


def plan_decode(env, batch, paged, dtype, q_len, **kw):
    nbytes = flashband.batch_workspace_bytes(batch.batch, q_len * batch.batch, batch.hq, batch.d,
                                             env.device)
    w = flashband.BatchDecodeWithPagedKVCacheWrapper(env.workspace(nbytes), backend=env.backend)
    w.plan(env.index(paged.indptr), env.index(paged.indices), env.index(paged.last_page_len),
           batch.hq, batch.hk, batch.d, paged.page_size, q_data_type=dtype, q_len_per_req=q_len, **kw)
    return w


@pytest.mark.parametrize("window_left", [-1, 5])
@pytest.mark.parametrize("window_right", [-1, 0, 1, 3])
def test_decode_several_queries_per_request(env, dtype, window_left, window_right):
    """FlashInfer's decode with q_len_per_req > 1: window_right replaces the causal bound
    (keys up to p(i) + window_right; 0 is causal, -1 none) rather than adding to it."""
    q_len = 6
    rng = np.random.default_rng(7200 + window_right)
    kv_lens = [6, 17, 40, 129]
    batch = Ragged(rng, [q_len] * len(kv_lens), kv_lens, 8, 2, 128)
    env.require(op="paged_prefill", dtype=dtype, head_dim=batch.d, num_qo_heads=batch.hq,
                num_kv_heads=batch.hk, causal=window_right == 0, window_left=window_left,
                window_right=window_right if window_right != 0 else -1, return_lse=True,
                page_size=16)
    paged = Paged(rng, batch, 16)
    w = plan_decode(env, batch, paged, dtype, q_len, window_left=window_left, window_right=window_right)
    assert w._causal == (window_right == 0)
    q = env.array(batch.q, dtype)
    out, lse = w.run(q, (env.array(paged.k_pages, dtype), env.array(paged.v_pages, dtype)),
                     return_lse=True)
    env.sync()
    q64, k64, v64 = env.to64(q), env.to64(env.array(batch.k, dtype)), env.to64(env.array(batch.v, dtype))
    ref_o, ref_lse = batch.reference(env.reference, q64, k64, v64, window_left=window_left,
                                     window_right=window_right)
    if window_right != 0:  # not causal: the causal reference is a different answer
        causal_o = batch.reference(env.reference, q64, k64, v64, causal=True, window_left=window_left)[0]
        assert_differs(ref_o, causal_o, what="window_right replacing causal")
    assert_out(env.to64(out), ref_o, dtype)
    assert_lse(env.to64(lse), ref_lse, dtype)


@pytest.mark.parametrize("window_right", [-1, 0, 5])
def test_decode_one_query_is_not_clipped(env, dtype, window_right):
    """One query per request sits on its request's last key: no window_right clips it."""
    rng = np.random.default_rng(7300)
    kv_lens = [1, 17, 40, 129]
    batch = Ragged(rng, [1] * len(kv_lens), kv_lens, 8, 2, 128)
    env.require(op="paged_decode", dtype=dtype, head_dim=batch.d, num_qo_heads=batch.hq,
                num_kv_heads=batch.hk, return_lse=True, page_size=16)
    paged = Paged(rng, batch, 16)
    w = plan_decode(env, batch, paged, dtype, 1, window_right=window_right)
    q = env.array(batch.q, dtype)
    out = w.run(q, (env.array(paged.k_pages, dtype), env.array(paged.v_pages, dtype)))
    env.sync()
    if env.device == "cpu":  # and it costs no masked kernel
        assert "/nomask/" in flashband.last_run_info().variant
    ref_o, _ = batch.reference(env.reference, env.to64(q), env.to64(env.array(batch.k, dtype)),
                               env.to64(env.array(batch.v, dtype)))
    assert_out(env.to64(out), ref_o, dtype)


def test_bad_window_right_is_refused_by_name():
    rng = np.random.default_rng(7400)
    q, k, v = rand(rng, 9, 2, 64), rand(rng, 9, 2, 64), rand(rng, 9, 2, 64)
    with pytest.raises(flashband.InvalidArgumentError, match=r"window_right: got -2, allowed: -1"):
        flashband.single_prefill_with_kv_cache(q, k, v, window_right=-2, backend="cpu")
    with pytest.raises(flashband.InvalidArgumentError, match=r"window_right: got 3 with causal=true"):
        flashband.single_prefill_with_kv_cache(q, k, v, causal=True, window_right=3, backend="cpu")
    batch = Ragged(rng, [1, 1], [5, 9], 2, 2, 64)
    paged = Paged(rng, batch, 4)
    w = flashband.BatchDecodeWithPagedKVCacheWrapper(np.empty(0, np.uint8), backend="cpu")
    with pytest.raises(flashband.InvalidArgumentError, match=r"window_right: got -2"):
        w.plan(paged.indptr, paged.indices, paged.last_page_len, 2, 2, 64, 4, window_right=-2)
    assert flashband.supports("ragged_prefill", backend="cpu", device="cpu", dtype="float32",
                              window_right=7)
    assert flashband.select_backend("ragged_prefill", device="cpu", dtype="float32", window_right=7) == "cpu"


def test_support_queries_refuse_what_every_plan_refuses():
    """causal with window_right >= 1: plan() refuses it on every backend, so supports() and
    select_backend() must not say yes to it (they did before: review of 2026-12-07)."""
    answer = flashband.supports("single_prefill", backend="cpu", device="cpu", dtype="float32",
                                causal=True, window_right=5)
    assert not answer and "window_right: got 5 with causal=true" in answer.reason
    auto = flashband.supports("single_prefill", device="cpu", dtype="float32", causal=True, window_right=5)
    assert not auto and "window_right" in auto.reason
    with pytest.raises(flashband.InvalidArgumentError, match=r"window_right: got 5 with causal=true"):
        flashband.select_backend("single_prefill", device="cpu", dtype="float32", causal=True, window_right=5)
    assert flashband.supports("single_prefill", backend="cpu", device="cpu", dtype="float32",
                              causal=True, window_right=0)
