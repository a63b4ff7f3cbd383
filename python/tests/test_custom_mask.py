"""Custom masks (SPEC.md "Custom masks") with FlashInfer 0.7.2's names: custom_mask and
packed_custom_mask on single_prefill_with_kv_cache and both prefill wrappers' plan(), judged
against the float64 oracle's own mask (the unpacked matrix); packbits / segment_packbits
against a pure-Python packing; the CUDA-graph mask buffers; bad input by name. Each case
first shows that its mask changes the reference, so a backend ignoring it fails. GPU envs
run where supports() says yes (sm80 on prefill) and skip elsewhere."""

import numpy as np
import pytest

import flashband
from _cases import Paged, Ragged, rand
from _checks import assert_differs, assert_empty_rows_exact, assert_lse, assert_out
from _reference import attention_np


def pack_py(bits, bitorder):
    """Pure Python: 8 bits a byte, element 0 in the most ("big") or least ("little")
    significant bit, the last byte padded with zeros."""
    out = []
    for start in range(0, len(bits), 8):
        byte = 0
        for i, b in enumerate(bits[start:start + 8]):
            if b:
                byte |= 1 << (7 - i if bitorder == "big" else i)
        out.append(byte)
    return out


@pytest.mark.parametrize("bitorder", ["big", "little"])
def test_packbits_matches_pure_python(bitorder):
    rng = np.random.default_rng(0)
    for n in (0, 1, 7, 8, 9, 31, 64, 100):
        x = rng.random(n) < 0.5
        assert flashband.packbits(x, bitorder).tolist() == pack_py(x.tolist(), bitorder)
        assert flashband.packbits(x.astype(np.int32), bitorder).tolist() == pack_py(x.tolist(), bitorder)
    lengths = [0, 5, 8, 13, 0, 1, 17]
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    x = rng.random(indptr[-1]) < 0.5
    y, new_indptr = flashband.segment_packbits(x, indptr, bitorder)
    want = [pack_py(x[a:b].tolist(), bitorder) for a, b in zip(indptr[:-1], indptr[1:])]
    assert y.dtype == np.uint8 and new_indptr.dtype == np.int32
    assert y.tolist() == sum(want, [])
    assert new_indptr.tolist() == np.concatenate([[0], np.cumsum([len(w) for w in want])]).tolist()


def test_packbits_examples_of_flashinfer():
    """The examples of FlashInfer 0.7.2's docstrings (flashinfer/quantization/packbits.py)."""
    x = np.array([1, 0, 1, 1, 0, 0, 1, 1], dtype=bool)
    assert list(map(bin, flashband.packbits(x).tolist())) == ["0b10110011"]
    x = np.array([1, 0, 1, 1, 0, 0, 1, 1, 1, 0, 1], dtype=bool)
    y, new_indptr = flashband.segment_packbits(x, np.array([0, 4, 7, 11]), bitorder="big")
    assert list(map(bin, y.tolist())) == ["0b10110000", "0b100000", "0b11010000"]
    assert new_indptr.tolist() == [0, 1, 2, 3]


def test_packbits_on_torch():
    torch = pytest.importorskip("torch")
    x = torch.tensor([1, 0, 1, 1, 0, 0, 1, 1, 1], dtype=torch.bool)
    y = flashband.packbits(x, "little")
    assert isinstance(y, torch.Tensor) and y.dtype == torch.uint8
    assert y.tolist() == pack_py(x.tolist(), "little")
    y, ip = flashband.segment_packbits(x, torch.tensor([0, 3, 9]), "little")
    assert isinstance(ip, torch.Tensor) and ip.dtype == torch.int32 and ip.tolist() == [0, 1, 2]
    assert y.tolist() == pack_py(x[:3].tolist(), "little") + pack_py(x[3:].tolist(), "little")


def test_packbits_bad_input_is_named():
    with pytest.raises(flashband.InvalidArgumentError, match="^bitorder"):
        flashband.packbits(np.ones(3, bool), "middle")
    with pytest.raises(flashband.InvalidArgumentError, match="^x: must be 1-D"):
        flashband.packbits(np.ones((2, 3), bool))
    with pytest.raises(flashband.InvalidArgumentError, match="^indptr"):
        flashband.segment_packbits(np.ones(5, bool), np.array([0, 3, 4]))


def random_mask(rng, qo, kv, density=0.5):
    """A [qo, kv] mask whose row 0 hides every key (when qo >= 3), so the empty-row rule is met."""
    m = rng.random((qo, kv)) < density
    if qo >= 3:
        m[0] = False
    return m


