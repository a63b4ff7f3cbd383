"""FlashInfer 0.7.2's arguments (issue 61 item 5): those flashband honours (run()'s
lse_base / lse_layout, decode plan()'s is_causal and its deprecated positional form,
workspace_size, resolved_backend, prewarm_paged_kv_stride_variant) computed as asked, and
those it does not do taken only at their neutral value, refused by name otherwise. CPU
backend, NumPy arrays."""

import math

import numpy as np
import pytest

import flashband
from _cases import Paged, Ragged
from _checks import assert_out
from _reference import attention_np

D, HQ, HK, PAGE = 64, 4, 2, 16
WS = np.empty(0, np.uint8)


def _batch(seed=3):
    rng = np.random.default_rng(seed)
    batch = Ragged(rng, [3, 1, 4], [20, 33, 9], HQ, HK, D)
    return batch, Paged(rng, batch, PAGE)


def _ragged(batch):
    w = flashband.BatchPrefillWithRaggedKVCacheWrapper(WS, backend="cpu")
    w.plan(batch.qo_indptr, batch.kv_indptr, HQ, HK, D, q_data_type="float32", causal=True)
    return w, (batch.q, batch.k, batch.v)


def _paged(batch, paged):
    w = flashband.BatchPrefillWithPagedKVCacheWrapper(WS, backend="cpu")
    w.plan(batch.qo_indptr, paged.indptr, paged.indices, paged.last_page_len, HQ, HK, D, PAGE,
           q_data_type="float32", causal=True)
    return w, (batch.q, (paged.k_pages, paged.v_pages))


WRAPPERS = {"ragged": _ragged, "paged": _paged}


def _wrapper(kind, batch, paged):
    return WRAPPERS[kind](batch) if kind == "ragged" else WRAPPERS[kind](batch, paged)


@pytest.mark.parametrize("kind", sorted(WRAPPERS))
@pytest.mark.parametrize("base", ["log2", "ln"])
@pytest.mark.parametrize("layout", ["NH", "HN"])
def test_run_delivers_the_lse_base_and_layout_asked(kind, base, layout):
    batch, paged = _batch()
    ref, ref_lse = batch.reference(attention_np, batch.q, batch.k, batch.v, causal=True)
    want = ref_lse * (math.log(2.0) if base == "ln" else 1.0)
    want = want.T if layout == "HN" else want
    w, args = _wrapper(kind, batch, paged)
    out, lse = w.run(*args, return_lse=True, lse_base=base, lse_layout=layout)
    assert_out(out.astype(np.float64), ref, "float32")
    assert lse.shape == want.shape and lse.dtype == np.float32 and lse.flags.c_contiguous
    assert np.abs(lse - want).max() < 1e-4
    # Into the caller's buffer, in the layout asked: the same array comes back.
    given = np.full(want.shape, np.nan, np.float32)
    res_out, res_lse = w.run(*args, return_lse=True, lse=given, lse_base=base, lse_layout=layout)
    assert res_lse is given and np.abs(given - want).max() < 1e-4
    # A given lse is written in that form without return_lse too (flashband writes any lse given).
    given[...] = np.nan
    w.run(*args, lse=given, lse_base=base, lse_layout=layout)
    assert np.abs(given - want).max() < 1e-4


@pytest.mark.parametrize("kind", sorted(WRAPPERS))
def test_bad_lse_forms_are_refused_before_anything_is_written(kind):
    batch, paged = _batch()
    w, args = _wrapper(kind, batch, paged)
    out = np.full(batch.q.shape, np.nan, np.float32)
    for kw, name in ((dict(lse_base="e"), "lse_base"), (dict(lse_layout="TN"), "lse_layout"),
                     (dict(lse_base=2), "lse_base")):
        with pytest.raises(flashband.InvalidArgumentError, match=f"^{name}: got"):
            w.run(*args, out=out, return_lse=True, **kw)
    tokens = batch.q.shape[0]
    for lse, what in ((np.zeros((tokens, HQ), np.float32), "shape"),  # NH shape under HN
                      (np.zeros((HQ, tokens), np.float64), "dtype"),
                      (np.zeros((1, tokens), np.float32), "shape")):
        lse[...] = 7.0
        with pytest.raises(flashband.InvalidArgumentError, match="^lse"):
            w.run(*args, out=out, lse=lse, return_lse=True, lse_layout="HN")
        assert np.isnan(out).all() and (lse == 7.0).all(), what


