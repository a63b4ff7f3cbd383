"""merge_state / merge_states against SPEC.md's formula in float64, including empty states
(s = -inf), and the semantic check: attention over two key halves, merged, equals attention
over all keys."""

import numpy as np
import pytest

import flashband
from _cases import rand
from _checks import assert_lse, assert_out
from _reference import attention_np, merge_np

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


@pytest.mark.parametrize("rows,states,heads,dim", [(1, 64, 32, 128), (3, 44, 3, 64), (2, 12, 5, 256),
                                                    (2, 24, 2, 96), (1, 64, 2, 16), (1, 16, 2, 1024),
                                                    (9, 3, 4, 128)])
@pytest.mark.parametrize("f32", [False, True], ids=["dtype", "f32"])
def test_merge_states_of_few_rows(env, dtype, rows, states, heads, dim, f32):
    """Many states over few rows (split-KV of a small batch), where the GPU merge may deal a
    row's states over groups of lanes: uneven groups (44 states in 8 groups), a group whose
    states are all empty, a row where the first group is empty, a row that sees nothing,
    values of NaN behind every empty state (never read), rows past a block's end, a head
    dim the lanes cover partly (96), one lane a row (16) and 64 (1024), float32 states (as
    split-KV writes them); 3 states stay on the plain kernel. Against a left fold in
    float64. The merge does not depend on the attention backend: the env's head dim 64
    gates it."""
    env.require(op="single_prefill", dtype=dtype, head_dim=64)
    rng = np.random.default_rng(47)
    v = rand(rng, rows, states, heads, dim)
    s = rand(rng, rows, states, heads, scale=3.0)
    s[:, 3::16] = -np.inf        # with 16 groups: group 3 holds no state
    s[-1, 0::16, 0] = -np.inf    # ... and in one row group 0 none
    s[0, :, 1] = -np.inf         # one row sees nothing: 0 and -inf
    in_dtype = "float32" if f32 else dtype
    v_in, s_in = env.array(v, in_dtype), env.array(s, "float32")
    v64, s64 = env.to64(v_in), env.to64(s_in)
    ref_v, ref_s = v64[:, 0], s64[:, 0]
    for i in range(1, states):
        ref_v, ref_s = merge_np(ref_v, ref_s, v64[:, i], s64[:, i])
    v[np.isneginf(s)] = np.nan   # an empty state's values are never read
    v_in = env.array(v, in_dtype)
    v_out, s_out = flashband.merge_states(v_in, s_in)
    env.sync()
    assert_out(env.to64(v_out), ref_v, in_dtype)
    assert_lse(env.to64(s_out), ref_s, in_dtype)
    assert (env.to64(v_out)[0, 1] == 0).all() and np.isneginf(env.to64(s_out)[0, 1])


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


def test_merge_state_in_place(env, dtype):
    """FlashInfer's merge_state_in_place: (v, s) becomes the merge with (v_other, s_other);
    a row mask is refused before anything is written."""
    env.require(op="single_prefill", dtype=dtype, head_dim=D)
    rng = np.random.default_rng(44)
    v, s = states(env, dtype, rng, 2)
    v_a, s_a = v[:, 0].clone() if hasattr(v, "clone") else v[:, 0].copy(), s[:, 0] * 1
    v_b, s_b = v[:, 1], s[:, 1]
    ref_v, ref_s = merge_np(env.to64(v_a), env.to64(s_a), env.to64(v_b), env.to64(s_b))
    before = env.to64(v_a)
    with pytest.raises(flashband.UnsupportedError, match="mask"):
        flashband.merge_state_in_place(v_a, s_a, v_b, s_b, mask=env.array(np.ones(N), "float32"))
    assert np.array_equal(env.to64(v_a), before)
    assert flashband.merge_state_in_place(v_a, s_a, v_b, s_b) is None
    env.sync()
    assert_out(env.to64(v_a), ref_v, dtype)
    assert_lse(env.to64(s_a), ref_s, dtype)
    if env.framework == "numpy":  # what cannot be written is refused before v is
        merged = env.to64(v_a)
        s_a.flags.writeable = False
        with pytest.raises(flashband.InvalidArgumentError, match="^s: a read-only array"):
            flashband.merge_state_in_place(v_a, s_a, v_b, s_b)
        expanded = np.lib.stride_tricks.as_strided(s_b, strides=(0, 4), writeable=True)
        with pytest.raises(flashband.InvalidArgumentError, match="^s: an expanded view"):
            flashband.merge_state_in_place(v_a, expanded, v_b, s_b)
        assert np.array_equal(env.to64(v_a), merged)