def check(env, out, lse, ref, plain, dtype):
    ref_o, ref_lse = ref
    assert_differs(ref_o, plain[0], what="custom mask")
    assert_out(env.to64(out), ref_o, dtype)
    assert_lse(env.to64(lse), ref_lse, dtype)
    assert_empty_rows_exact(env.to64(out), ref_lse)


WINDOWS = [(-1, -1, None), (5, -1, None), (-1, 3, 3.0), (6, 2, None)]


@pytest.mark.parametrize("window_left,window_right,cap", WINDOWS,
                         ids=[f"wl{w}_wr{r}_cap{c}" for w, r, c in WINDOWS])
@pytest.mark.parametrize("packed", [False, True])
def test_single_prefill(env, dtype, window_left, window_right, cap, packed):
    qo, kv, hq, hk, d = 23, 41, 4, 2, 64
    env.require(op="single_prefill", dtype=dtype, head_dim=d, num_qo_heads=hq, num_kv_heads=hk,
                window_left=window_left, window_right=window_right, logits_soft_cap=cap, return_lse=True,
                has_empty_rows=True, custom_mask=True)
    rng = np.random.default_rng(9000 + window_left + 10 * window_right)
    q, k, v = (env.array(rand(rng, n, h, d), dtype) for n, h in ((qo, hq), (kv, hk), (kv, hk)))
    mask = random_mask(rng, qo, kv)
    given = dict(packed_custom_mask=env.array(np.packbits(mask.ravel(), bitorder="little"), "uint8")) if packed \
        else dict(custom_mask=env.array(mask, "bool"))
    out, lse = flashband.single_prefill_with_kv_cache(
        q, k, v, window_left=window_left, window_right=window_right, logits_soft_cap=cap, return_lse=True,
        backend=env.backend, **given)
    env.sync()
    kw = dict(window_left=window_left, window_right=window_right, logits_soft_cap=cap)
    q64, k64, v64 = env.to64(q), env.to64(k), env.to64(v)
    check(env, out, lse, env.reference(q64, k64, v64, mask=mask, **kw), env.reference(q64, k64, v64, **kw), dtype)


@pytest.mark.parametrize("kind", ["ragged", "paged", "paged_stacked"])
@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("sinks", [False, True])
def test_batch_prefill(env, dtype, kind, packed, sinks):
    rng = np.random.default_rng(9100 + packed + 2 * sinks)
    qo_lens, kv_lens = [9, 0, 20, 4, 3], [33, 13, 70, 0, 5]  # empty segments; 3 x 5 bits pads
    hq, hk, d = 4, 2, 64
    batch = Ragged(rng, qo_lens, kv_lens, hq, hk, d)
    op = "ragged_prefill" if kind == "ragged" else "paged_prefill"
    env.require(op=op, dtype=dtype, head_dim=d, num_qo_heads=hq, num_kv_heads=hk, window_left=11,
                return_lse=True, page_size=0 if kind == "ragged" else 8, has_empty_rows=True, sinks=sinks,
                custom_mask=True)
    masks = [random_mask(rng, qo, kv) for qo, kv in zip(qo_lens, kv_lens)]
    flat = np.concatenate([m.ravel() for m in masks])
    if packed:
        bits_indptr = np.concatenate([[0], np.cumsum([m.size for m in masks])])
        packed_bits, _ = flashband.segment_packbits(flat, bits_indptr, bitorder="little")
        given = dict(packed_custom_mask=env.array(packed_bits, "uint8"))
    else:
        given = dict(custom_mask=env.array(flat, "bool"))
    nbytes = flashband.batch_workspace_bytes(batch.batch, sum(qo_lens), hq, d, env.device)
    q = env.array(batch.q, dtype)
    sink_arg = env.array(np.array([4.0, -2.0, 1.0, 6.0], np.float32), "float32") if sinks else None
    if kind == "ragged":
        w = flashband.BatchPrefillWithRaggedKVCacheWrapper(env.workspace(nbytes), backend=env.backend)
        w.plan(env.index(batch.qo_indptr), env.index(batch.kv_indptr), hq, hk, d, q_data_type=dtype,
               window_left=11, return_lse=True, **given)
        out, lse = w.run(q, env.array(batch.k, dtype), env.array(batch.v, dtype), return_lse=True, sinks=sink_arg)
    else:
        pages = Paged(rng, batch, 8)
        w = flashband.BatchPrefillWithPagedKVCacheWrapper(env.workspace(nbytes), backend=env.backend)
        w.plan(env.index(batch.qo_indptr), env.index(pages.indptr), env.index(pages.indices),
               env.index(pages.last_page_len), hq, hk, d, 8, q_data_type=dtype, window_left=11,
               return_lse=True, **given)
        cache = (env.array(pages.k_pages, dtype), env.array(pages.v_pages, dtype))
        if kind == "paged_stacked":
            cache = env.array(np.stack([pages.k_pages, pages.v_pages], axis=1), dtype)
        out, lse = w.run(q, cache, return_lse=True, sinks=sink_arg)
    env.sync()
    q64, k64, v64 = env.to64(q), env.to64(env.array(batch.k, dtype)), env.to64(env.array(batch.v, dtype))
    kw = dict(window_left=11, sinks=None if sink_arg is None else env.to64(sink_arg))
    ref = batch.reference(env.reference, q64, k64, v64, masks=masks, **kw)
    plain = batch.reference(env.reference, q64, k64, v64, **kw)
    assert_differs(ref[0], plain[0], what="custom mask")
    assert_out(env.to64(out), ref[0], dtype)
    assert_lse(env.to64(lse), ref[1], dtype)