def test_neutral_values_of_flashinfer_07_arguments_are_taken_and_others_refused():
    batch, paged = _batch()
    ref, _ = batch.reference(attention_np, batch.q, batch.k, batch.v, causal=True)
    w, args = _ragged(batch)
    assert_out(w.run(*args, kv_cache_sf=None).astype(np.float64), ref, "float32")
    with pytest.raises(flashband.UnsupportedError, match="^kv_cache_sf"):
        w.run(*args, kv_cache_sf=(batch.k, batch.v))
    for name, value in (("seq_lens", np.array([20, 33, 9], np.int32)), ("seq_lens_q", batch.qo_indptr[1:]),
                        ("max_token_per_sequence", 4), ("max_sequence_kv", 33),
                        ("v_indptr", batch.kv_indptr), ("o_indptr", batch.qo_indptr)):
        with pytest.raises(flashband.UnsupportedError, match=f"^{name}"):
            w.plan(batch.qo_indptr, batch.kv_indptr, HQ, HK, D, q_data_type="float32", **{name: value})
    w.plan(batch.qo_indptr, batch.kv_indptr, HQ, HK, D, q_data_type="float32", causal=True,
           seq_lens=None, seq_lens_q=None, max_token_per_sequence=None, max_sequence_kv=None,
           v_indptr=None, o_indptr=None)
    p, pargs = _paged(batch, paged)
    out = p.run(*pargs, use_fp16_softmax=False, uses_spcompress=None)
    assert_out(out.astype(np.float64), ref, "float32")
    for name in ("use_fp16_softmax", "uses_spcompress"):
        with pytest.raises(flashband.UnsupportedError, match=f"^{name}: True"):
            p.run(*pargs, **{name: True})
    for cls in (flashband.BatchPrefillWithRaggedKVCacheWrapper, flashband.BatchPrefillWithPagedKVCacheWrapper):
        cls(WS, backend="cpu", variant_owns_mask=False)
        with pytest.raises(flashband.UnsupportedError, match="^variant_owns_mask"):
            cls(WS, backend="cpu", variant_owns_mask=True)
    q, k, v = batch.q[:3], batch.k[:20], batch.v[:20]
    one_ref, _ = attention_np(q, k, v)
    out = flashband.single_prefill_with_kv_cache(q, k, v, backend="cpu", k_scale=1.0, v_scale=None,
                                                 kv_cache_sf=None)
    assert_out(out.astype(np.float64), one_ref, "float32")
    for kw in (dict(k_scale=0.5), dict(v_scale=2.0), dict(kv_cache_sf=(k, v))):
        with pytest.raises(flashband.UnsupportedError, match=f"^{next(iter(kw))}"):
            flashband.single_prefill_with_kv_cache(q, k, v, backend="cpu", **kw)


def _decode(q_len=1, **kw):
    rng = np.random.default_rng(11)
    batch = Ragged(rng, [q_len] * 3, [20, 33, 9], HQ, HK, D)
    paged = Paged(rng, batch, PAGE)
    w = flashband.BatchDecodeWithPagedKVCacheWrapper(WS, backend="cpu")
    return w, batch, paged


def test_decode_is_causal_follows_q_len_per_req():
    for q_len in (1, 2):
        w, batch, paged = _decode(q_len)
        ref, _ = batch.reference(attention_np, batch.q, batch.k, batch.v, causal=q_len > 1)
        plan = lambda **kw: w.plan(paged.indptr, paged.indices, paged.last_page_len, HQ, HK, D, PAGE,
                                   q_data_type="float32", q_len_per_req=q_len, **kw)
        for value in (None, q_len > 1):
            plan(is_causal=value)
            assert_out(w.run(batch.q, (paged.k_pages, paged.v_pages)).astype(np.float64), ref, "float32")
        with pytest.raises(flashband.UnsupportedError, match=f"^is_causal: got {q_len == 1}"):
            plan(is_causal=q_len == 1)
        with pytest.raises(flashband.InvalidArgumentError, match="^is_causal"):
            plan(is_causal="yes")


