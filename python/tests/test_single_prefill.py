"""single_prefill_with_kv_cache against the float64 oracle: bottom-right causal, window_left,
soft cap, GQA/MQA, NHD/HND, qo_len > kv_len (fully masked rows), base-2 LSE."""

import numpy as np
import pytest

import flashband
from _cases import kv_layout, rand
from _checks import assert_differs, assert_empty_rows_exact, assert_lse, assert_out

# (qo_len, kv_len): single row, square, qo < kv, qo > kv (rows with p(i) < 0), tile edges.
SHAPES = [(1, 1), (7, 7), (5, 130), (130, 5), (1, 333), (128, 128), (200, 517)]
HEADS = [(4, 4), (4, 1), (6, 2), (8, 2)]
HEAD_DIMS = [64, 128, 256]
MASKS = [(False, -1), (True, -1), (False, 4), (True, 4)]
WINDOW_NOOP_BELOW = 10  # kv_len at which a window of 4 must change the result


def problem(i):
    (qo, kv), (hq, hk), d = SHAPES[i], HEADS[i % len(HEADS)], HEAD_DIMS[i % len(HEAD_DIMS)]
    return qo, kv, hq, hk, d


@pytest.mark.parametrize("layout", ["NHD", "HND"])
@pytest.mark.parametrize("cap", [None, 2.0], ids=["nocap", "cap2"])
@pytest.mark.parametrize("causal,window", MASKS, ids=["full", "causal", "window", "causal_window"])
@pytest.mark.parametrize("shape", range(len(SHAPES)), ids=[f"{q}x{k}" for q, k in SHAPES])
def test_single_prefill(env, dtype, shape, causal, window, cap, layout):
    qo, kv, hq, hk, d = problem(shape)
    empty_rows = causal and qo > kv
    env.require(op="single_prefill", dtype=dtype, head_dim=d, num_qo_heads=hq, num_kv_heads=hk,
                causal=causal, window_left=window, logits_soft_cap=cap, return_lse=True,
                kv_layout=layout, has_empty_rows=empty_rows)
    rng = np.random.default_rng(1000 + shape)
    q32 = rand(rng, qo, hq, d, scale=2.0 if cap else 1.0)
    k32, v32 = rand(rng, kv, hk, d), rand(rng, kv, hk, d)
    q, k, v = env.array(q32, dtype), env.array(k32, dtype), env.array(v32, dtype)
    q64, k64, v64 = env.to64(q), env.to64(k), env.to64(v)
    kl, vl = env.array(kv_layout(k32, layout), dtype), env.array(kv_layout(v32, layout), dtype)

    out, lse = flashband.single_prefill_with_kv_cache(
        q, kl, vl, causal=causal, window_left=window, logits_soft_cap=cap, kv_layout=layout,
        return_lse=True, backend=env.backend)
    env.sync()
    ref_o, ref_lse = env.reference(q64, k64, v64, causal=causal, window_left=window,
                                   logits_soft_cap=cap)
    if window >= 0 and kv >= WINDOW_NOOP_BELOW:
        assert_differs(ref_o, env.reference(q64, k64, v64, causal=causal, logits_soft_cap=cap)[0])
    assert_out(env.to64(out), ref_o, dtype)
    assert_lse(env.to64(lse), ref_lse, dtype)
    assert_empty_rows_exact(env.to64(out), ref_lse)
    ran = flashband.last_run_info().backend
    assert ran == env.backend or (env.backend == "auto" and (ran == "cpu") == (env.device == "cpu"))


@pytest.mark.parametrize("sm_scale", [0.05, 0.3])
def test_single_prefill_sm_scale_without_lse(env, dtype, sm_scale):
    qo, kv, hq, hk, d = 33, 65, 4, 2, 128
    env.require(op="single_prefill", dtype=dtype, head_dim=d, num_qo_heads=hq, num_kv_heads=hk,
                causal=True)
    rng = np.random.default_rng(7)
    q, k, v = (env.array(rand(rng, n, h, d), dtype) for n, h in ((qo, hq), (kv, hk), (kv, hk)))
    out = flashband.single_prefill_with_kv_cache(q, k, v, causal=True, sm_scale=sm_scale,
                                                 backend=env.backend)
    env.sync()
    ref_o, _ = env.reference(env.to64(q), env.to64(k), env.to64(v), causal=True,
                             sm_scale=sm_scale)
    assert_out(env.to64(out), ref_o, dtype)


def test_fully_masked_rows_are_zero_and_minus_inf(env, dtype):
    # causal with qo_len > kv_len: the first qo - kv rows see no key.
    qo, kv, hq, hk, d = 9, 4, 2, 1, 64
    env.require(op="single_prefill", dtype=dtype, head_dim=d, num_qo_heads=hq, num_kv_heads=hk,
                causal=True, return_lse=True, has_empty_rows=True)
    rng = np.random.default_rng(3)
    q, k, v = (env.array(rand(rng, n, h, d), dtype) for n, h in ((qo, hq), (kv, hk), (kv, hk)))
    out, lse = flashband.single_prefill_with_kv_cache(q, k, v, causal=True, return_lse=True,
                                                      backend=env.backend)
    env.sync()
    out, lse = env.to64(out), env.to64(lse)
    assert (out[: qo - kv] == 0).all()
    assert np.isneginf(lse[: qo - kv]).all()
    assert np.isfinite(lse[qo - kv:]).all()


def test_single_decode(env, dtype):
    kv, hq, hk, d = 77, 8, 2, 128
    env.require(op="single_prefill", dtype=dtype, head_dim=d, num_qo_heads=hq, num_kv_heads=hk,
                window_left=20, return_lse=True)
    rng = np.random.default_rng(11)
    q, k, v = (env.array(rand(rng, *s), dtype) for s in ((hq, d), (kv, hk, d), (kv, hk, d)))
    out, lse = flashband.single_decode_with_kv_cache(q, k, v, window_left=20, return_lse=True,
                                                     backend=env.backend)
    env.sync()
    ref_o, ref_lse = env.reference(env.to64(q)[None], env.to64(k), env.to64(v), window_left=20)
    assert_out(env.to64(out), ref_o[0], dtype)
    assert_lse(env.to64(lse), ref_lse[0], dtype)
