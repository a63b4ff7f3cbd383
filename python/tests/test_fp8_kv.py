"""fp8 KV caches through the Python API (issue 65): plan(kv_data_type=...), run(k_scale=,
v_scale=) and single prefill's k_scale / v_scale, judged by the float64 oracle on the
dequantized cache (every fp8 value is exact in float64); FlashInfer's rules for dtypes
(data_type, a run whose cache differs from the plan's: ValueError); bad scales; NumPy
callers without ml_dtypes; and, on a GPU, a captured decode graph replayed with a new
scale tensor value."""

import sys

import numpy as np
import pytest

import flashband
from flashband.errors import InvalidArgumentError, UnsupportedError
from _checks import assert_lse, assert_out
from _reference import attention_np

HQ, HK, D, PAGE = 4, 2, 64, 4
KV_LENS = (9, 1, 6)


def _ml_dtypes():
    return pytest.importorskip("ml_dtypes")


def _fp8(name):
    return getattr(_ml_dtypes(), name)


def _cache(rng, kv, scale, n):
    """n tokens of K or V as `kv` fp8 whose dequantized values have unit spread, the first
    token holding a large value (the format's largest where the output stays within fp16
    and the logits within float32's LSE resolution; the C++ grid plants the largest
    everywhere) and a subnormal."""
    x = rng.standard_normal((n, HK, D)) / scale
    if n:
        x[0, 0, 0] = min(float(np.finfo(_fp8(kv)).max), 200.0 / scale)
        x[0, 0, 1] = float(np.finfo(_fp8(kv)).smallest_subnormal)
    return x.astype(_fp8(kv))


def _reference(q, k8, v8, ks, vs, causal=False, sinks=None):
    """The sink (if any) sits beside the scaled logits and adds no value, so v_scale leaves
    it alone: the oracle on the dequantized cache is the whole rule."""
    o, lse = attention_np(q.astype(np.float64), k8.astype(np.float64) * ks, v8.astype(np.float64) * vs,
                          causal=causal, sinks=sinks)
    return o, lse


def _scale(value, as_array):
    return np.array([value], np.float32) if as_array else value