def test_decode_plan_takes_flashinfer_07_positional_arguments_with_a_warning():
    w, batch, paged = _decode()
    cache = (paged.k_pages, paged.v_pages)
    ref, _ = batch.reference(attention_np, batch.q, batch.k, batch.v, window_left=5,
                             logits_soft_cap=3.0, sm_scale=0.2)
    head = (paged.indptr, paged.indices, paged.last_page_len, HQ, HK, D, PAGE)
    # 0.7's order: pos_encoding_mode, window_left, logits_soft_cap, q_data_type, kv_data_type,
    # o_data_type, data_type, sm_scale, ...
    with pytest.warns(DeprecationWarning, match="by position"):
        w.plan(*head, "NONE", 5, 3.0, "float32", None, "float32", None, 0.2)
    assert_out(w.run(batch.q, cache).astype(np.float64), ref, "float32")
    assert (w._window_left, w._logits_soft_cap, w._sm_scale) == (5, 3.0, 0.2)
    with pytest.raises(flashband.UnsupportedError, match="^o_data_type"):
        with pytest.warns(DeprecationWarning):
            w.plan(*head, "NONE", -1, None, "float32", None, "float16")
    with pytest.raises(flashband.InvalidArgumentError, match="^window_left: given both"):
        w.plan(*head, "NONE", 5, window_left=5)
    with pytest.raises(flashband.InvalidArgumentError, match="^plan: at most 16"):
        w.plan(*head, *([None] * 17))
    with pytest.raises(TypeError):
        w.plan(*head, no_such_argument=1)


def test_workspace_size_on_the_host_and_its_checks():
    w, batch, paged = _decode()
    args = (paged.indptr, paged.indices, paged.last_page_len, HQ, HK, D, PAGE)
    assert w.workspace_size(*args, q_data_type="float32") == (0, 0)  # the cpu backend keeps arrays on the host
    for kw in (dict(pos_encoding_mode="ROPE_LLAMA"), dict(fixed_split_size=8), dict(window_left=-3),
               dict(kv_data_type="float32"), dict(q_len_per_req=0)):
        with pytest.raises(flashband.FlashbandError, match=f"^{next(iter(kw))}"):
            w.workspace_size(*args, **kw)
    # As in FlashInfer, a use_cuda_graph wrapper's buffers fix the batch and bound the indices.
    graph = flashband.BatchDecodeWithPagedKVCacheWrapper(
        WS, use_cuda_graph=True, backend="cpu", paged_kv_indptr_buffer=np.zeros(3, np.int32),
        paged_kv_indices_buffer=np.zeros(len(paged.indices), np.int32),
        paged_kv_last_page_len_buffer=np.zeros(2, np.int32))
    with pytest.raises(flashband.InvalidArgumentError, match="^batch size: 3"):
        graph.workspace_size(*args, q_data_type="float32")
    two = (paged.indptr[:3], paged.indices, paged.last_page_len[:2], HQ, HK, D, PAGE)
    assert graph.workspace_size(*two, q_data_type="float32") == (0, 0)
    with pytest.raises(flashband.InvalidArgumentError, match="^paged_kv_indices_buffer: holds"):
        graph.workspace_size(*two[:1], np.zeros(len(paged.indices) + 1, np.int32), *two[2:],
                             q_data_type="float32")
    p = flashband.BatchPrefillWithPagedKVCacheWrapper(WS, backend="cpu")
    pargs = (batch.qo_indptr, paged.indptr, paged.indices, paged.last_page_len, HQ, HK, D, PAGE)
    assert p.workspace_size(*pargs, q_data_type="float32") == (0, 0)
    for kw in (dict(custom_mask=np.ones(4, bool)), dict(head_dim_vo=32), dict(window_left=-3),
               dict(causal="yes")):
        with pytest.raises(flashband.FlashbandError, match=f"^{next(iter(kw))}"):
            p.workspace_size(*pargs, **kw)


def test_resolved_backend_and_prewarm():
    w, batch, paged = _decode()
    auto = flashband.BatchDecodeWithPagedKVCacheWrapper(WS)
    assert auto.resolved_backend == "auto" and w.resolved_backend == "cpu"
    with pytest.raises(flashband.InvalidArgumentError, match="plan.. has not been called"):
        auto.prewarm_paged_kv_stride_variant()
    auto.plan(paged.indptr, paged.indices, paged.last_page_len, HQ, HK, D, PAGE, q_data_type="float32")
    assert auto.resolved_backend == "cpu"  # auto's choice, known from the plan, before a run
    auto.prewarm_paged_kv_stride_variant("independent")
    with pytest.raises(flashband.InvalidArgumentError, match="^variant: got 'shared'"):
        auto.prewarm_paged_kv_stride_variant("shared")
    # What the prewarm stands for: K and V of different strides, read apart at run time.
    ref, _ = batch.reference(attention_np, batch.q, batch.k, batch.v)
    wide_v = np.full(paged.v_pages.shape[:-1] + (3 * D,), np.nan, np.float32)
    wide_v[..., D:2 * D] = paged.v_pages
    v = wide_v[..., D:2 * D]
    assert v.strides != paged.k_pages.strides
    assert_out(auto.run(batch.q, (paged.k_pages, v)).astype(np.float64), ref, "float32")


