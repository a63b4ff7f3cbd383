"""Issue 63, by example: malformed calls that once crashed, wrote outputs, computed something
else or raised a non-flashband error. Each is now a flashband error naming the caller's
argument and value, with the caller's outputs untouched (filled with a sentinel first)."""

import re

import numpy as np
import pytest

import flashband
from _cases import Paged, Ragged, rand
from test_merge import D as CASCADE_D, _cascade_case

D = 16
SENTINEL = 12345.0


def _filled(shape, dtype=np.float32):
    return np.full(shape, SENTINEL, dtype=dtype)


def _untouched(*arrays):
    return all(np.all(a == SENTINEL) for a in arrays)


def test_cascade_failing_prefix_level_leaves_outputs_untouched():
    """Defect 1: the last level was written into out/lse before a prefix level raised (a page
    index past the cache given to run())."""
    rng = np.random.default_rng(63)
    q, (k_pages, v_pages), arrays, _, _ = _cascade_case(rng)
    lists = [[a[i] for a in arrays] for i in range(4)]
    pages = k_pages.shape[0]
    lists[2][0] = lists[2][0].copy()
    lists[2][0][-1] = pages + 2  # level 0 (a prefix) reads past the cache
    w = flashband.MultiLevelCascadeAttentionWrapper(3, np.empty(0, np.uint8), backend="cpu")
    w.plan(*lists, 4, 2, CASCADE_D, 4, q_data_type="float32", num_pages=pages + 5)
    out, lse = _filled(q.shape), _filled(q.shape[:2])
    with pytest.raises(flashband.InvalidArgumentError, match="pages"):
        w.run(q, (k_pages, v_pages), out=out, lse=lse, return_lse=True)
    assert _untouched(out, lse)


def test_cascade_read_only_out_is_refused_before_any_write():
    rng = np.random.default_rng(64)
    q, cache, arrays, _, _ = _cascade_case(rng)
    w = flashband.MultiLevelCascadeAttentionWrapper(3, np.empty(0, np.uint8), backend="cpu")
    w.plan(*[[a[i] for a in arrays] for i in range(4)], 4, 2, CASCADE_D, 4, q_data_type="float32")
    out, lse = _filled(q.shape), _filled(q.shape[:2])
    lse.flags.writeable = False
    with pytest.raises(flashband.InvalidArgumentError, match="^lse: a read-only array"):
        w.run(q, cache, out=out, lse=lse, return_lse=True)
    assert _untouched(out, lse)


def test_merge_state_in_place_refuses_overlapping_outputs():
    """Defect 2: s a view into v's memory returned normally with wrong values in v."""
    rng = np.random.default_rng(65)
    n, h, d = 4, 2, 8
    v = _filled((n, h, d))
    s = v.reshape(-1)[: n * h].reshape(n, h)  # float32 like an LSE, inside v's memory
    v_other, s_other = rand(rng, n, h, d), rand(rng, n, h)
    with pytest.raises(flashband.InvalidArgumentError, match="^s: overlaps v in memory"):
        flashband.merge_state_in_place(v, s, v_other, s_other)
    assert _untouched(v)


def test_merge_state_in_place_names_the_callers_arguments():
    rng = np.random.default_rng(66)
    v, s = rand(rng, 4, 2, 8), rand(rng, 4, 2)
    with pytest.raises(flashband.InvalidArgumentError, match="^v_other: dimension 1"):
        flashband.merge_state_in_place(v, s, rand(rng, 4, 3, 8), rand(rng, 4, 3))
    with pytest.raises(flashband.InvalidArgumentError, match="^v_other: expected an array"):
        flashband.merge_state_in_place(v, s, [[0.0]], s)


@pytest.mark.parametrize("value", [1e-300, 1e-50, 1e300])
@pytest.mark.parametrize("name", ["logits_soft_cap", "sm_scale"])
def test_float_parameters_that_float32_cannot_hold_are_refused(name, value):
    """Defect 3: a positive soft cap that rounds to 0 in float32 turned the cap off."""
    rng = np.random.default_rng(67)
    q, k, v = rand(rng, 3, 2, D), rand(rng, 5, 2, D), rand(rng, 5, 2, D)
    out = _filled(q.shape)
    with pytest.raises(flashband.InvalidArgumentError, match=f"^{name}: got {re.escape(repr(value))}, which is"):
        flashband.single_prefill_with_kv_cache(q, k, v, backend="cpu", out=out, **{name: value})
    assert _untouched(out)
    with pytest.raises(flashband.InvalidArgumentError, match=f"^{name}: got"):
        flashband._C.Options(**{name: value})  # the binding judges it too
    w = flashband.BatchPrefillWithRaggedKVCacheWrapper(np.empty(0, np.uint8), backend="cpu")
    with pytest.raises(flashband.InvalidArgumentError, match=f"^{name}: got"):
        w.plan(np.array([0, 3], np.int32), np.array([0, 5], np.int32), 2, 2, D,
               q_data_type="float32", **{name: value})