def _host_batch(seed=9200):
    rng = np.random.default_rng(seed)
    batch = Ragged(rng, [6, 3], [10, 3], 2, 2, 64)
    masks = [random_mask(rng, 6, 10), random_mask(rng, 3, 3, 0.7)]
    return batch, masks, np.concatenate([m.ravel() for m in masks])


def test_bad_masks_are_named():
    batch, masks, flat = _host_batch()
    q, k, v = batch.q[:6], batch.k[:10], batch.v[:10]
    with pytest.raises(flashband.InvalidArgumentError, match="^custom_mask: 59 elements, expected 60"):
        flashband.single_prefill_with_kv_cache(q, k, v, custom_mask=masks[0].ravel()[:59], backend="cpu")
    with pytest.raises(flashband.InvalidArgumentError, match="^causal: got true with a custom_mask"):
        flashband.single_prefill_with_kv_cache(q, k, v, custom_mask=masks[0], causal=True, backend="cpu")
    with pytest.raises(flashband.InvalidArgumentError, match=r"^packed_custom_mask: shape \(7,\)"):
        flashband.single_prefill_with_kv_cache(q, k, v, packed_custom_mask=np.zeros(7, np.uint8), backend="cpu")
    with pytest.raises(flashband.InvalidArgumentError, match="^packed_custom_mask: .* dtype int32"):
        flashband.single_prefill_with_kv_cache(q, k, v, packed_custom_mask=np.zeros(8, np.int32), backend="cpu")
    other = np.packbits(~masks[0].ravel(), bitorder="little")
    with pytest.raises(flashband.InvalidArgumentError, match="^custom_mask: differs from packed_custom_mask"):
        flashband.single_prefill_with_kv_cache(q, k, v, custom_mask=masks[0], packed_custom_mask=other,
                                               backend="cpu")
    # Both given and equal: taken (FlashInfer uses the packed one; they agree).
    same = np.packbits(masks[0].ravel(), bitorder="little")
    a = flashband.single_prefill_with_kv_cache(q, k, v, custom_mask=masks[0], packed_custom_mask=same, backend="cpu")
    b = flashband.single_prefill_with_kv_cache(q, k, v, custom_mask=masks[0], backend="cpu")
    np.testing.assert_array_equal(a, b)
    # A batch packed as one segment (no per-request padding) is one byte short here.
    w = flashband.BatchPrefillWithRaggedKVCacheWrapper(np.empty(0, np.uint8), backend="cpu")
    with pytest.raises(flashband.InvalidArgumentError, match=r"^packed_custom_mask: shape \(9,\).*expected \(10,\)"):
        w.plan(batch.qo_indptr, batch.kv_indptr, 2, 2, 64, q_data_type="float32",
               packed_custom_mask=np.packbits(flat, bitorder="little"))
    with pytest.raises(flashband.InvalidArgumentError, match="^causal: got true with a custom_mask"):
        w.plan(batch.qo_indptr, batch.kv_indptr, 2, 2, 64, q_data_type="float32", causal=True, custom_mask=flat)