def test_flashinfer_07_positional_order():
    """FlashInfer 0.7.2 takes the prefill plans', forward()s' and single functions' optional
    arguments by position, in orders that differ between entry points (the paged plan has
    sm_scale before window_left, the ragged one after logits_soft_cap): each computes what
    the same arguments by keyword compute."""
    batch, paged = _batch()
    settings = dict(window_left=5, logits_soft_cap=3.0, sm_scale=0.2, causal=True)
    ref, _ = batch.reference(attention_np, batch.q, batch.k, batch.v, **settings)
    ragged = flashband.BatchPrefillWithRaggedKVCacheWrapper(WS, backend="cpu")
    # head_dim_vo, custom_mask, packed_custom_mask, causal, pos_encoding_mode,
    # use_fp16_qk_reduction, window_left, logits_soft_cap, sm_scale, rope_scale, rope_theta,
    # q_data_type
    ragged.plan(batch.qo_indptr, batch.kv_indptr, HQ, HK, D, None, None, None, True, "NONE", False,
                5, 3.0, 0.2, None, None, "float32")
    assert_out(ragged.run(batch.q, batch.k, batch.v).astype(np.float64), ref, "float32")
    assert_out(ragged.forward(batch.q, batch.k, batch.v, True, "NONE", False, 5, 3.0, 0.2)
               .astype(np.float64), ref, "float32")
    p = flashband.BatchPrefillWithPagedKVCacheWrapper(WS, backend="cpu")
    # head_dim_vo, custom_mask, packed_custom_mask, causal, pos_encoding_mode,
    # use_fp16_qk_reduction, sm_scale, window_left, logits_soft_cap, rope_scale, rope_theta,
    # q_data_type
    p.plan(batch.qo_indptr, paged.indptr, paged.indices, paged.last_page_len, HQ, HK, D, PAGE, None,
           None, None, True, "NONE", False, 0.2, 5, 3.0, None, None, "float32")
    cache = (paged.k_pages, paged.v_pages)
    assert_out(p.run(batch.q, cache).astype(np.float64), ref, "float32")
    # causal, pos_encoding_mode, use_fp16_qk_reduction, k_scale, v_scale, window_left, ...
    assert_out(p.forward(batch.q, cache, True, "NONE", False, None, None, 5, 3.0, 0.2).astype(np.float64),
               ref, "float32")
    cascade = flashband.MultiLevelCascadeAttentionWrapper(1, WS, backend="cpu")
    cascade.plan([batch.qo_indptr], [paged.indptr], [paged.indices], [paged.last_page_len], HQ, HK, D,
                 PAGE, True, "NONE", False, 0.2, 5, 3.0, None, None, "float32")
    assert_out(cascade.run(batch.q, cache).astype(np.float64), ref, "float32")
    q, k, v = batch.q[:3], batch.k[:20], batch.v[:20]
    one, one_lse = attention_np(q, k, v, **settings)
    # scale_q, scale_k, scale_v, o_dtype, custom_mask, packed_custom_mask, causal, kv_layout,
    # pos_encoding_mode, use_fp16_qk_reduction, sm_scale, window_left, logits_soft_cap,
    # rope_scale, rope_theta, backend, return_lse
    given = (None, None, None, None, None, None, True, "NHD", "NONE", False, 0.2, 5, 3.0, None, None,
             "cpu")
    out, lse = flashband.single_prefill_with_kv_cache(q, k, v, *given, True)
    assert_out(out.astype(np.float64), one, "float32")
    assert np.abs(lse - one_lse).max() < 1e-4
    out, lse = flashband.single_prefill_with_kv_cache_return_lse(q, k, v, *given)
    assert_out(out.astype(np.float64), one, "float32")
    with pytest.raises(TypeError):
        flashband.single_prefill_with_kv_cache_return_lse(q, k, v, *given, True)  # return_lse twice
    settings.pop("causal")
    one, _ = attention_np(q[:1], k, v, **settings)
    # kv_layout, pos_encoding_mode, use_tensor_cores, q_scale, k_scale, v_scale, window_left,
    # logits_soft_cap, sm_scale
    out = flashband.single_decode_with_kv_cache(q[0], k, v, "NHD", "NONE", False, None, None, None, 5,
                                                3.0, 0.2, backend="cpu")
    assert_out(out.astype(np.float64), one[0], "float32")
