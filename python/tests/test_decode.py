"""Batch decode over a paged KV cache against the oracle, and against paged prefill with
qo_len = 1 (SPEC.md: decode is prefill with one query and gives the same result)."""

import numpy as np
import pytest

import flashband
from _cases import Paged, Ragged
from _checks import assert_empty_rows_exact, assert_lse, assert_out

KV_LENS = [1, 17, 0, 40, 5, 129]  # includes a request with no keys: row -> 0 and -inf


def make(seed, hq=8, hk=2, d=128, q_scale=1.0):
    rng = np.random.default_rng(seed)
    return rng, Ragged(rng, [1] * len(KV_LENS), KV_LENS, hq, hk, d, q_scale=q_scale)


def plan_decode(env, batch, paged, dtype, layout, **kw):
    nbytes = flashband.batch_workspace_bytes(batch.batch, batch.batch, batch.hq, batch.d,
                                             env.device)
    wrapper = flashband.BatchDecodeWithPagedKVCacheWrapper(env.workspace(nbytes), layout,
                                                           backend=env.backend)
    wrapper.plan(env.index(paged.indptr), env.index(paged.indices),
                 env.index(paged.last_page_len), batch.hq, batch.hk, batch.d, paged.page_size,
                 q_data_type=dtype, **kw)
    return wrapper


def cache(env, paged, dtype, layout, stacked):
    k = Paged.layout(paged.k_pages, layout)
    v = Paged.layout(paged.v_pages, layout)
    if stacked:
        return env.array(np.stack([k, v], axis=1), dtype)
    return env.array(k, dtype), env.array(v, dtype)


@pytest.mark.parametrize("stacked", [False, True], ids=["kv_tuple", "stacked"])
@pytest.mark.parametrize("layout", ["NHD", "HND"])
@pytest.mark.parametrize("page_size", [1, 3, 16])
@pytest.mark.parametrize("window", [-1, 7])
@pytest.mark.parametrize("cap", [None, 2.0], ids=["nocap", "cap2"])
def test_decode(env, dtype, cap, window, page_size, layout, stacked):
    rng, batch = make(31, q_scale=2.0 if cap else 1.0)
    env.require(op="paged_decode", dtype=dtype, head_dim=batch.d, num_qo_heads=batch.hq,
                num_kv_heads=batch.hk, window_left=window, logits_soft_cap=cap,
                return_lse=True, kv_layout=layout, page_size=page_size, has_empty_rows=True)
    paged = Paged(rng, batch, page_size)
    wrapper = plan_decode(env, batch, paged, dtype, layout, window_left=window,
                          logits_soft_cap=cap, return_lse=True)
    q = env.array(batch.q, dtype)
    out, lse = wrapper.run(q, cache(env, paged, dtype, layout, stacked), return_lse=True)
    env.sync()
    ref_o, ref_lse = batch.reference(env.reference, env.to64(q),
                                     env.to64(env.array(batch.k, dtype)),
                                     env.to64(env.array(batch.v, dtype)), window_left=window,
                                     logits_soft_cap=cap)
    assert_out(env.to64(out), ref_o, dtype)
    assert_lse(env.to64(lse), ref_lse, dtype)
    assert_empty_rows_exact(env.to64(out), ref_lse)
    info = wrapper.last_run_info
    if env.backend != "auto":
        assert info.backend == env.backend
        assert info.selection == "requested"
    else:  # why auto chose it reads back
        rule = "host" if info.backend == "cpu" else "decode"  # auto's rules (README, "auto")
        assert info.selection.startswith(f"auto (rule {rule}: preference "), info.selection
        assert f"chose {info.backend}" in info.selection, info.selection


def test_decode_equals_prefill_with_one_query(env, dtype):
    rng, batch = make(32)
    env.require(op="paged_decode", dtype=dtype, head_dim=batch.d, num_qo_heads=batch.hq,
                num_kv_heads=batch.hk, page_size=16, has_empty_rows=True)
    env.require(op="paged_prefill", dtype=dtype, head_dim=batch.d, num_qo_heads=batch.hq,
                num_kv_heads=batch.hk, page_size=16, has_empty_rows=True)
    paged = Paged(rng, batch, 16)
    kv = cache(env, paged, dtype, "NHD", False)
    q = env.array(batch.q, dtype)
    out_d = plan_decode(env, batch, paged, dtype, "NHD").run(q, kv)
    prefill = flashband.BatchPrefillWithPagedKVCacheWrapper(env.workspace(
        flashband.batch_workspace_bytes(batch.batch, batch.batch, batch.hq, batch.d, env.device)),
        backend=env.backend)
    prefill.plan(env.index(batch.qo_indptr), env.index(paged.indptr), env.index(paged.indices),
                 env.index(paged.last_page_len), batch.hq, batch.hk, batch.d, 16,
                 q_data_type=dtype)
    out_p = prefill.run(q, kv)
    env.sync()
    assert_out(env.to64(out_d), env.to64(out_p), dtype, what="decode vs prefill")