def _pages(lens):
    counts = [(n + PAGE - 1) // PAGE for n in lens]
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    last = np.array([(n - 1) % PAGE + 1 if n else 1 for n in lens], np.int32)
    # Pages in reverse order, so that page order and token order differ.
    indices = np.arange(int(indptr[-1]), dtype=np.int32)[::-1].copy()
    return indptr, indices, last


def _paged(kv_tokens, indptr, indices, lens, fill):
    """The requests' tokens laid into pages; unused slots hold `fill` (NaN: never read)."""
    pool = np.full((int(indptr[-1]), PAGE, HK, D), fill, dtype=kv_tokens[0].dtype)
    for b, toks in enumerate(kv_tokens):
        for t in range(lens[b]):
            pool[indices[indptr[b] + t // PAGE], t % PAGE] = toks[t]
    return pool


@pytest.mark.parametrize("kv", ["float8_e4m3fn", "float8_e5m2"])
@pytest.mark.parametrize("as_array", [False, True], ids=["float", "array"])
def test_single_prefill(kv, as_array):
    rng = np.random.default_rng(1)
    q = rng.standard_normal((7, HQ, D)).astype(np.float16)
    k, v = _cache(rng, kv, 0.37, 11), _cache(rng, kv, 3.1, 11)
    out, lse = flashband.single_prefill_with_kv_cache(q, k, v, causal=True, return_lse=True,
                                                      k_scale=_scale(0.37, as_array), v_scale=_scale(3.1, as_array))
    ref_o, ref_lse = _reference(q, k, v, 0.37, 3.1, causal=True)
    assert_out(out, ref_o, "float16")
    assert_lse(lse, ref_lse, "float16")
    assert f"+kv_{kv[7:11]}" in flashband.last_run_info().variant
    # With sinks as well (flashband's extension): both apply.
    sinks = np.array([-30.0, 0.5, 4.0, 2.5], np.float32)
    out_s = flashband.single_prefill_with_kv_cache(q, k, v, causal=True, k_scale=_scale(0.37, as_array),
                                                   v_scale=_scale(3.1, as_array), sinks=sinks)
    ref_s, _ = _reference(q, k, v, 0.37, 3.1, causal=True, sinks=sinks)
    assert_out(out_s, ref_s, "float16")
    with pytest.raises(AssertionError):
        assert_out(out_s, ref_o, "float16")
    # A scale that is not applied fails: the output with v_scale 1 is not the reference.
    plain = flashband.single_prefill_with_kv_cache(q, k, v, causal=True, k_scale=0.37)
    with pytest.raises(AssertionError):
        assert_out(plain, ref_o, "float16")


@pytest.mark.parametrize("kv", ["float8_e4m3fn", "float8_e5m2"])
@pytest.mark.parametrize("entry", ["decode", "paged", "ragged"])
@pytest.mark.parametrize("as_array", [False, True], ids=["float", "array"])
@pytest.mark.parametrize("with_sinks", [False, True], ids=["", "sinks"])
def test_batch_wrappers(kv, entry, as_array, with_sinks):
    rng = np.random.default_rng(2)
    ws = np.zeros(8 << 20, np.uint8)
    ks, vs = 0.37, 3.1
    k_tok = [_cache(rng, kv, ks, n) for n in KV_LENS]
    v_tok = [_cache(rng, kv, vs, n) for n in KV_LENS]
    qo = [1] * len(KV_LENS) if entry == "decode" else [3, 1, 6]
    q = rng.standard_normal((sum(qo), HQ, D)).astype(np.float16)
    qo_indptr = np.concatenate([[0], np.cumsum(qo)]).astype(np.int32)
    scales = dict(k_scale=_scale(ks, as_array), v_scale=_scale(vs, as_array))
    sinks = np.array([-30.0, 0.5, 4.0, 2.5], np.float32) if with_sinks else None
    if with_sinks:
        scales["sinks"] = sinks
    if entry == "ragged":
        w = flashband.BatchPrefillWithRaggedKVCacheWrapper(ws)
        kv_indptr = np.concatenate([[0], np.cumsum(KV_LENS)]).astype(np.int32)
        w.plan(qo_indptr, kv_indptr, HQ, HK, D, causal=True, q_data_type="float16", kv_data_type=kv)
        out = w.run(q, np.concatenate(k_tok), np.concatenate(v_tok), **scales)
    else:
        indptr, indices, last = _pages(KV_LENS)
        cache = (_paged(k_tok, indptr, indices, KV_LENS, np.nan), _paged(v_tok, indptr, indices, KV_LENS, np.nan))
        if entry == "decode":
            w = flashband.BatchDecodeWithPagedKVCacheWrapper(ws)
            w.plan(indptr, indices, last, HQ, HK, D, PAGE, q_data_type=np.float16, kv_data_type=_fp8(kv))
        else:
            w = flashband.BatchPrefillWithPagedKVCacheWrapper(ws)
            w.plan(qo_indptr, indptr, indices, last, HQ, HK, D, PAGE, causal=True, q_data_type="float16",
                   kv_data_type=kv)
        out = w.run(q, cache, **scales)
    for b in range(len(KV_LENS)):
        rows = slice(qo_indptr[b], qo_indptr[b + 1])
        ref, _ = _reference(q[rows], k_tok[b], v_tok[b], ks, vs, causal=entry != "decode", sinks=sinks)
        assert_out(out[rows], ref, "float16", what=f"request {b}")
        if with_sinks:  # neither the sinks nor the scales may be dropped
            for k_s, v_s, s in ((ks, vs, None), (1.0, vs, sinks), (ks, 1.0, sinks)):
                other, _ = _reference(q[rows], k_tok[b], v_tok[b], k_s, v_s, causal=entry != "decode", sinks=s)
                with pytest.raises(AssertionError):
                    assert_out(out[rows], other, "float16")
    assert f"+kv_{kv[7:11]}" in w.last_run_info.variant


def _decode_wrapper(kv="float8_e4m3fn"):
    indptr, indices, last = _pages(KV_LENS)
    w = flashband.BatchDecodeWithPagedKVCacheWrapper(np.zeros(8 << 20, np.uint8))
    w.plan(indptr, indices, last, HQ, HK, D, PAGE, q_data_type="float16", kv_data_type=kv)
    rng = np.random.default_rng(3)
    pool = rng.standard_normal((int(indptr[-1]), PAGE, HK, D)).astype(_fp8(kv))
    q = rng.standard_normal((len(KV_LENS), HQ, D)).astype(np.float16)
    return w, q, pool


def test_run_with_another_kv_dtype_is_a_value_error():
    w, q, pool = _decode_wrapper("float8_e4m3fn")
    for other in (pool.astype(_fp8("float8_e5m2")), pool.astype(np.float16)):
        with pytest.raises(ValueError, match="kv_data_type given to plan"):
            w.run(q, (other, other))
    # And a 16-bit plan given an fp8 cache.
    indptr, indices, last = _pages(KV_LENS)
    w16 = flashband.BatchDecodeWithPagedKVCacheWrapper(np.zeros(8 << 20, np.uint8))
    w16.plan(indptr, indices, last, HQ, HK, D, PAGE, q_data_type="float16")
    with pytest.raises(ValueError, match="expected float16"):
        w16.run(q, (pool, pool))


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_scale_values(bad):
    w, q, pool = _decode_wrapper()
    with pytest.raises(ValueError, match="k_scale: got"):
        w.run(q, (pool, pool), k_scale=bad)
    with pytest.raises(ValueError, match="v_scale: got"):
        w.run(q, (pool, pool), v_scale=np.array([bad], np.float32))


def test_bad_scale_tensors():
    w, q, pool = _decode_wrapper()
    with pytest.raises(ValueError, match=r"k_scale: shape \[2\]"):
        w.run(q, (pool, pool), k_scale=np.ones(2, np.float32))
    with pytest.raises(ValueError, match="v_scale: DLPack dtype code 2 bits 64"):
        w.run(q, (pool, pool), v_scale=np.ones(1, np.float64))
    with pytest.raises(ValueError, match="k_scale: expected a number"):
        w.run(q, (pool, pool), k_scale="0.5")


def test_scales_need_an_fp8_cache():
    """A 16-bit cache: 1.0 (what engines pass) is fine, any other scale is refused."""
    indptr, indices, last = _pages(KV_LENS)
    w = flashband.BatchDecodeWithPagedKVCacheWrapper(np.zeros(8 << 20, np.uint8))
    w.plan(indptr, indices, last, HQ, HK, D, PAGE, q_data_type="float16")
    pool = np.ones((int(indptr[-1]), PAGE, HK, D), np.float16)
    q = np.ones((len(KV_LENS), HQ, D), np.float16)
    w.run(q, (pool, pool), k_scale=1.0, v_scale=1.0)
    with pytest.raises(UnsupportedError, match="k_scale"):
        w.run(q, (pool, pool), k_scale=0.5)


def test_plan_dtype_rules():
    indptr, indices, last = _pages(KV_LENS)
    w = flashband.BatchDecodeWithPagedKVCacheWrapper(np.zeros(8 << 20, np.uint8))
    # FlashInfer's data_type fills kv_data_type beside an explicit q_data_type (SGLang's use).
    w.plan(indptr, indices, last, HQ, HK, D, PAGE, q_data_type="float16", data_type="float8_e5m2")
    assert w._kv_data_type == "float8_e5m2"
    # ... and q_data_type too when it is not given: fp8 q is fp8 attention (test_fp8_attention.py),
    # which needs the output dtype named; e5m2 q is no path at all.
    with pytest.raises(InvalidArgumentError, match="o_data_type: not given"):
        w.plan(indptr, indices, last, HQ, HK, D, PAGE, data_type="float8_e4m3fn")
    with pytest.raises(InvalidArgumentError, match="q_data_type: float8_e5m2 is not one of .*float8_e4m3fn q"):
        w.plan(indptr, indices, last, HQ, HK, D, PAGE, q_data_type="float8_e5m2", kv_data_type="float8_e5m2")
    with pytest.raises(InvalidArgumentError, match="an fp8 cache is read with float16 or bfloat16 q"):
        w.plan(indptr, indices, last, HQ, HK, D, PAGE, q_data_type="float32", kv_data_type="e4m3")
    with pytest.raises(UnsupportedError, match="kv_data_type"):
        w.plan(indptr, indices, last, HQ, HK, D, PAGE, q_data_type="float16", kv_data_type="bfloat16")


def test_numpy_without_ml_dtypes_is_told_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # import ml_dtypes now raises ImportError
    indptr, indices, last = _pages(KV_LENS)
    w = flashband.BatchDecodeWithPagedKVCacheWrapper(np.zeros(8 << 20, np.uint8))
    w.plan(indptr, indices, last, HQ, HK, D, PAGE, q_data_type="float16", kv_data_type="float8_e4m3fn")
    raw = np.zeros((int(indptr[-1]), PAGE, HK, D), np.uint8)  # fp8 bytes without an fp8 dtype
    q = np.zeros((len(KV_LENS), HQ, D), np.float16)
    with pytest.raises(InvalidArgumentError, match=r"needs ml_dtypes \(pip install ml_dtypes\)"):
        w.run(q, (raw, raw))


def test_supports_reads_the_kv_dtype_column():
    assert flashband.supports("paged_decode", backend="cpu", dtype="float16", kv_dtype="float8_e5m2",
                              device="cpu", head_dim=64, page_size=16)
    answer = flashband.supports("paged_decode", backend="sm80", dtype="float16", kv_dtype="e4m3",
                                device="cuda", head_dim=128, page_size=16)
    assert not answer  # until sm80's row lists fp8, or (here) without a GPU: a reason either way
    assert answer.reason


def test_torch_fp8_on_the_host():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    q = torch.from_numpy(rng.standard_normal((5, HQ, D))).to(torch.bfloat16)
    k = torch.from_numpy(rng.standard_normal((8, HK, D)) / 0.5).to(torch.float8_e4m3fn)
    v = torch.from_numpy(rng.standard_normal((8, HK, D))).to(torch.float8_e5m2)
    with pytest.raises(ValueError, match="expected k's"):
        flashband.single_prefill_with_kv_cache(q, k, v, k_scale=0.5)
    v = v.to(torch.float32).to(torch.float8_e4m3fn)
    out = flashband.single_prefill_with_kv_cache(q, k, v, k_scale=0.5, v_scale=2.0)
    ref, _ = attention_np(q.double().numpy(), k.double().numpy() * 0.5, v.double().numpy() * 2.0)
    assert_out(out.float().numpy(), ref, "bfloat16")


def test_cuda_graph_replays_with_a_new_scale_tensor_value():
    """A decode captured once reads its scale tensors at replay: new values, new results."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    indptr, indices, last = _pages(KV_LENS)
    answer = flashband.supports("paged_decode", dtype="bfloat16", kv_dtype=torch.float8_e4m3fn, head_dim=128,
                                num_qo_heads=HQ, num_kv_heads=HK, device="cuda", page_size=PAGE)
    if not answer:
        pytest.skip(f"no GPU backend serves this fp8 decode yet: {answer.reason}")
    ws = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
    n = len(KV_LENS)
    w = flashband.BatchDecodeWithPagedKVCacheWrapper(
        ws, use_cuda_graph=True, paged_kv_indptr_buffer=torch.empty(n + 1, dtype=torch.int32, device="cuda"),
        paged_kv_indices_buffer=torch.empty(len(indices), dtype=torch.int32, device="cuda"),
        paged_kv_last_page_len_buffer=torch.empty(n, dtype=torch.int32, device="cuda"))
    w.plan(indptr, indices, last, HQ, HK, 128, PAGE, q_data_type=torch.bfloat16, kv_data_type=torch.float8_e4m3fn)
    g = torch.Generator(device="cuda").manual_seed(5)
    pool_shape = (len(indices), PAGE, HK, 128)
    k = torch.randn(pool_shape, device="cuda", generator=g).to(torch.float8_e4m3fn)
    v = torch.randn(pool_shape, device="cuda", generator=g).to(torch.float8_e4m3fn)
    q = torch.randn(n, HQ, 128, device="cuda", generator=g).to(torch.bfloat16)
    k_scale = torch.tensor([0.5], device="cuda")
    v_scale = torch.tensor([2.0], device="cuda")
    out = torch.empty_like(q)
    w.run(q, (k, v), out=out, k_scale=k_scale, v_scale=v_scale)  # warm-up outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        w.run(q, (k, v), out=out, k_scale=k_scale, v_scale=v_scale)
    for ks, vs in ((0.5, 2.0), (0.37, 3.1), (3.1, 0.37)):
        k_scale.fill_(ks)
        v_scale.fill_(vs)
        graph.replay()
        torch.cuda.synchronize()
        eager = w.run(q, (k, v), k_scale=ks, v_scale=vs)
        torch.testing.assert_close(out, eager, atol=0, rtol=0)
        for b in range(n):
            pages = indices[indptr[b]:indptr[b + 1]]
            kb = k[pages].reshape(-1, HK, 128)[:KV_LENS[b]].double().cpu().numpy() * ks
            vb = v[pages].reshape(-1, HK, 128)[:KV_LENS[b]].double().cpu().numpy() * vs
            ref, _ = attention_np(q[b:b + 1].double().cpu().numpy(), kb, vb)
            assert_out(out[b:b + 1].float().cpu().numpy(), ref, "bfloat16", what=f"replay {ks}, {vs}: request {b}")


@pytest.mark.parametrize("kv", ["float8_e4m3fn", "float8_e5m2"])
def test_fp8_with_a_two_sided_window(kv):
    """window_right (issue 66) and an fp8 cache (issue 65) together, single and paged."""
    rng = np.random.default_rng(7)
    ks, vs = 0.37, 3.1
    q = rng.standard_normal((6, HQ, D)).astype(np.float16)
    k, v = _cache(rng, kv, ks, 9), _cache(rng, kv, vs, 9)
    window = dict(window_left=2, window_right=1)
    ref, ref_lse = attention_np(q.astype(np.float64), k.astype(np.float64) * ks, v.astype(np.float64) * vs,
                                **window)
    out, lse = flashband.single_prefill_with_kv_cache(q, k, v, k_scale=ks, v_scale=vs, return_lse=True, **window)
    assert_out(out, ref, "float16")
    assert_lse(lse, ref_lse, "float16")
    indptr, indices, last = _pages([9])
    cache = (_paged([k], indptr, indices, [9], np.nan), _paged([v], indptr, indices, [9], np.nan))
    w = flashband.BatchPrefillWithPagedKVCacheWrapper(np.zeros(8 << 20, np.uint8))
    w.plan(np.array([0, 6], np.int32), indptr, indices, last, HQ, HK, D, PAGE, q_data_type="float16",
           kv_data_type=kv, **window)
    assert_out(w.run(q, cache, k_scale=ks, v_scale=vs), ref, "float16")


def test_a_plan_with_another_kv_dtype_gets_its_own_options():
    """plan() keeps the previous plan's Options only where every plan input is the same: a
    kv_data_type that changes gets Options made for it (the key holds the K/V dtype), the
    same inputs again keep them; each plan's runs match the oracle."""
    rng = np.random.default_rng(8)
    indptr, indices, last = _pages(KV_LENS)
    w = flashband.BatchDecodeWithPagedKVCacheWrapper(np.zeros(8 << 20, np.uint8))
    q = rng.standard_normal((len(KV_LENS), HQ, D)).astype(np.float16)
    kept = []
    for kv in (None, "float8_e4m3fn", "float8_e5m2", "float8_e5m2"):
        w.plan(indptr, indices, last, HQ, HK, D, PAGE, q_data_type="float16", kv_data_type=kv)
        kept.append(w._options_kept)
        k_tok = [rng.standard_normal((n, HK, D)).astype(np.float16 if kv is None else _fp8(kv)) for n in KV_LENS]
        v_tok = [rng.standard_normal((n, HK, D)).astype(np.float16 if kv is None else _fp8(kv)) for n in KV_LENS]
        cache = (_paged(k_tok, indptr, indices, KV_LENS, np.nan), _paged(v_tok, indptr, indices, KV_LENS, np.nan))
        scales = {} if kv is None else dict(k_scale=0.5, v_scale=2.0)
        out = w.run(q, cache, **scales)
        for b in range(len(KV_LENS)):
            ref, _ = _reference(q[b:b + 1], k_tok[b], v_tok[b], scales.get("k_scale", 1.0),
                                scales.get("v_scale", 1.0))
            assert_out(out[b:b + 1], ref, "float16", what=f"{kv}: request {b}")
    assert kept[0] is not kept[1] and kept[1] is not kept[2], "a new kv_data_type reused Options"
    assert kept[2] is kept[3], "the same plan inputs made Options anew"


def test_paged_forward_takes_the_fp8_scales():
    """forward() (FlashInfer's deprecated run with settings) dequantizes with its k_scale and
    v_scale, as run() does, rather than refusing them."""
    rng = np.random.default_rng(6)
    kv, ks, vs = "float8_e5m2", 0.37, 3.1
    k_tok = [_cache(rng, kv, ks, n) for n in KV_LENS]
    v_tok = [_cache(rng, kv, vs, n) for n in KV_LENS]
    qo_indptr = np.array([0, 3, 4, 10], np.int32)
    q = rng.standard_normal((10, HQ, D)).astype(np.float16)
    indptr, indices, last = _pages(KV_LENS)
    cache = (_paged(k_tok, indptr, indices, KV_LENS, np.nan), _paged(v_tok, indptr, indices, KV_LENS, np.nan))
    w = flashband.BatchPrefillWithPagedKVCacheWrapper(np.zeros(8 << 20, np.uint8))
    w.plan(qo_indptr, indptr, indices, last, HQ, HK, D, PAGE, causal=True, q_data_type="float16",
           kv_data_type=kv)
    out = w.forward(q, cache, causal=True, k_scale=ks, v_scale=vs)
    for b in range(len(KV_LENS)):
        rows = slice(qo_indptr[b], qo_indptr[b + 1])
        ref, _ = _reference(q[rows], k_tok[b], v_tok[b], ks, vs, causal=True)
        assert_out(out[rows], ref, "float16", what=f"request {b}")


@pytest.mark.parametrize("kv", ["float8_e4m3fn", "float8_e5m2"])
def test_attention_sink_wrapper_with_an_fp8_cache(kv):
    """FlashInfer's sink wrapper over an fp8 cache: run(q, cache, sink, k_scale=, v_scale=)."""
    rng = np.random.default_rng(5)
    ks, vs = 0.37, 3.1
    k_tok = [_cache(rng, kv, ks, n) for n in KV_LENS]
    v_tok = [_cache(rng, kv, vs, n) for n in KV_LENS]
    qo = [3, 1, 6]
    q = rng.standard_normal((sum(qo), HQ, D)).astype(np.float16)
    qo_indptr = np.concatenate([[0], np.cumsum(qo)]).astype(np.int32)
    indptr, indices, last = _pages(KV_LENS)
    cache = (_paged(k_tok, indptr, indices, KV_LENS, np.nan), _paged(v_tok, indptr, indices, KV_LENS, np.nan))
    sinks = np.array([-30.0, 0.5, 4.0, 2.5], np.float32)
    w = flashband.BatchAttentionWithAttentionSinkWrapper(np.zeros(8 << 20, np.uint8), q_data_type="float16",
                                                        kv_data_type=kv, head_dim_qk=D, head_dim_vo=D)
    w.plan(qo_indptr, indptr, indices, last, HQ, HK, D, PAGE, causal=True, q_data_type="float16",
           kv_data_type=kv)
    out = w.run(q, cache, sinks, k_scale=ks, v_scale=vs)
    for b in range(len(KV_LENS)):
        rows = slice(qo_indptr[b], qo_indptr[b + 1])
        ref, _ = _reference(q[rows], k_tok[b], v_tok[b], ks, vs, causal=True, sinks=sinks)
        assert_out(out[rows], ref, "float16", what=f"request {b}")
