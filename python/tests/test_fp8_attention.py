"""fp8 attention through the Python API (issue 60, SPEC.md "fp8 attention"): e4m3 q, K and V
with per-tensor descales and a named 16-bit output, on the cpu backend, judged by SPEC.md's
bound against the float64 oracle on the exactly dequantized inputs and the oracle that
quantizes P (_reference.attention_np(quantize_p=True)); FlashInfer 0.7.2's names
(plan(q_data_type=, kv_data_type=, o_data_type=), run(q_scale=, k_scale=, v_scale=),
single_prefill_with_kv_cache(scale_q=, scale_k=, scale_v=, o_dtype=)); each new argument's
refusals; and that an fp8 cache with 16-bit q stays the quantized-KV path."""

import sys

import numpy as np
import pytest

import flashband
from flashband.errors import InvalidArgumentError, UnsupportedError
from _checks import assert_fp8_attention, assert_lse, assert_out
from _reference import attention_np

torch = pytest.importorskip("torch")

HQ, HK, D, PAGE = 4, 2, 64, 4
QS, KS, VS = 0.45, 0.3, 2.5  # descales: the stored e4m3 values are normal / scale
QO_LENS, KV_LENS = (3, 1, 7), (9, 1, 13)
E4M3 = torch.float8_e4m3fn


def _e4m3(rng, shape, scale, outliers=False):
    """e4m3 values of normal / scale (dequantized: unit spread); with outliers one element
    in 64 is sixteen times larger (a wide per-tensor range, SPEC.md)."""
    x = rng.standard_normal(shape)
    if outliers:
        x = np.where(rng.random(shape) < 1 / 64, 16.0 * x, x)
    return torch.from_numpy(np.clip(x / scale, -448.0, 448.0)).to(E4M3)


def _exact(x8, scale):
    return x8.double().numpy() * scale


def _references(q8, k8, v8, scales=(QS, KS, VS), **mask):
    """(exact out, exact lse, emulated out) of one request, NHD."""
    q, k, v = (_exact(x, s) for x, s in zip((q8, k8, v8), scales))
    exact, lse = attention_np(q, k, v, **mask)
    emulated, _ = attention_np(q, k, v, quantize_p=True, **mask)
    return exact, lse, emulated


def _judge(out, lse, refs, o_dtype, what="out"):
    exact, exact_lse, emulated = refs
    assert_fp8_attention(out.double().numpy(), exact, emulated, o_dtype, what)
    if lse is not None:
        assert_lse(lse.numpy(), exact_lse, o_dtype, what=f"{what}: lse")


def _scale(value, as_tensor):
    return torch.tensor([value], dtype=torch.float32) if as_tensor else value