@pytest.mark.parametrize("window", [-1, 5])
def test_decode_with_several_queries_per_request(env, dtype, window):
    """q_len_per_req = 4 (speculative decoding): each request's last four tokens query its
    pages causally, bottom-right aligned, against the oracle. Requests of at least four
    keys, as FlashInfer requires (fewer would leave rows that see nothing, which SPEC.md
    also defines, but not every backend serves)."""
    rng = np.random.default_rng(33)
    kv_lens = [4, 17, 40, 5, 129]
    batch = Ragged(rng, [4] * len(kv_lens), kv_lens, 8, 2, 128)
    env.require(op="paged_prefill", dtype=dtype, head_dim=batch.d, num_qo_heads=batch.hq,
                num_kv_heads=batch.hk, causal=True, window_left=window, return_lse=True,
                page_size=16)
    paged = Paged(rng, batch, 16)
    nbytes = flashband.batch_workspace_bytes(batch.batch, 4 * batch.batch, batch.hq, batch.d,
                                             env.device)
    wrapper = flashband.BatchDecodeWithPagedKVCacheWrapper(env.workspace(nbytes), backend=env.backend)
    wrapper.plan(env.index(paged.indptr), env.index(paged.indices), env.index(paged.last_page_len),
                 batch.hq, batch.hk, batch.d, 16, q_data_type=dtype, window_left=window,
                 q_len_per_req=4)
    q = env.array(batch.q, dtype)
    out, lse = wrapper.run(q, cache(env, paged, dtype, "NHD", False), return_lse=True)
    env.sync()
    ref_o, ref_lse = batch.reference(env.reference, env.to64(q), env.to64(env.array(batch.k, dtype)),
                                     env.to64(env.array(batch.v, dtype)), causal=True,
                                     window_left=window)
    assert_out(env.to64(out), ref_o, dtype)
    assert_lse(env.to64(lse), ref_lse, dtype)


def test_disable_split_kv(env, dtype):
    """disable_split_kv: one request over a long cache, which the GPU backends split unless
    told not to; with it, one pass (num_kv_splits 1) and the same result. cudnn refuses it
    by name (cuDNN picks its own engines)."""
    rng = np.random.default_rng(34)
    batch = Ragged(rng, [1], [6000], 8, 1, 128)
    env.require(op="paged_decode", dtype=dtype, head_dim=batch.d, num_qo_heads=batch.hq,
                num_kv_heads=batch.hk, page_size=16)
    paged = Paged(rng, batch, 16)
    kv = cache(env, paged, dtype, "NHD", False)
    q = env.array(batch.q, dtype)
    ref, _ = batch.reference(env.reference, env.to64(q), env.to64(env.array(batch.k, dtype)),
                             env.to64(env.array(batch.v, dtype)))
    if env.backend == "cudnn":
        with pytest.raises(flashband.UnsupportedError, match="disable_split_kv"):
            plan_decode(env, batch, paged, dtype, "NHD", disable_split_kv=True)
        return
    wrapper = plan_decode(env, batch, paged, dtype, "NHD", disable_split_kv=True)
    out = wrapper.run(q, kv)
    env.sync()
    assert_out(env.to64(out), ref, dtype)
    assert wrapper.last_run_info.num_kv_splits == 1
    if env.device == "cuda" and wrapper.last_run_info.backend == "sm80":
        split = plan_decode(env, batch, paged, dtype, "NHD")
        split.run(q, kv)
        assert split.last_run_info.num_kv_splits > 1  # the test would see a split otherwise


def test_fast_decode_plan_needs_device_page_indices():
    """fast_decode_plan never reads page indices on the host: under use_cuda_graph it needs a
    page-index buffer that the runs read (sm80's kernels; not on the cpu backend), and
    without it a CUDA array of indices. Host-only wrappers refuse it by name; check() of a
    wrapper whose runs read no device indices does nothing."""
    rng, batch = make(36)
    paged = Paged(rng, batch, 16)
    ws = np.empty(1 << 20, np.uint8)
    n = batch.batch
    bufs = [np.zeros(n + 1, np.int32), np.zeros(len(paged.indices) + 8, np.int32), np.zeros(n, np.int32)]
    graph = flashband.BatchDecodeWithPagedKVCacheWrapper(ws, "NHD", True, False, *bufs, backend="cpu")
    with pytest.raises(flashband.UnsupportedError, match="fast_decode_plan: under use_cuda_graph"):
        flashband.fast_decode_plan(graph, paged.indptr, paged.indices, paged.last_page_len,
                                   batch.hq, batch.hk, batch.d, 16, q_data_type="float32")
    eager = flashband.BatchDecodeWithPagedKVCacheWrapper(ws, backend="cpu")
    with pytest.raises(flashband.InvalidArgumentError, match="indices: fast_decode_plan without use_cuda_graph"):
        flashband.fast_decode_plan(eager, paged.indptr, paged.indices, paged.last_page_len,
                                   batch.hq, batch.hk, batch.d, 16, q_data_type="float32")
    eager.plan(paged.indptr, paged.indices, paged.last_page_len, batch.hq, batch.hk, batch.d, 16,
               q_data_type="float32")
    eager.check()