def _cascade_case(rng, hq=4, hk=2, d=D, page_size=4):
    """Three requests over three levels of one page pool: a 37-key prefix all of them share,
    a second level shared by requests 0 and 1 (20 keys) and request 2 alone (5 keys), and
    each request's own keys (9, 16 and 2: request 2 has fewer own keys than queries, so its
    first row sees none of them under causal). Returns the pool, the levels' arrays and
    the keys of each level's groups."""
    qo_lens = [2, 1, 3]
    levels = [([0, 3], [37]), ([0, 2, 3], [20, 5]), ([0, 1, 2, 3], [9, 16, 2])]  # groups of requests
    pool_pages = sum((n + page_size - 1) // page_size for _, lens in levels for n in lens) + 2
    order = rng.permutation(pool_pages).astype(np.int32)
    k_pages = np.full((pool_pages, page_size, hk, d), 50.0, np.float32)
    v_pages = np.full_like(k_pages, 50.0)
    rows = np.concatenate([[0], np.cumsum(qo_lens)]).astype(np.int32)
    arrays, keys, used = [], [], 0
    for groups, lens in levels:
        indptr, indices, last, level_keys = [0], [], [], []
        for n in lens:
            k, v = rand(rng, n, hk, d), rand(rng, n, hk, d)
            pages = order[used:used + (n + page_size - 1) // page_size]
            used += len(pages)
            for t in range(n):
                k_pages[pages[t // page_size], t % page_size] = k[t]
                v_pages[pages[t // page_size], t % page_size] = v[t]
            indices.extend(pages)
            indptr.append(len(indices))
            last.append(n - (len(pages) - 1) * page_size)
            level_keys.append((k, v))
        arrays.append((rows[groups].astype(np.int32), np.array(indptr, np.int32),
                       np.array(indices, np.int32), np.array(last, np.int32)))
        keys.append((groups, level_keys))
    q = rand(rng, int(rows[-1]), hq, d)
    return q, (k_pages, v_pages), arrays, keys, rows


def _cascade_reference(q, keys, rows, num_levels, causal):
    """float64: each level's attention over its group's keys (causal only in the last level,
    bottom-right per request), merged over the levels by SPEC.md's rule."""
    o, s = None, None
    for level, (groups, level_keys) in enumerate(keys[len(keys) - num_levels:]):
        last = level == num_levels - 1
        o_l = np.zeros(q.shape, np.float64)
        s_l = np.full(q.shape[:2], -np.inf)
        for g, (k, v) in enumerate(level_keys):
            r = slice(rows[groups[g]], rows[groups[g + 1]])
            o_l[r], s_l[r] = attention_np(q[r].astype(np.float64), k.astype(np.float64),
                                          v.astype(np.float64), causal=causal and last)
        o, s = (o_l, s_l) if o is None else merge_np(o, s, o_l, s_l)
    return o, s


@pytest.mark.parametrize("num_levels", [1, 2, 3])
@pytest.mark.parametrize("causal", [False, True])
def test_multi_level_cascade(env, dtype, num_levels, causal):
    """FlashInfer's MultiLevelCascadeAttentionWrapper: the last num_levels levels of the case
    (the request's own keys last), causal in the last level only; against the float64
    per-level reference merged by SPEC.md's rule."""
    env.require(op="paged_prefill", dtype=dtype, head_dim=D, num_qo_heads=4, num_kv_heads=2,
                causal=causal, return_lse=True, page_size=4, has_empty_rows=causal)
    rng = np.random.default_rng(45)
    q, (k_pages, v_pages), arrays, keys, rows = _cascade_case(rng)
    arrays = arrays[3 - num_levels:]
    nbytes = flashband.batch_workspace_bytes(3, q.shape[0], 4, D, env.device)
    w = flashband.MultiLevelCascadeAttentionWrapper(num_levels, env.workspace(nbytes),
                                                    backend=env.backend)
    lists = [[env.index(a[i]) for a in arrays] for i in range(4)]
    w.plan(*lists, 4, 2, D, 4, causal=causal, q_data_type=dtype)
    cache = (env.array(k_pages, dtype), env.array(v_pages, dtype))
    out, lse = w.run(env.array(q, dtype), cache, return_lse=True)
    env.sync()
    ref, ref_lse = _cascade_reference(env.to64(env.array(q, dtype)), keys, rows, num_levels, causal)
    assert_out(env.to64(out), ref, dtype)
    assert_lse(env.to64(lse), ref_lse, dtype)
    assert not isinstance(w.forward(env.array(q, dtype), cache), tuple)


def test_multi_level_cascade_refusals():
    """A window over several levels, per-level lists of the wrong length, levels covering
    different rows: refused by name. A failed plan() leaves the wrapper unplanned."""
    rng = np.random.default_rng(46)
    q, cache, arrays, _, _ = _cascade_case(rng)
    ws = np.empty(0, np.uint8)
    lists = [[a[i] for a in arrays] for i in range(4)]
    w = flashband.MultiLevelCascadeAttentionWrapper(3, ws, backend="cpu")
    with pytest.raises(flashband.UnsupportedError, match="window_left"):
        w.plan(*lists, 4, 2, D, 4, window_left=8, q_data_type="float32")
    with pytest.raises(flashband.InvalidArgumentError, match="paged_kv_indices_arr: expected a list of 3"):
        w.plan(lists[0], lists[1], lists[2][:2], lists[3], 4, 2, D, 4, q_data_type="float32")
    short = [np.array([0, 2], np.int32)] + lists[0][1:]
    with pytest.raises(flashband.InvalidArgumentError, match="qo_indptr_arr: the levels cover 2, 6, 6"):
        w.plan(short, *lists[1:], 4, 2, D, 4, q_data_type="float32")
    with pytest.raises(flashband.InvalidArgumentError, match="qo_indptr_buf_arr"):
        flashband.MultiLevelCascadeAttentionWrapper(2, ws, "NHD", True, [None])
    w.plan(*lists, 4, 2, D, 4, q_data_type="float32")
    w.run(q, cache)
    bad_last = lists[3][:2] + [np.array([9, 9, 9], np.int32)]  # past the page size
    with pytest.raises(flashband.InvalidArgumentError):
        w.plan(*lists[:3], bad_last, 4, 2, D, 4, q_data_type="float32")
    with pytest.raises(flashband.InvalidArgumentError, match="last plan.. failed"):
        w.run(q, cache)
    # Refusals before any level plans keep the previous plan whole.
    w.plan(*lists, 4, 2, D, 4, q_data_type="float32")
    before = w.run(q, cache)
    with pytest.raises(flashband.InvalidArgumentError, match="^level 1: qo_indptr_arr.1. gives 2 groups"):
        w.plan(lists[0], lists[1], lists[2], [lists[3][0], lists[3][1][:1], lists[3][2]], 4, 2, D, 4,
               q_data_type="float32")
    assert np.array_equal(w.run(q, cache), before)
    # Causal over the whole sequence, prefixes first: the last level's causal mask with every
    # prefix key visible, so a request with more rows than its own keys + 1 is refused.
    long_rows = [lists[0][0], lists[0][1], np.array([0, 1, 2, 6], np.int32)]
    long_rows[1] = np.array([0, 2, 6], np.int32)
    long_rows[0] = np.array([0, 6], np.int32)
    with pytest.raises(flashband.UnsupportedError, match="^causal: request 2 of the last level has 4 query rows over 2"):
        w.plan(long_rows, *lists[1:], 4, 2, D, 4, causal=True, q_data_type="float32")
    w.plan(long_rows, *lists[1:], 4, 2, D, 4, q_data_type="float32")  # not causal: any rows
    one = flashband.MultiLevelCascadeAttentionWrapper(1, ws, backend="cpu")
    one.plan(*[[x[-1]] for x in lists], 4, 2, D, 4, window_left=3, q_data_type="float32")