def _pages(lens):
    counts = [(n + PAGE - 1) // PAGE for n in lens]
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    last = np.array([(n - 1) % PAGE + 1 if n else 1 for n in lens], np.int32)
    indices = np.arange(int(indptr[-1]), dtype=np.int32)[::-1].copy()  # page order != token order
    return indptr, indices, last


def _paged(tokens, indptr, indices, lens):
    """The requests' e4m3 tokens laid into pages; unused slots hold e4m3 NaN (never read)."""
    pool = torch.full((int(indptr[-1]), PAGE, HK, D), float("nan")).to(E4M3)
    for b, toks in enumerate(tokens):
        for t in range(lens[b]):
            pool[indices[indptr[b] + t // PAGE], t % PAGE] = toks[t]
    return pool


def _batch(rng, qo_lens, outliers=False):
    q = [_e4m3(rng, (n, HQ, D), QS, outliers) for n in qo_lens]
    k = [_e4m3(rng, (n, HK, D), KS, outliers) for n in KV_LENS]
    v = [_e4m3(rng, (n, HK, D), VS, outliers) for n in KV_LENS]
    return q, k, v


def _wrapper_run(entry, q, k, v, o_dtype, as_tensor, causal=True, stacked=False, **plan):
    """Plans and runs one batch wrapper with fp8 attention; returns (out, lse, qo_indptr)."""
    ws = torch.empty(8 << 20, dtype=torch.uint8)
    qo = [len(x) for x in q]
    qo_indptr = np.concatenate([[0], np.cumsum(qo)]).astype(np.int32)
    dtypes = dict(q_data_type=E4M3, kv_data_type=E4M3, o_data_type=o_dtype, **plan)
    scales = dict(q_scale=_scale(QS, as_tensor), k_scale=_scale(KS, as_tensor), v_scale=_scale(VS, as_tensor))
    if entry == "ragged":
        w = flashband.BatchPrefillWithRaggedKVCacheWrapper(ws)
        kv_indptr = np.concatenate([[0], np.cumsum(KV_LENS)]).astype(np.int32)
        w.plan(qo_indptr, kv_indptr, HQ, HK, D, causal=causal, **dtypes)
        out, lse = w.run(torch.cat(q), torch.cat(k), torch.cat(v), return_lse=True, **scales)
        return out, lse, qo_indptr
    indptr, indices, last = _pages(KV_LENS)
    cache = (_paged(k, indptr, indices, KV_LENS), _paged(v, indptr, indices, KV_LENS))
    if stacked:
        cache = torch.stack(cache, dim=1)
    if entry == "decode":
        w = flashband.BatchDecodeWithPagedKVCacheWrapper(ws)
        w.plan(indptr, indices, last, HQ, HK, D, PAGE, **dtypes)
    else:
        w = flashband.BatchPrefillWithPagedKVCacheWrapper(ws)
        w.plan(qo_indptr, indptr, indices, last, HQ, HK, D, PAGE, causal=causal, **dtypes)
    out, lse = w.run(torch.cat(q), cache, return_lse=True, **scales)
    return out, lse, qo_indptr


@pytest.mark.parametrize("o_dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("as_tensor", [False, True], ids=["float", "tensor"])
@pytest.mark.parametrize("window", [-1, 3], ids=["", "window3"])
def test_single_prefill(o_dtype, as_tensor, window):
    rng = np.random.default_rng(1)
    q, k, v = _e4m3(rng, (7, HQ, D), QS), _e4m3(rng, (11, HK, D), KS), _e4m3(rng, (11, HK, D), VS)
    # FlashInfer 0.7.2's single-prefill names: scale_q / scale_k / scale_v (one element) and o_dtype.
    out, lse = flashband.single_prefill_with_kv_cache(
        q, k, v, scale_q=_scale(QS, as_tensor), scale_k=_scale(KS, as_tensor), scale_v=_scale(VS, as_tensor),
        o_dtype=o_dtype, causal=True, window_left=window, return_lse=True)
    assert out.dtype == o_dtype and flashband.last_run_info().backend == "cpu"
    name = "bfloat16" if o_dtype == torch.bfloat16 else "float16"
    _judge(out, lse, _references(q, k, v, causal=True, window_left=window), name)
    # k_scale / v_scale (FlashInfer's per-tensor floats) name the same descales.
    again = flashband.single_prefill_with_kv_cache(q, k, v, scale_q=QS, k_scale=KS, v_scale=VS, o_dtype=o_dtype,
                                                   causal=True, window_left=window)
    assert torch.equal(again, out)


@pytest.mark.parametrize("entry", ["ragged", "paged", "stacked", "decode"])
@pytest.mark.parametrize("as_tensor", [False, True], ids=["float", "tensor"])
def test_batch_wrappers(entry, as_tensor):
    rng = np.random.default_rng(2)
    qo_lens = (1, 1, 1) if entry == "decode" else QO_LENS
    q, k, v = _batch(rng, qo_lens)
    out, lse, qo_indptr = _wrapper_run("paged" if entry == "stacked" else entry, q, k, v, torch.bfloat16,
                                       as_tensor, stacked=entry == "stacked")
    assert out.dtype == torch.bfloat16
    for b in range(len(KV_LENS)):
        rows = slice(qo_indptr[b], qo_indptr[b + 1])
        refs = _references(q[b], k[b], v[b], causal=entry != "decode")
        _judge(out[rows], lse[rows], refs, "bfloat16", what=f"{entry} request {b}")


def test_outliers_and_fp16_output():
    """Inputs with a wide per-tensor range (SPEC.md's outlier case), fp16 output."""
    rng = np.random.default_rng(3)
    q, k, v = _batch(rng, QO_LENS, outliers=True)
    out, lse, qo_indptr = _wrapper_run("paged", q, k, v, torch.float16, True)
    for b in range(len(KV_LENS)):
        rows = slice(qo_indptr[b], qo_indptr[b + 1])
        _judge(out[rows], lse[rows], _references(q[b], k[b], v[b], causal=True), "float16", what=f"request {b}")


@pytest.mark.parametrize("wrong", [None, QS / 2, 2 * QS], ids=["omitted", "half", "double"])
def test_a_wrong_q_scale_fails_the_bound(wrong):
    """The bound catches a q_scale that is not applied or not the one given: the run with the
    wrong descale is judged against the references of the right one."""
    rng = np.random.default_rng(4)
    q, k, v = _e4m3(rng, (7, HQ, D), QS), _e4m3(rng, (11, HK, D), KS), _e4m3(rng, (11, HK, D), VS)
    refs = _references(q, k, v, causal=True)
    out = flashband.single_prefill_with_kv_cache(q, k, v, scale_q=wrong, k_scale=KS, v_scale=VS,
                                                 o_dtype=torch.bfloat16, causal=True)
    with pytest.raises(AssertionError):
        _judge(out, None, refs, "bfloat16")
    # And the wrapper's run(q_scale=) likewise.
    w = flashband.BatchPrefillWithRaggedKVCacheWrapper(torch.empty(1 << 20, dtype=torch.uint8))
    w.plan(np.array([0, 7], np.int32), np.array([0, 11], np.int32), HQ, HK, D, causal=True,
           q_data_type=E4M3, o_data_type=torch.bfloat16)
    with pytest.raises(AssertionError):
        _judge(w.run(q, k, v, q_scale=wrong, k_scale=KS, v_scale=VS), None, refs, "bfloat16")
    _judge(w.run(q, k, v, q_scale=QS, k_scale=KS, v_scale=VS), None, refs, "bfloat16")


def test_the_emulating_oracle_differs_from_the_exact_one():
    """The bound's reference quantizes P: it differs from the exact oracle (else 2 x its
    error would be 0 and the bound the 16-bit atol alone)."""
    rng = np.random.default_rng(5)
    q, k, v = _e4m3(rng, (7, HQ, D), QS), _e4m3(rng, (11, HK, D), KS), _e4m3(rng, (11, HK, D), VS)
    exact, _, emulated = _references(q, k, v)
    assert np.max(np.abs(emulated - exact)) > 1e-3


def test_an_fp8_cache_with_16_bit_q_is_not_fp8_attention():
    """Opt-in only (SPEC.md): bf16 q over an e4m3 cache keeps q as it is (the 16-bit bound
    against the exact oracle holds; q rounded to e4m3 would break it) and takes no q_scale."""
    rng = np.random.default_rng(6)
    q = torch.from_numpy(rng.standard_normal((7, HQ, D))).to(torch.bfloat16)
    k, v = _e4m3(rng, (11, HK, D), KS), _e4m3(rng, (11, HK, D), VS)
    out = flashband.single_prefill_with_kv_cache(q, k, v, k_scale=KS, v_scale=VS, causal=True)
    assert out.dtype == torch.bfloat16
    ref, _ = attention_np(q.double().numpy(), _exact(k, KS), _exact(v, VS), causal=True)
    assert_out(out.float().numpy(), ref, "bfloat16")
    rounded, _ = attention_np(q.to(E4M3).double().numpy(), _exact(k, KS), _exact(v, VS), causal=True, quantize_p=True)
    with pytest.raises(AssertionError):
        assert_out(rounded, ref, "bfloat16")
    with pytest.raises(UnsupportedError, match="scale_q"):
        flashband.single_prefill_with_kv_cache(q, k, v, scale_q=0.5, k_scale=KS)
    w = flashband.BatchPrefillWithRaggedKVCacheWrapper(torch.empty(1 << 20, dtype=torch.uint8))
    w.plan(np.array([0, 7], np.int32), np.array([0, 11], np.int32), HQ, HK, D, q_data_type=torch.bfloat16,
           kv_data_type=E4M3)
    with pytest.raises(UnsupportedError, match="q_scale"):
        w.run(q, k, v, q_scale=0.5, k_scale=KS)


def _ragged_plan(**dtypes):
    w = flashband.BatchPrefillWithRaggedKVCacheWrapper(torch.empty(1 << 20, dtype=torch.uint8))
    w.plan(np.array([0, 7], np.int32), np.array([0, 11], np.int32), HQ, HK, D, **dtypes)
    return w


def _inputs(seed=7):
    rng = np.random.default_rng(seed)
    return _e4m3(rng, (7, HQ, D), QS), _e4m3(rng, (11, HK, D), KS), _e4m3(rng, (11, HK, D), VS)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_q_scale_values(bad):
    q, k, v = _inputs()
    w = _ragged_plan(q_data_type=E4M3, o_data_type=torch.bfloat16)
    with pytest.raises(ValueError, match="q_scale: got"):
        w.run(q, k, v, q_scale=bad)
    with pytest.raises(ValueError, match="q_scale: got"):
        w.run(q, k, v, q_scale=torch.tensor([bad]))
    with pytest.raises(ValueError, match="q_scale: got"):
        flashband.single_prefill_with_kv_cache(q, k, v, scale_q=bad, o_dtype=torch.bfloat16)


def test_bad_q_scale_tensors():
    q, k, v = _inputs()
    w = _ragged_plan(q_data_type=E4M3, o_data_type=torch.bfloat16)
    with pytest.raises(ValueError, match=r"q_scale: shape \[2\]"):
        w.run(q, k, v, q_scale=torch.ones(2))
    with pytest.raises(ValueError, match="q_scale: DLPack dtype code 2 bits 64"):
        w.run(q, k, v, q_scale=torch.ones(1, dtype=torch.float64))
    with pytest.raises(ValueError, match="q_scale: expected a number"):
        w.run(q, k, v, q_scale="0.5")


@pytest.mark.parametrize("name", ["scale_q", "scale_k", "scale_v"])
def test_per_head_scales_are_refused(name):
    """FlashInfer 0.7.2's single prefill takes them per head; flashband per tensor only."""
    q, k, v = _inputs()
    heads = HQ if name == "scale_q" else HK
    with pytest.raises(UnsupportedError, match=rf"{name}: {heads} elements .*per-head scales are not supported"):
        flashband.single_prefill_with_kv_cache(q, k, v, o_dtype=torch.bfloat16, **{name: torch.ones(heads)})


def test_a_descale_given_twice_is_refused():
    q, k, v = _inputs()
    with pytest.raises(InvalidArgumentError, match="scale_k and k_scale: both given"):
        flashband.single_prefill_with_kv_cache(q, k, v, o_dtype=torch.bfloat16, scale_k=KS, k_scale=KS)


def test_the_output_dtype_must_be_named():
    """FlashInfer 0.7.2 defaults o_data_type to q's (fp8): flashband asks for it by name."""
    q, k, v = _inputs()
    with pytest.raises(InvalidArgumentError, match="o_dtype: not given; .*pass o_dtype=torch.bfloat16"):
        flashband.single_prefill_with_kv_cache(q, k, v)
    with pytest.raises(InvalidArgumentError, match="o_data_type: not given; .*pass o_data_type=torch.bfloat16"):
        _ragged_plan(q_data_type=E4M3)
    indptr, indices, last = _pages(KV_LENS)
    for w in (flashband.BatchPrefillWithPagedKVCacheWrapper(torch.empty(1 << 20, dtype=torch.uint8)),
              flashband.BatchDecodeWithPagedKVCacheWrapper(torch.empty(1 << 20, dtype=torch.uint8))):
        args = (indptr, indices, last, HQ, HK, D, PAGE)
        if isinstance(w, flashband.BatchPrefillWithPagedKVCacheWrapper):
            args = (np.arange(4, dtype=np.int32),) + args
        with pytest.raises(InvalidArgumentError, match="o_data_type: not given"):
            w.plan(*args, q_data_type=E4M3, kv_data_type=E4M3)
    # An fp8 or float32 output is named and refused by the library.
    for bad in (E4M3, torch.float32):
        with pytest.raises(InvalidArgumentError, match="o_data_type: got .* allowed: float16, bfloat16"):
            _ragged_plan(q_data_type=E4M3, o_data_type=bad)
        with pytest.raises(InvalidArgumentError, match="o_dtype: got .* allowed: float16, bfloat16"):
            flashband.single_prefill_with_kv_cache(q, k, v, o_dtype=bad)


def test_out_names_the_output_of_single_prefill():
    """single prefill's out= (a flashband extension) names the output dtype; beside o_dtype
    the two must agree."""
    q, k, v = _inputs()
    out = torch.empty(7, HQ, D, dtype=torch.float16)
    got = flashband.single_prefill_with_kv_cache(q, k, v, scale_q=QS, k_scale=KS, v_scale=VS, out=out)
    assert got is out
    _judge(out, None, _references(q, k, v), "float16")
    with pytest.raises(InvalidArgumentError, match="out: dtype float16, but o_dtype is bfloat16"):
        flashband.single_prefill_with_kv_cache(q, k, v, o_dtype=torch.bfloat16, out=out)


def test_mismatched_dtypes_at_run_are_value_errors():
    """As the fp8-KV path (and FlashInfer's ValueError on out's dtype): q, K/V and out must
    have the plan's q_data_type, kv_data_type and o_data_type."""
    q, k, v = _inputs()
    w = _ragged_plan(q_data_type=E4M3, o_data_type=torch.bfloat16)
    with pytest.raises(ValueError, match="q: .*given to plan"):
        w.run(q.to(torch.bfloat16), k, v)
    with pytest.raises(ValueError, match="k: dtype float8_e5m2, expected float8_e4m3fn"):
        w.run(q, k.to(torch.float8_e5m2), v.to(torch.float8_e5m2))
    with pytest.raises(ValueError, match="out: .*o_data_type given to plan"):
        w.run(q, k, v, out=torch.empty(7, HQ, D, dtype=torch.float16))
    w16 = _ragged_plan(q_data_type=torch.bfloat16)
    with pytest.raises(ValueError, match="q: .*given to plan"):
        w16.run(q, k.to(torch.bfloat16), v.to(torch.bfloat16), out=torch.empty(7, HQ, D, dtype=torch.bfloat16))


@pytest.mark.parametrize("kv", [torch.float8_e5m2, torch.bfloat16])
def test_kv_other_than_e4m3_is_refused(kv):
    with pytest.raises(InvalidArgumentError, match="kv_data_type: got .* allowed: float8_e4m3fn"):
        _ragged_plan(q_data_type=E4M3, kv_data_type=kv, o_data_type=torch.bfloat16)


def test_e5m2_q_is_refused_by_name():
    with pytest.raises(InvalidArgumentError, match="q_data_type: float8_e5m2 is not one of"):
        _ragged_plan(q_data_type=torch.float8_e5m2, o_data_type=torch.bfloat16)
    q, k, v = _inputs()
    with pytest.raises(InvalidArgumentError, match="q: dtype float8_e5m2"):
        flashband.single_prefill_with_kv_cache(q.to(torch.float8_e5m2), k, v, o_dtype=torch.bfloat16)


def test_single_decode_refuses_fp8_q():
    """FlashInfer 0.7.2's single decode has no output dtype: refused, pointing elsewhere."""
    q, k, v = _inputs()
    with pytest.raises(UnsupportedError, match="single_prefill_with_kv_cache"):
        flashband.single_decode_with_kv_cache(q[0], k, v)


@pytest.mark.parametrize("backend", ["sm80", "sm90", "fa3", "cudnn"])
def test_gpu_backends_refuse_host_fp8_attention(backend):
    """Asked for a GPU backend with host tensors: refused naming it and the one that runs them."""
    q, k, v = _inputs()
    with pytest.raises(flashband.FlashbandError, match=r"backend '(sm80|sm90|cudnn)'.*'cpu' does"):
        flashband.single_prefill_with_kv_cache(q, k, v, o_dtype=torch.bfloat16, backend=backend)


def test_the_support_matrix_names_each_refusal():
    """The capability table: cpu serves fp8 attention, each GPU backend refuses with its reason."""
    line = next(l for l in flashband.support_matrix().splitlines() if l.startswith("fp8 attention"))
    refused = line.split("is refused by: ", 1)[1]
    for backend, reason in (("sm80", "no fp8 tensor cores before sm_89"), ("sm90", "kernels not written yet"),
                            ("cudnn", "not wired yet")):
        assert f"{backend} (" in refused and reason in refused, refused
    assert "cpu" not in refused
    assert flashband.supports("paged_prefill", backend="cpu", dtype=E4M3, kv_dtype=E4M3, device="cpu",
                              head_dim=D, page_size=PAGE)


def test_gpu_backends_refuse_fp8_attention_on_a_gpu():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    q, k, v = (x.cuda() for x in _inputs())
    for backend, reason in (("sm90", "kernels not written yet"), ("cudnn", "not wired yet"),
                            ("sm80", "no fp8 tensor cores before sm_89")):
        with pytest.raises(UnsupportedError, match=rf"backend '{backend}' does not support fp8 attention.*{reason}"):
            flashband.single_prefill_with_kv_cache(q, k, v, o_dtype=torch.bfloat16, backend=backend)


def test_numpy_without_ml_dtypes_is_told_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # import ml_dtypes now raises ImportError
    dtypes = dict(q_data_type="float8_e4m3fn", o_data_type="float16")
    raw = np.zeros((7, HQ, D), np.uint8)  # e4m3 bytes without an fp8 dtype
    w = flashband.BatchPrefillWithRaggedKVCacheWrapper(np.zeros(1 << 20, np.uint8))
    w.plan(np.array([0, 7], np.int32), np.array([0, 11], np.int32), HQ, HK, D, **dtypes)
    with pytest.raises(InvalidArgumentError, match=r"q: dtype uint8.*needs ml_dtypes \(pip install ml_dtypes\)"):
        w.run(raw, np.zeros((11, HK, D), np.uint8), np.zeros((11, HK, D), np.uint8))
    indptr, indices, last = _pages(KV_LENS)
    d = flashband.BatchDecodeWithPagedKVCacheWrapper(np.zeros(1 << 20, np.uint8))
    d.plan(indptr, indices, last, HQ, HK, D, PAGE, **dtypes)
    pool = np.zeros((len(indices), PAGE, HK, D), np.float16)  # passes its own check; q is judged next
    with pytest.raises(InvalidArgumentError, match=r"q: dtype uint8.*needs ml_dtypes \(pip install ml_dtypes\)"):
        d.run(raw[:3], (pool, pool))


def test_numpy_with_ml_dtypes():
    """NumPy callers hold e4m3 as ml_dtypes arrays; NumPy's output is float16 (a NumPy
    bfloat16 cannot cross DLPack: refused by name)."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    q, k, v = _inputs(8)
    q_np, k_np, v_np = (x.float().numpy().astype(ml_dtypes.float8_e4m3fn) for x in (q, k, v))
    out = flashband.single_prefill_with_kv_cache(q_np, k_np, v_np, scale_q=QS, k_scale=KS, v_scale=VS,
                                                 o_dtype="float16", causal=True)
    assert out.dtype == np.float16
    exact, _, emulated = _references(q, k, v, causal=True)
    assert_fp8_attention(out, exact, emulated, "float16")
    with pytest.raises(UnsupportedError, match="out: a NumPy array cannot hold a bfloat16 output"):
        flashband.single_prefill_with_kv_cache(q_np, k_np, v_np, o_dtype="bfloat16")