@pytest.mark.parametrize("fn", [flashband.batch_workspace_bytes, flashband.batch_plan_bytes])
@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_size_helpers_refuse_negative_and_overflowing_counts(fn, device):
    """Defect 4: -5 requests gave 16 MB, num_qo_heads=-4 about 1.8e19, and 2^40 tokens x 2^24
    heads wrapped below the size of 2^20 tokens."""
    with pytest.raises(flashband.InvalidArgumentError, match="^max_batch: got -5"):
        fn(-5, 1024, 32, 128, device)
    with pytest.raises(flashband.InvalidArgumentError, match="^num_qo_heads: got -4"):
        fn(8, 1024, -4, 128, device)
    with pytest.raises(flashband.InvalidArgumentError, match="max_qo_tokens x num_qo_heads"):
        fn(1, 2**40, 2**24, 128, device)
    with pytest.raises(flashband.InvalidArgumentError, match="^num_qo_heads: got 8589934592"):
        fn(1, 1024, 2**33, 128, device)
    with pytest.raises(flashband.InvalidArgumentError, match="^max_batch: expected an integer"):
        fn(1.5, 1024, 32, 128, device)


def _ragged_wrapper(batch):
    w = flashband.BatchPrefillWithRaggedKVCacheWrapper(np.empty(0, np.uint8), backend="cpu")
    w.plan(batch.qo_indptr, batch.kv_indptr, batch.hq, batch.hk, D, q_data_type="float32")
    return w


def test_malformed_arrays_are_named():
    """A 1-D q, a list or None where an array goes, a non-array k, a float64 q, a read-only
    out: each a flashband error naming the caller's argument."""
    rng = np.random.default_rng(68)
    q, k, v = rand(rng, 3, 2, D), rand(rng, 5, 2, D), rand(rng, 5, 2, D)
    single = flashband.single_prefill_with_kv_cache
    cases = [(dict(q=q[0, 0]), "^q: got 1 dimensions"),
             (dict(q=q.tolist()), "^q: expected an array"),
             (dict(k=None), "^k: expected an array"),
             (dict(k="k"), "^k: expected an array"),
             (dict(q=q.astype(np.float64)), "^q: dtype float64"),
             (dict(v=v.astype(np.int32)), "^v: dtype int32")]
    for change, message in cases:
        args = {**dict(q=q, k=k, v=v), **change}
        with pytest.raises(flashband.InvalidArgumentError, match=message):
            single(args["q"], args["k"], args["v"], backend="cpu")
    out = _filled(q.shape)
    out.flags.writeable = False
    with pytest.raises(flashband.InvalidArgumentError, match="^out: a read-only array"):
        single(q, k, v, backend="cpu", out=out)
    with pytest.raises(flashband.InvalidArgumentError, match="^q: expected an array"):
        flashband.single_decode_with_kv_cache(None, k, v, backend="cpu")
    batch = Ragged(rng, [2, 3], [4, 5], 2, 2, D)
    w = _ragged_wrapper(batch)
    out = _filled(batch.q.shape)
    with pytest.raises(flashband.InvalidArgumentError, match="^k: expected an array"):
        w.run(batch.q, list(batch.k), batch.v, out=out)
    assert _untouched(out)
    ws = np.empty(16, np.uint8)
    ws.flags.writeable = False
    with pytest.raises(flashband.InvalidArgumentError, match="^float_workspace_buffer: a read-only array"):
        flashband.BatchPrefillWithRaggedKVCacheWrapper(ws, backend="cpu")
    with pytest.raises(flashband.InvalidArgumentError, match="^qo_indptr: expected a 1-D int32 array, got None"):
        w.plan(None, batch.kv_indptr, 2, 2, D, q_data_type="float32")


