"""merge_state / merge_states against SPEC.md's formula in float64, including empty states
(s = -inf), and the semantic check: attention over two key halves, merged, equals attention
over all keys."""

import numpy as np

import flashband
from _cases import rand
from _checks import assert_lse, assert_out
from _reference import merge_np

N, H, D = 37, 4, 64


def states(env, dtype, rng, n_states):
    v = rand(rng, N, n_states, H, D)
    s = rand(rng, N, n_states, H, scale=3.0)
    s[::5, 0] = -np.inf                       # one side empty
    s[::7, :] = -np.inf                       # every side empty -> 0, -inf
    return env.array(v, dtype), env.array(s, "float32")


def test_merge_state(env, dtype):
    env.require(op="single_prefill", dtype=dtype, head_dim=D)
    rng = np.random.default_rng(41)
    v, s = states(env, dtype, rng, 2)
    v_a, v_b, s_a, s_b = v[:, 0], v[:, 1], s[:, 0], s[:, 1]
    v_out, s_out = flashband.merge_state(v_a, s_a, v_b, s_b)
    env.sync()
    ref_v, ref_s = merge_np(env.to64(v_a), env.to64(s_a), env.to64(v_b), env.to64(s_b))
    assert_out(env.to64(v_out), ref_v, dtype)
    assert_lse(env.to64(s_out), ref_s, dtype)
    assert (env.to64(v_out)[::7] == 0).all()


def test_merge_states(env, dtype):
    env.require(op="single_prefill", dtype=dtype, head_dim=D)
    rng = np.random.default_rng(42)
    v, s = states(env, dtype, rng, 5)
    v_out, s_out = flashband.merge_states(v, s)
    env.sync()
    v64, s64 = env.to64(v), env.to64(s)
    ref_v, ref_s = v64[:, 0], s64[:, 0]
    for i in range(1, 5):
        ref_v, ref_s = merge_np(ref_v, ref_s, v64[:, i], s64[:, i])
    assert_out(env.to64(v_out), ref_v, dtype)
    assert_lse(env.to64(s_out), ref_s, dtype)


def test_merging_two_halves_is_full_attention(env, dtype):
    qo, kv, hq, hk = 16, 90, 4, 2
    env.require(op="single_prefill", dtype=dtype, head_dim=D, num_qo_heads=hq,
                num_kv_heads=hk, return_lse=True)
    rng = np.random.default_rng(43)
    q = env.array(rand(rng, qo, hq, D), dtype)
    k = env.array(rand(rng, kv, hk, D), dtype)
    v = env.array(rand(rng, kv, hk, D), dtype)
    run = lambda kk, vv: flashband.single_prefill_with_kv_cache(
        q, kk, vv, return_lse=True, backend=env.backend)
    o_a, s_a = run(k[:40], v[:40])
    o_b, s_b = run(k[40:], v[40:])
    merged, s = flashband.merge_state(o_a, s_a, o_b, s_b)
    env.sync()
    ref_o, ref_lse = env.reference(env.to64(q), env.to64(k), env.to64(v))
    assert_out(env.to64(merged), ref_o, dtype)
    assert_lse(env.to64(s), ref_lse, dtype)