def test_supports_names_the_mask():
    assert flashband.supports("ragged_prefill", backend="cpu", device="cpu", custom_mask=True)
    for backend in ("sm90", "cudnn"):
        answer = flashband.supports("ragged_prefill", backend=backend, device="cuda", head_dim=128, custom_mask=True)
        assert not answer
    # sm80 serves masks on prefill: refused here only where it is not built or finds no GPU.
    for op in ("single_prefill", "ragged_prefill", "paged_prefill"):
        sm80 = flashband.supports(op, backend="sm80", device="cuda", head_dim=128, page_size=16, custom_mask=True)
        assert sm80 or "custom_mask" not in sm80.reason, sm80.reason
    sm80_decode = flashband.supports("paged_decode", backend="sm80", device="cuda", page_size=16, custom_mask=True)
    assert not sm80_decode
    decode = flashband.supports("paged_decode", backend="cpu", device="cpu", page_size=16, custom_mask=True)
    assert not decode and "custom_mask" in decode.reason
    causal = flashband.supports("ragged_prefill", backend="cpu", device="cpu", causal=True, custom_mask=True)
    assert not causal and "causal" in causal.reason


def test_cuda_graph_buffers_hold_the_mask():
    """FlashInfer's use_cuda_graph mask buffers: plan() writes the packed bits and the byte
    offsets into them and the runs read the bits there, so bits rewritten in place reach the
    next run (a replay) without a plan; a masked plan without them is refused by name."""
    batch, masks, flat = _host_batch(9300)
    bits = np.zeros(32, np.uint8)
    offsets = np.zeros(3, np.int32)
    w = flashband.BatchPrefillWithRaggedKVCacheWrapper(
        np.empty(0, np.uint8), use_cuda_graph=True, qo_indptr_buf=np.zeros(3, np.int32),
        kv_indptr_buf=np.zeros(3, np.int32), custom_mask_buf=bits, mask_indptr_buf=offsets, backend="cpu")
    w.plan(batch.qo_indptr, batch.kv_indptr, 2, 2, 64, q_data_type="float32", custom_mask=flat)
    assert offsets.tolist() == [0, 8, 10]
    assert bits[:8].tolist() == np.packbits(masks[0].ravel(), bitorder="little").tolist()
    out = w.run(batch.q, batch.k, batch.v)
    ref, _ = batch.reference(attention_np, batch.q, batch.k, batch.v, masks=masks)
    assert_out(out, ref, "float32")
    # Rewritten in place, as an engine does between replays: the next run reads the new bits.
    flipped = [m.copy() for m in masks]
    flipped[0][1:] = ~flipped[0][1:]
    bits[:8] = np.packbits(flipped[0].ravel(), bitorder="little")
    out = w.run(batch.q, batch.k, batch.v)
    ref2, _ = batch.reference(attention_np, batch.q, batch.k, batch.v, masks=flipped)
    assert_differs(ref, ref2, what="rewritten mask")
    assert_out(out, ref2, "float32")
    bare = flashband.BatchPrefillWithRaggedKVCacheWrapper(
        np.empty(0, np.uint8), use_cuda_graph=True, qo_indptr_buf=np.zeros(3, np.int32), backend="cpu")
    with pytest.raises(flashband.InvalidArgumentError, match="^custom_mask_buf: must be given"):
        bare.plan(batch.qo_indptr, batch.kv_indptr, 2, 2, 64, q_data_type="float32", custom_mask=flat)
    small = flashband.BatchPrefillWithRaggedKVCacheWrapper(
        np.empty(0, np.uint8), use_cuda_graph=True, custom_mask_buf=np.zeros(9, np.uint8),
        mask_indptr_buf=np.zeros(3, np.int32), backend="cpu")
    with pytest.raises(flashband.InvalidArgumentError, match="^custom_mask_buf: holds 9 bytes, this plan's mask has 10"):
        small.plan(batch.qo_indptr, batch.kv_indptr, 2, 2, 64, q_data_type="float32", custom_mask=flat)


def test_a_plan_without_a_mask_runs_unmasked_again():
    """The mask is the plan's: a later plan without one runs plain attention."""
    batch, masks, flat = _host_batch(9400)
    w = flashband.BatchPrefillWithRaggedKVCacheWrapper(np.empty(0, np.uint8), backend="cpu")
    w.plan(batch.qo_indptr, batch.kv_indptr, 2, 2, 64, q_data_type="float32", custom_mask=flat)
    masked = w.run(batch.q, batch.k, batch.v)
    w.plan(batch.qo_indptr, batch.kv_indptr, 2, 2, 64, q_data_type="float32")
    plain = w.run(batch.q, batch.k, batch.v)
    ref_m, _ = batch.reference(attention_np, batch.q, batch.k, batch.v, masks=masks)
    ref_p, _ = batch.reference(attention_np, batch.q, batch.k, batch.v)
    assert_differs(ref_m, ref_p, what="custom mask")
    assert_out(masked, ref_m, "float32")
    assert_out(plain, ref_p, "float32")