def test_integers_past_c_int():
    """window_left=2**40 is a valid 'no window' (SPEC.md: w >= kv_len - 1 changes nothing) and
    runs as one; num_qo_heads=2**33, num_pages and page_size of 2**31 and q_len_per_req of
    2**30 or 2**32 are refused by name."""
    rng = np.random.default_rng(69)
    q, k, v = rand(rng, 3, 2, D), rand(rng, 5, 2, D), rand(rng, 5, 2, D)
    wide = flashband.single_prefill_with_kv_cache(q, k, v, backend="cpu", window_left=2**40)
    plain = flashband.single_prefill_with_kv_cache(q, k, v, backend="cpu")
    assert np.array_equal(wide, plain)
    with pytest.raises(flashband.InvalidArgumentError, match="^window_left: got -1099511627776"):
        flashband.single_prefill_with_kv_cache(q, k, v, backend="cpu", window_left=-2**40)
    batch = Ragged(rng, [2, 3], [4, 5], 2, 2, D)
    paged = Paged(rng, batch, 4)
    w = flashband.BatchPrefillWithRaggedKVCacheWrapper(np.empty(0, np.uint8), backend="cpu")
    with pytest.raises(flashband.InvalidArgumentError, match="^num_qo_heads: got 8589934592"):
        w.plan(batch.qo_indptr, batch.kv_indptr, 2**33, 2, D, q_data_type="float32")
    w.plan(batch.qo_indptr, batch.kv_indptr, 2, 2, D, q_data_type="float32", window_left=2**40)
    assert np.array_equal(w.run(batch.q, batch.k, batch.v, window_left=2**40),
                          _ragged_wrapper(batch).run(batch.q, batch.k, batch.v))
    p = flashband.BatchPrefillWithPagedKVCacheWrapper(np.empty(0, np.uint8), backend="cpu")
    plan = (batch.qo_indptr, paged.indptr, paged.indices, paged.last_page_len, 2, 2, D)
    with pytest.raises(flashband.InvalidArgumentError, match="^page_size: got 2147483648"):
        p.plan(*plan, 2**31, q_data_type="float32")
    with pytest.raises(flashband.InvalidArgumentError, match="^num_pages: got 2147483648"):
        p.plan(*plan, 4, q_data_type="float32", num_pages=2**31)
    d = flashband.BatchDecodeWithPagedKVCacheWrapper(np.empty(0, np.uint8), backend="cpu")
    dplan = (paged.indptr, paged.indices, paged.last_page_len, 2, 2, D, 4)
    with pytest.raises(flashband.InvalidArgumentError, match="^q_len_per_req: got 4294967296"):
        d.plan(*dplan, q_data_type="float32", q_len_per_req=2**32)
    with pytest.raises(flashband.InvalidArgumentError, match="^q_len_per_req: got 1073741824; with 2 requests"):
        d.plan(*dplan, q_data_type="float32", q_len_per_req=2**30)
    # A page index of 2^31 - 1 without num_pages: the cache it implies has 2^31 pages.
    last_page = paged.indices.copy()
    last_page[-1] = 2**31 - 1
    with pytest.raises(flashband.InvalidArgumentError, match="^indices: entry 2147483647, allowed: < 2147483647"):
        d.plan(paged.indptr, last_page, paged.last_page_len, 2, 2, D, 4, q_data_type="float32")
    with pytest.raises(flashband.InvalidArgumentError, match="^paged_kv_indices: entry 2147483647"):
        p.plan(batch.qo_indptr, paged.indptr, last_page, paged.last_page_len, 2, 2, D, 4, q_data_type="float32")


def test_decode_errors_name_decode_arguments():
    """The decode wrapper's plan names its own arguments (indices), not the paged prefill's
    (paged_kv_indices), for q_len_per_req 1 as well as > 1."""
    rng = np.random.default_rng(70)
    batch = Ragged(rng, [1, 1], [4, 5], 2, 2, D)
    paged = Paged(rng, batch, 4)
    d = flashband.BatchDecodeWithPagedKVCacheWrapper(np.empty(0, np.uint8), backend="cpu")
    bad = paged.indices.copy()
    bad[0] = paged.num_pages + 3
    for q_len in (1, 2):
        with pytest.raises(flashband.InvalidArgumentError, match="^indices: entry 0"):
            d.plan(paged.indptr, bad, paged.last_page_len, 2, 2, D, 4, q_data_type="float32",
                   num_pages=paged.num_pages, q_len_per_req=q_len)
