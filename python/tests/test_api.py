"""The Python layer itself: outputs allocated in the caller's framework or written in place
(no copy), strided views, index arrays of any int type and device, errors that name the
argument and leave outputs untouched, support queries, and the type stubs."""

import ast
import inspect
import math
import pathlib
import re

import numpy as np
import pytest

import flashband
from _cases import Paged, Ragged, rand
from _checks import assert_out
from _envs import DLPackOnly
from _reference import attention_np
from flashband._wrapper import plan_sizes

D = 64


def qkv(env, dtype, qo=6, kv=9, hq=4, hk=2, seed=0):
    rng = np.random.default_rng(seed)
    return (env.array(rand(rng, qo, hq, D), dtype), env.array(rand(rng, kv, hk, D), dtype),
            env.array(rand(rng, kv, hk, D), dtype))


# --- outputs ---------------------------------------------------------------------------------

def test_outputs_allocated_like_q(env, dtype):
    env.require(op="single_prefill", dtype=dtype, head_dim=D, num_qo_heads=4, num_kv_heads=2,
                return_lse=True)
    q, k, v = qkv(env, dtype)
    out, lse = flashband.single_prefill_with_kv_cache(q, k, v, return_lse=True,
                                                      backend=env.backend)
    assert env.is_native(out) and env.is_native(lse)
    assert tuple(out.shape) == tuple(q.shape) and str(out.dtype) == str(q.dtype)
    assert tuple(lse.shape) == (q.shape[0], q.shape[1]) and "float32" in str(lse.dtype)
    out_only = flashband.single_prefill_with_kv_cache(q, k, v, backend=env.backend)
    assert env.is_native(out_only) and not isinstance(out_only, tuple)


def test_given_outputs_are_written_in_place(env, dtype):
    env.require(op="single_prefill", dtype=dtype, head_dim=D, num_qo_heads=4, num_kv_heads=2,
                return_lse=True)
    q, k, v = qkv(env, dtype)
    out = env.nan(tuple(q.shape), dtype)
    lse = env.nan((q.shape[0], q.shape[1]), "float32")
    res_out, res_lse = flashband.single_prefill_with_kv_cache(
        q, k, v, return_lse=True, out=out, lse=lse, backend=env.backend)
    env.sync()
    assert res_out is out and res_lse is lse
    ref, ref_lse = attention_np(env.to64(q), env.to64(k), env.to64(v))
    assert_out(env.to64(out), ref, dtype)  # the caller's buffer holds the result: no copy
    assert np.abs(env.to64(lse) - ref_lse).max() < 1e-2


def test_strided_views_are_not_copied(env, dtype):
    """A head-dim slice of a wider q and an HND view of NHD k/v: only the last dim is unit
    stride. The result must match the dense computation."""
    env.require(op="single_prefill", dtype=dtype, head_dim=D, num_qo_heads=4, num_kv_heads=2,
                kv_layout="HND")
    rng = np.random.default_rng(5)
    q_wide = env.array(rand(rng, 6, 4, 2 * D), dtype)
    q = q_wide[:, :, :D]
    k_nhd, v_nhd = env.array(rand(rng, 9, 2, D), dtype), env.array(rand(rng, 9, 2, D), dtype)
    k_hnd, v_hnd = k_nhd.transpose(1, 0, 2) if env.framework == "numpy" else k_nhd.transpose(0, 1), \
        v_nhd.transpose(1, 0, 2) if env.framework == "numpy" else v_nhd.transpose(0, 1)
    out = flashband.single_prefill_with_kv_cache(q, k_hnd, v_hnd, kv_layout="HND", causal=True,
                                                 backend=env.backend)
    env.sync()
    ref, _ = attention_np(env.to64(q), env.to64(k_nhd), env.to64(v_nhd), causal=True)
    assert_out(env.to64(out), ref, dtype)


def test_readonly_numpy_inputs_are_accepted():
    q, k, v = qkv(_numpy_env(), "float32")
    for a in (q, k, v):
        a.setflags(write=False)
    out = flashband.single_prefill_with_kv_cache(q, k, v, backend="cpu")
    ref, _ = attention_np(q.astype(np.float64), k.astype(np.float64), v.astype(np.float64))
    assert_out(out, ref, "float32")


# --- index arrays ----------------------------------------------------------------------------

@pytest.mark.parametrize("index_dtype", [np.int32, np.int64, np.uint16])
def test_index_arrays_of_any_int_type(index_dtype):
    rng = np.random.default_rng(6)
    batch = Ragged(rng, [3, 4], [5, 6], 2, 2, D)
    w = flashband.BatchPrefillWithRaggedKVCacheWrapper(np.empty(0, np.uint8))
    w.plan(batch.qo_indptr.astype(index_dtype), list(batch.kv_indptr), 2, 2, D,
           q_data_type=np.float32)
    out = w.run(batch.q, batch.k, batch.v)
    ref, _ = batch.reference(attention_np, *(x.astype(np.float64) for x in (batch.q, batch.k, batch.v)))
    assert_out(out, ref, "float32")


def test_index_arrays_that_do_not_fit_int32_are_refused():
    w = flashband.BatchPrefillWithRaggedKVCacheWrapper(np.empty(0, np.uint8))
    with pytest.raises(flashband.InvalidArgumentError, match="kv_indptr"):
        w.plan(np.array([0, 1]), np.array([0, 2**40]), 1, 1, D, q_data_type="float32")
    with pytest.raises(flashband.InvalidArgumentError, match="qo_indptr"):
        w.plan(np.array([0.0, 1.0]), np.array([0, 1]), 1, 1, D, q_data_type="float32")


def test_device_index_arrays(env):
    """torch CUDA index arrays (FlashInfer's usual call) are copied to the host by plan()."""
    if env.device != "cuda":
        pytest.skip("device index arrays need a GPU env")
    test_lse_on_demand_replans(env, "float16")


# --- LSE on demand ---------------------------------------------------------------------------

def test_lse_on_demand_replans(env, dtype):
    """plan() without return_lse, then run with and without it: both work."""
    rng = np.random.default_rng(8)
    batch = Ragged(rng, [3, 0, 5], [4, 2, 9], 4, 2, D)
    env.require(op="ragged_prefill", dtype=dtype, head_dim=D, num_qo_heads=4, num_kv_heads=2,
                causal=True, return_lse=True)
    w = flashband.BatchPrefillWithRaggedKVCacheWrapper(
        env.workspace(flashband.batch_workspace_bytes(3, 8, 4, D, env.device)),
        backend=env.backend)
    w.plan(env.index(batch.qo_indptr), env.index(batch.kv_indptr), 4, 2, D, causal=True,
           q_data_type=dtype)
    q, k, v = (env.array(x, dtype) for x in (batch.q, batch.k, batch.v))
    out, lse = w.run(q, k, v, return_lse=True)
    out2 = w.run(q, k, v)
    env.sync()
    ref, ref_lse = batch.reference(attention_np, env.to64(q), env.to64(k), env.to64(v),
                                   causal=True)
    assert_out(env.to64(out), ref, dtype)
    assert_out(env.to64(out2), ref, dtype)
    assert np.abs(env.to64(lse) - ref_lse).max() < 1e-2
    # A given lse is written, and the result is a tuple only with return_lse (FlashInfer's).
    given = env.array(np.full(lse.shape, np.nan, np.float32), "float32")
    out3 = w.run(q, k, v, lse=given)
    env.sync()
    assert not isinstance(out3, tuple)
    assert_out(env.to64(out3), ref, dtype)
    assert np.abs(env.to64(given) - ref_lse).max() < 1e-2
    single = flashband.single_prefill_with_kv_cache(q[:3], k[:4], v[:4], causal=True,
                                                    backend=env.backend, lse=given[:3])
    assert not isinstance(single, tuple)


# --- CUDA graph mode -------------------------------------------------------------------------

def test_use_cuda_graph_reaches_the_native_plan(monkeypatch):
    """use_cuda_graph=True becomes Options.cuda_graph, the native guard against replaying a
    capture over a plan that launches differently (test_cuda_streams.py replays one on a GPU).
    Host runs are never captured, so on the cpu backend plans of any lengths follow."""
    import flashband._wrapper as wrapper_module
    seen = []
    real = wrapper_module.make_options

    def spy(**kw):
        seen.append(kw.get("cuda_graph"))
        return real(**kw)

    monkeypatch.setattr(wrapper_module, "make_options", spy)
    assert flashband._C.Options(cuda_graph=True).cuda_graph
    rng = np.random.default_rng(5)
    w = flashband.BatchDecodeWithPagedKVCacheWrapper(np.empty(0, np.uint8), use_cuda_graph=True,
                                                     backend="cpu")
    for kv_lens in ([5, 40], [90, 3]):
        batch = Ragged(rng, [1, 1], kv_lens, 4, 2, D)
        paged = Paged(rng, batch, 16)
        w.plan(paged.indptr, paged.indices, paged.last_page_len, 4, 2, D, 16,
               q_data_type="float32")
        out = w.run(batch.q.astype(np.float32),
                    (paged.k_pages.astype(np.float32), paged.v_pages.astype(np.float32)))
        ref, _ = batch.reference(attention_np, batch.q, batch.k, batch.v)
        assert_out(out.astype(np.float64), ref, "float32")
    # The constructor checks names only; the second plan keeps the first one's Options
    # (same settings), which the native plan got with cuda_graph set.
    assert [c for c in seen if c is not None] == [True] and w._options_kept.cuda_graph


def test_plans_take_the_pool_size_from_the_last_run():
    """Without num_pages, a plan after a run() takes the page count of that run's cache (a
    cudnn graph is built for it, so a serving pool keeps one graph), unless its indices do
    not fit there; before any run, the smallest count the indices fit."""
    rng = np.random.default_rng(6)
    batch = Ragged(rng, [1, 1], [20, 40], 4, 2, D)
    paged = Paged(rng, batch, 16, spare_pages=9)  # 2 + 3 pages used of 14
    seen = []

    class Spy:
        def __init__(self, native):
            self.native = native

        def plan(self, *args):
            seen.append(args[4])  # num_pages (indptr, indices, last_page_len, page_size first)
            return self.native.plan(*args)

        def __getattr__(self, name):
            return getattr(self.native, name)

    w = flashband.BatchDecodeWithPagedKVCacheWrapper(np.empty(0, np.uint8), backend="cpu")
    w._native = Spy(w._native)
    cache = (paged.k_pages.astype(np.float32), paged.v_pages.astype(np.float32))
    args = (paged.indptr, paged.indices, paged.last_page_len, 4, 2, D, 16)
    w.plan(*args, q_data_type="float32")
    w.run(batch.q.astype(np.float32), cache)
    w.plan(*args, q_data_type="float32")
    w.plan(*args, q_data_type="float32", num_pages=20)  # given: as given
    far = paged.indices.copy()
    far[0] = 30  # past the last run's cache: the indices decide (run() would refuse them)
    w.plan(paged.indptr, far, paged.last_page_len, 4, 2, D, 16, q_data_type="float32")
    assert seen == [int(paged.indices.max()) + 1, 14, 20, 31]


def test_a_refused_plan_leaves_the_previous_one():
    """A plan() that raises leaves the wrapper's previous plan in use, all of it: a run that
    asks for LSE re-plans with the previous arguments (heads, lengths), not the refused ones."""
    rng = np.random.default_rng(9)
    batch = Ragged(rng, [3, 5], [4, 9], 4, 2, D)
    w = flashband.BatchPrefillWithRaggedKVCacheWrapper(np.empty(0, np.uint8), backend="cpu")
    w.plan(batch.qo_indptr, batch.kv_indptr, 4, 2, D, q_data_type="float32")
    with pytest.raises(flashband.InvalidArgumentError, match="num_qo_heads"):
        w.plan(batch.qo_indptr, batch.kv_indptr, 6, 4, D, q_data_type="float32")  # 6 % 4 != 0
    q, k, v = (x.astype(np.float32) for x in (batch.q, batch.k, batch.v))
    out, lse = w.run(q, k, v, return_lse=True)
    ref, ref_lse = batch.reference(attention_np, batch.q, batch.k, batch.v)
    assert_out(out.astype(np.float64), ref, "float32")
    assert lse.shape == (8, 4) and np.abs(lse - ref_lse).max() < 1e-3


def test_a_plan_that_fails_before_the_native_plan_leaves_the_previous_one(monkeypatch):
    """An error before the native plan (allocating the int workspace) restores the previous
    arguments too: a run that asks for LSE re-plans the previous problem."""
    rng = np.random.default_rng(9)
    batch = Ragged(rng, [3, 5], [4, 9], 4, 2, D)
    w = flashband.BatchPrefillWithRaggedKVCacheWrapper(np.empty(0, np.uint8), backend="cpu")
    w.plan(batch.qo_indptr, batch.kv_indptr, 4, 2, D, q_data_type="float32")

    def out_of_memory():
        raise MemoryError("int workspace")

    monkeypatch.setattr(w, "_plan_workspace", out_of_memory)
    with pytest.raises(MemoryError):
        w.plan(batch.qo_indptr, batch.kv_indptr, 8, 4, D, q_data_type="float32")
    monkeypatch.undo()
    q, k, v = (x.astype(np.float32) for x in (batch.q, batch.k, batch.v))
    out, lse = w.run(q, k, v, return_lse=True)
    ref, ref_lse = batch.reference(attention_np, batch.q, batch.k, batch.v)
    assert_out(out.astype(np.float64), ref, "float32")
    assert lse.shape == (8, 4) and np.abs(lse - ref_lse).max() < 1e-3


def test_the_int_workspace_reaches_the_native_plan():
    """reset_workspace_buffer's int_workspace_buffer holds the plans' arrays (plan_data): one
    that overlaps the float workspace is refused by name, one beside it plans and runs."""
    rng = np.random.default_rng(10)
    batch = Ragged(rng, [3, 5], [4, 9], 4, 2, D)
    buf = np.zeros(1 << 12, np.uint8)
    w = flashband.BatchPrefillWithRaggedKVCacheWrapper(buf, backend="cpu")
    w.reset_workspace_buffer(buf, buf[1024:])
    with pytest.raises(flashband.InvalidArgumentError, match="int_workspace_buffer: overlaps"):
        w.plan(batch.qo_indptr, batch.kv_indptr, 4, 2, D, q_data_type="float32")
    w.reset_workspace_buffer(buf[:1024], buf[1024:])
    w.plan(batch.qo_indptr, batch.kv_indptr, 4, 2, D, q_data_type="float32")
    q, k, v = (x.astype(np.float32) for x in (batch.q, batch.k, batch.v))
    ref, _ = batch.reference(attention_np, batch.q, batch.k, batch.v)
    assert_out(w.run(q, k, v).astype(np.float64), ref, "float32")


def test_plan_sizes_and_plan_bytes():
    """What a wrapper sizes its int workspace by: the plan's batch, query tokens, page
    indices and longest request in pages; malformed arrays (the native plan refuses them)
    give zeros rather than an exception here."""
    i32 = lambda *x: np.array(x, np.int32)
    assert plan_sizes(i32(0, 3, 8), 128) == (2, 8, 128, 0, 0)
    assert plan_sizes(i32(0, 3, 8), 128, i32(0, 2, 7)) == (2, 8, 128, 7, 5)
    assert plan_sizes(None, 64, i32(0, 1, 4)) == (2, 2, 64, 4, 3)  # decode
    assert plan_sizes(i32(), 64) == (0, 0, 64, 0, 0)
    assert plan_sizes(i32(0, 3, 8), 64, i32(0)) == (2, 8, 64, 0, 0)
    assert flashband.batch_plan_bytes(4, 100, 8, 128, "cpu") == 0
    if set(flashband.built_backends()) & {"sm80", "sm90", "cudnn"}:
        small = flashband.batch_plan_bytes(4, 100, 8, 128, "cuda")
        paged = flashband.batch_plan_bytes(4, 100, 8, 128, "cuda", max_page_indices=1 << 16)
        assert 0 < small < paged
        # Page indices alone take 4 bytes each; cuDNN's table bound is narrower per request.
        assert paged - small >= 4 << 16
        narrow = flashband.batch_plan_bytes(4, 100, 8, 128, "cuda", 1 << 16, 64)
        assert narrow < paged if "cudnn" in flashband.built_backends() else narrow == paged
        assert paged < flashband.batch_workspace_bytes(4, 100, 8, 128, "cuda", 1 << 16)


# --- errors ----------------------------------------------------------------------------------

def _numpy_env():
    from _envs import Env
    return Env("numpy", "cpu", "cpu", ("float32",))


def _single(**kw):
    q, k, v = qkv(_numpy_env(), "float32")
    kw.setdefault("backend", "cpu")
    return flashband.single_prefill_with_kv_cache(q, k, v, **kw)


@pytest.mark.parametrize("kwargs,cls,name", [
    (dict(window_left=-2), flashband.InvalidArgumentError, "window_left"),
    (dict(logits_soft_cap=-1.0), flashband.InvalidArgumentError, "logits_soft_cap"),
    (dict(logits_soft_cap=math.nan), flashband.InvalidArgumentError, "logits_soft_cap"),
    (dict(sm_scale=0.0), flashband.InvalidArgumentError, "sm_scale"),
    (dict(sm_scale=math.inf), flashband.InvalidArgumentError, "sm_scale"),
    (dict(kv_layout="NDH"), flashband.InvalidArgumentError, "kv_layout"),
    (dict(backend="fa9"), flashband.FlashbandError, "fa9"),
    (dict(custom_mask=np.ones((5, 9), bool)), flashband.InvalidArgumentError, "custom_mask"),
    (dict(pos_encoding_mode="ROPE_LLAMA"), flashband.UnsupportedError, "pos_encoding_mode"),
    (dict(use_fp16_qk_reduction=True), flashband.UnsupportedError, "use_fp16_qk_reduction"),
    (dict(rope_theta=1e4), flashband.UnsupportedError, "rope_theta"),
])
def test_bad_options_name_the_argument(kwargs, cls, name):
    with pytest.raises(cls, match=re.escape(name)):
        _single(**kwargs)


def test_error_classes():
    assert issubclass(flashband.InvalidArgumentError, ValueError)
    assert issubclass(flashband.UnsupportedError, NotImplementedError)
    assert issubclass(flashband.NotBuiltError, flashband.UnsupportedError)
    for cls in (flashband.InvalidArgumentError, flashband.UnsupportedError,
                flashband.NotBuiltError, flashband.CudaError, flashband.InternalError):
        assert issubclass(cls, flashband.FlashbandError) and cls.code


def test_bad_tensors_name_the_argument_and_write_nothing():
    env = _numpy_env()
    q, k, v = qkv(env, "float32")
    out = np.full(q.shape, np.nan, np.float32)
    cases = [
        (dict(q=q.astype(np.float64)), r"\bq\b"),
        (dict(k=k.astype(np.float16)), r"\bk\b"),
        (dict(v=v[:, :1]), r"\bv\b"),                 # head count differs from k
        (dict(q=rand(np.random.default_rng(0), 6, 3, D)), "num_qo_heads"),  # 3 % 2 != 0
        (dict(out=q), "out"),                          # out aliases q
        (dict(out=np.empty((6, 4, D), np.float16)), "out"),
        (dict(q=np.asfortranarray(q)), r"\bq\b"),      # last dim not contiguous
    ]
    for change, pattern in cases:
        args = dict(q=q, k=k, v=v, out=out)
        args.update(change)
        with pytest.raises(flashband.InvalidArgumentError, match=pattern):
            flashband.single_prefill_with_kv_cache(args["q"], args["k"], args["v"],
                                                   out=args["out"], backend="cpu")
        assert np.isnan(out).all(), f"{change}: out was written although the call failed"


def test_bad_plans_name_the_argument():
    ws = np.empty(0, np.uint8)
    w = flashband.BatchPrefillWithRaggedKVCacheWrapper(ws)
    bad = [
        (([1, 2], [0, 2]), "qo_indptr"),            # does not start at 0
        (([0, 2], [0, 3, 2]), "kv_indptr"),         # length differs from qo_indptr
        (([0, 2, 3], [0, 3, 2]), "kv_indptr"),      # decreases
        (([], []), "qo_indptr"),                    # no entries at all
    ]
    for (qo, kv), name in bad:
        with pytest.raises(flashband.InvalidArgumentError, match=name):
            w.plan(np.array(qo), np.array(kv), 2, 2, D, q_data_type="float32")
    with pytest.raises(flashband.InvalidArgumentError, match="q_data_type"):
        w.plan(np.array([0, 1]), np.array([0, 1]), 2, 2, D, q_data_type="int8")
    with pytest.raises(flashband.UnsupportedError, match="head_dim_vo"):
        w.plan(np.array([0, 1]), np.array([0, 1]), 2, 2, D, head_dim_vo=32)


def test_decode_data_type_fills_what_is_not_given():
    """data_type, FlashInfer's older name for q_data_type and kv_data_type together: as in
    FlashInfer it fills either where not given (SGLang passes it as the KV cache's dtype
    beside q_data_type); a kv dtype that then differs from q's is refused by name."""
    rng = np.random.default_rng(8)
    batch = Ragged(rng, [1, 1], [20, 40], 4, 2, D)
    paged = Paged(rng, batch, 16)
    w = flashband.BatchDecodeWithPagedKVCacheWrapper(np.empty(0, np.uint8), backend="cpu")
    args = (paged.indptr, paged.indices, paged.last_page_len, 4, 2, D, 16)
    cache = (paged.k_pages.astype(np.float32), paged.v_pages.astype(np.float32))
    ref, _ = batch.reference(attention_np, batch.q, batch.k, batch.v)
    for kw in (dict(data_type="float32"), dict(data_type=np.float32, q_data_type="float32"),
               dict(data_type="float32", kv_data_type=np.float32),
               dict(data_type="float16", q_data_type="float32", kv_data_type="float32")):
        w.plan(*args, **kw)
        assert_out(w.run(batch.q.astype(np.float32), cache).astype(np.float64), ref, "float32")
    for kw in (dict(data_type="float32", q_data_type="float16"),
               dict(data_type="float16", kv_data_type="float32")):
        with pytest.raises(flashband.UnsupportedError, match="^kv_data_type: float32 differs"):
            w.plan(*args, **kw)
    w.plan(*args)  # q_data_type's default stays float16
    with pytest.raises(flashband.InvalidArgumentError, match="float16"):
        w.run(batch.q.astype(np.float32), cache)


def test_flashinfer_index_buffers_are_written_and_bound_the_plan():
    """FlashInfer's CUDA-graph index buffers, given as FlashInfer's positional arguments:
    under use_cuda_graph each plan() writes its arrays into them, their length fixes the
    batch size, and arrays longer than a buffer are refused by its name. Without
    use_cuda_graph they are neither written nor checked, as in FlashInfer (TensorRT-LLM
    hands in buffers it shares with other wrappers and sizes them otherwise). Custom-mask
    buffers and jit_args are refused."""
    rng = np.random.default_rng(9)
    batch = Ragged(rng, [1, 1, 1], [20, 40, 3], 4, 2, D)
    paged = Paged(rng, batch, 16)
    cache = (paged.k_pages.astype(np.float32), paged.v_pages.astype(np.float32))
    ref, _ = batch.reference(attention_np, batch.q, batch.k, batch.v)
    ws = np.empty(0, np.uint8)
    many = np.concatenate([paged.indices, paged.indices])
    for graph in (False, True):
        bufs = [np.full(n, -7, np.int32) for n in (4, 8, 3)]  # indptr, indices, last_page_len
        w = flashband.BatchDecodeWithPagedKVCacheWrapper(ws, "NHD", graph, graph, *bufs, "cpu")
        assert w.use_tensor_cores is graph  # FlashInfer's hint, read back
        assert w._fixed_batch_size == (3 if graph else 0)
        if graph:
            assert w._paged_kv_indices_buf is bufs[1]
        else:  # FlashInfer's eager plan points it at its own copy: none here, so no attribute
            with pytest.raises(AttributeError, match="use_cuda_graph"):
                w._paged_kv_indices_buf
        w.plan(paged.indptr, paged.indices, paged.last_page_len, 4, 2, D, 16, q_data_type="float32")
        assert_out(w.run(batch.q.astype(np.float32), cache).astype(np.float64), ref, "float32")
        two = (paged.indptr[:3], paged.indices[:paged.indptr[2]], paged.last_page_len[:2])
        if not graph:
            assert all((b == -7).all() for b in bufs)
            w.plan(*two, 4, 2, D, 16, q_data_type="float32")
            w.plan(np.array([0, 2, 10, 12], np.int32), many, paged.last_page_len, 4, 2, D, 16,
                   q_data_type="float32")
            assert all((b == -7).all() for b in bufs)
            continue
        assert np.array_equal(bufs[0], paged.indptr)
        assert np.array_equal(bufs[1][:len(paged.indices)], paged.indices)
        assert (bufs[1][len(paged.indices):] == -7).all()
        assert np.array_equal(bufs[2], paged.last_page_len)
        with pytest.raises(flashband.InvalidArgumentError, match="batch size: 2"):
            w.plan(*two, 4, 2, D, 16, q_data_type="float32")
        with pytest.raises(flashband.InvalidArgumentError, match="paged_kv_indices_buffer: holds 8"):
            w.plan(np.array([0, 2, 10, 12], np.int32), many, paged.last_page_len, 4, 2, D, 16,
                   q_data_type="float32")
    with pytest.raises(flashband.InvalidArgumentError, match="paged_kv_indices_buffer"):
        flashband.BatchDecodeWithPagedKVCacheWrapper(ws, use_cuda_graph=True,
                                                     paged_kv_indices_buffer=np.zeros(8, np.int64))
    with pytest.raises(flashband.UnsupportedError, match="jit_args"):
        flashband.BatchDecodeWithPagedKVCacheWrapper(ws, jit_args=["x"])

    # The prefill wrappers: qo_indptr_buf fixes the batch under use_cuda_graph.
    qo_buf, kv_buf = np.zeros(4, np.int32), np.zeros(4, np.int32)
    w = flashband.BatchPrefillWithRaggedKVCacheWrapper(ws, "NHD", True, qo_buf, kv_buf, backend="cpu")
    w.plan(batch.qo_indptr, batch.kv_indptr, 4, 2, D, q_data_type="float32")
    assert np.array_equal(qo_buf, batch.qo_indptr) and np.array_equal(kv_buf, batch.kv_indptr)
    assert w._qo_indptr_buf is qo_buf and w._kv_indptr_buf is kv_buf
    with pytest.raises(flashband.InvalidArgumentError, match="batch size: 2"):
        w.plan(batch.qo_indptr[:3], batch.kv_indptr[:3], 4, 2, D, q_data_type="float32")
    bufs = [np.zeros(n, np.int32) for n in (4, 4, 8, 3)]
    w = flashband.BatchPrefillWithPagedKVCacheWrapper(ws, "NHD", True, *bufs, backend="cpu")
    w.plan(batch.qo_indptr, paged.indptr, paged.indices, paged.last_page_len, 4, 2, D, 16,
           q_data_type="float32")
    out = w.run(batch.q.astype(np.float32), cache)
    assert_out(out.astype(np.float64), ref, "float32")
    assert np.array_equal(bufs[2][:len(paged.indices)], paged.indices)
    # FlashInfer's mask buffers: under use_cuda_graph a uint8 and an int32 array (test_custom_mask.py).
    for name, wrong in (("custom_mask_buf", np.zeros(4, np.int32)), ("mask_indptr_buf", np.zeros(4, np.uint8))):
        with pytest.raises(flashband.InvalidArgumentError, match=name):
            flashband.BatchPrefillWithPagedKVCacheWrapper(ws, use_cuda_graph=True, **{name: wrong})


def test_page_indices_past_the_requests_are_not_read():
    """Engines pass page-index arrays longer than indptr[-1] (SGLang: a buffer with an
    uninitialised tail, or under CUDA graphs the wrapper's own _paged_kv_indices_buf after
    writing its first entries). Only the first indptr[-1] entries are pages: the tail is
    neither checked against the cache nor taken for the page count."""
    rng = np.random.default_rng(15)
    batch = Ragged(rng, [1, 1, 1], [20, 40, 3], 4, 2, D)
    paged = Paged(rng, batch, 16)
    cache = (paged.k_pages.astype(np.float32), paged.v_pages.astype(np.float32))
    ref, _ = batch.reference(attention_np, batch.q, batch.k, batch.v)
    q = batch.q.astype(np.float32)
    used = len(paged.indices)
    long = np.concatenate([paged.indices, np.array([2**31 - 1, -5, 1 << 30], np.int32)])
    ws = np.empty(0, np.uint8)
    w = flashband.BatchDecodeWithPagedKVCacheWrapper(ws, backend="cpu")
    w.plan(paged.indptr, long, paged.last_page_len, 4, 2, D, 16, q_data_type="float32")
    assert w._plan_args[4] == int(paged.indices.max()) + 1  # the pages used, not the tail
    assert_out(w.run(q, cache).astype(np.float64), ref, "float32")
    prefill = flashband.BatchPrefillWithPagedKVCacheWrapper(ws, backend="cpu")
    prefill.plan(batch.qo_indptr, paged.indptr, long, paged.last_page_len, 4, 2, D, 16,
                 q_data_type="float32")
    assert_out(prefill.run(q, cache).astype(np.float64), ref, "float32")
    # SGLang under CUDA graphs: the indices are the wrapper's own buffer.
    bufs = [np.zeros(4, np.int32), np.full(used + 50, -1, np.int32), np.zeros(3, np.int32)]
    g = flashband.BatchDecodeWithPagedKVCacheWrapper(ws, "NHD", True, False, *bufs, "cpu")
    g._paged_kv_indices_buf[:used] = paged.indices
    g.begin_forward(paged.indptr, g._paged_kv_indices_buf, paged.last_page_len, 4, 2, D, 16,
                    q_data_type="float32")
    assert_out(g.run(q, cache).astype(np.float64), ref, "float32")
    assert (bufs[1][used:] == -1).all()
    with pytest.raises(flashband.InvalidArgumentError, match="indices: has 2 entries"):
        w.plan(paged.indptr, long[:2], paged.last_page_len, 4, 2, D, 16, q_data_type="float32")


def test_flashinfer_backend_names_and_neutral_scales():
    """FlashInfer's backend names for kernels flashband has (fa2: sm80's kind, fa3: sm90's)
    are taken; its Blackwell-only names are refused naming the backends there are. fp8
    scales of 1.0 (vLLM passes them for fp16/bf16 caches on every run) scale nothing and
    are taken; other scales are refused by name. SGLang's multi-item scoring arguments are
    taken at their neutral values."""
    ws = np.empty(0, np.uint8)
    for given, name in (("fa2", "sm80"), ("fa3", "sm90"), ("cpu", "cpu")):
        for cls in (flashband.BatchDecodeWithPagedKVCacheWrapper,
                    flashband.BatchPrefillWithPagedKVCacheWrapper,
                    flashband.BatchPrefillWithRaggedKVCacheWrapper):
            assert cls(ws, backend=given).backend == name
        assert flashband.supports("paged_decode", backend=given, device="cpu").reason == \
            flashband.supports("paged_decode", backend=name, device="cpu").reason
    with pytest.raises(flashband.InvalidArgumentError, match="backend"):
        flashband.BatchDecodeWithPagedKVCacheWrapper(ws, backend="trtllm-gen")

    rng = np.random.default_rng(16)
    batch = Ragged(rng, [1, 1], [20, 40], 4, 2, D)
    paged = Paged(rng, batch, 16)
    cache = (paged.k_pages.astype(np.float32), paged.v_pages.astype(np.float32))
    ref, _ = batch.reference(attention_np, batch.q, batch.k, batch.v)
    q = batch.q.astype(np.float32)
    w = flashband.BatchDecodeWithPagedKVCacheWrapper(ws, backend="cpu")
    w.plan(paged.indptr, paged.indices, paged.last_page_len, 4, 2, D, 16, q_data_type="float32")
    for one in (1.0, 1, np.float32(1.0), np.ones(1, np.float32)):
        out = w.run(q, cache, q_scale=one, k_scale=one, v_scale=one)
        assert_out(out.astype(np.float64), ref, "float32")
    for name in ("q_scale", "k_scale", "v_scale"):
        for scale in (0.5, np.ones(2, np.float32), "1.0"):
            with pytest.raises(flashband.UnsupportedError, match=f"^{name}"):
                w.run(q, cache, **{name: scale})
    prefill = flashband.BatchPrefillWithPagedKVCacheWrapper(ws, backend="cpu")
    neutral = dict(prefix_len_ptr=None, token_pos_in_items_ptr=None, token_pos_in_items_len=0,
                   max_item_len_ptr=None)
    prefill.plan(batch.qo_indptr, paged.indptr, paged.indices, paged.last_page_len, 4, 2, D, 16,
                 q_data_type="float32", seq_lens_q=None, max_token_per_sequence=None,
                 max_sequence_kv=None, **neutral)
    assert_out(prefill.run(q, cache, k_scale=1.0, v_scale=1.0).astype(np.float64), ref, "float32")
    ragged = flashband.BatchPrefillWithRaggedKVCacheWrapper(ws, backend="cpu")
    ragged.plan(batch.qo_indptr, batch.kv_indptr, 4, 2, D, q_data_type="float32", **neutral)
    for kw in (dict(token_pos_in_items_len=3), dict(prefix_len_ptr=np.zeros(2, np.int32))):
        with pytest.raises(flashband.UnsupportedError, match=next(iter(kw))):
            ragged.plan(batch.qo_indptr, batch.kv_indptr, 4, 2, D, q_data_type="float32", **kw)
    for kw in (dict(max_sequence_kv=64), dict(seq_lens_q=np.ones(2, np.int32))):
        with pytest.raises(flashband.UnsupportedError, match=next(iter(kw))):
            prefill.plan(batch.qo_indptr, paged.indptr, paged.indices, paged.last_page_len,
                         4, 2, D, 16, q_data_type="float32", **kw)


def test_forward_takes_the_settings_at_run_time():
    """FlashInfer's deprecated forward()/forward_return_lse() (SGLang's calls) pass causal,
    window_left, the soft cap and sm_scale with each run, replacing the plan's: a forward
    with other settings re-plans and computes them; one whose settings compute the same
    (sm_scale equal to the default in float32, a soft cap of 0) keeps the plan, so it can
    run under a CUDA-graph capture. The planned settings read back as FlashInfer's
    attributes (vLLM asserts them)."""
    rng = np.random.default_rng(17)
    batch = Ragged(rng, [5, 7], [20, 40], 4, 2, D)
    paged = Paged(rng, batch, 16)
    cache = (paged.k_pages.astype(np.float32), paged.v_pages.astype(np.float32))
    q = batch.q.astype(np.float32)
    ws = np.empty(0, np.uint8)
    ragged = flashband.BatchPrefillWithRaggedKVCacheWrapper(ws, backend="cpu")
    ragged.begin_forward(batch.qo_indptr, batch.kv_indptr, 4, 2, D, q_data_type="float32")
    assert (ragged._causal, ragged._window_left, ragged._logits_soft_cap, ragged._sm_scale) == \
        (False, -1, 0.0, None)
    k, v = batch.k.astype(np.float32), batch.v.astype(np.float32)
    for kw in (dict(causal=True), dict(causal=True, window_left=3, sm_scale=0.3),
               dict(logits_soft_cap=2.0), dict()):
        ref, ref_lse = batch.reference(attention_np, batch.q, batch.k, batch.v, **kw)
        assert_out(ragged.forward(q, k, v, **kw).astype(np.float64), ref, "float32")
        out, lse = ragged.forward_return_lse(q, k, v, **kw)
        assert_out(out.astype(np.float64), ref, "float32")
        assert np.abs(lse - ref_lse).max() < 1e-3
    assert ragged._causal is False and ragged._logits_soft_cap == 0.0
    ragged.forward(q, k, v, causal=True, sm_scale=0.25)
    assert (ragged._causal, ragged._sm_scale) == (True, 0.25)
    ragged.end_forward()
    with pytest.raises(AttributeError):
        ragged._sm_scale = 0.5
    with pytest.raises(flashband.UnsupportedError, match="rope_theta"):
        ragged.forward(q, k, v, rope_theta=1e4)

    prefill = flashband.BatchPrefillWithPagedKVCacheWrapper(ws, backend="cpu")
    prefill.plan(batch.qo_indptr, paged.indptr, paged.indices, paged.last_page_len, 4, 2, D, 16,
                 q_data_type="float32")
    ref, _ = batch.reference(attention_np, batch.q, batch.k, batch.v, causal=True, window_left=9)
    out = prefill.forward(q, cache, causal=True, window_left=9, k_scale=1.0, v_scale=1.0)
    assert_out(out.astype(np.float64), ref, "float32")
    with pytest.raises(flashband.UnsupportedError, match="k_scale"):
        prefill.forward(q, cache, k_scale=2.0)
    assert prefill._causal and prefill._window_left == 9  # refused before its settings re-planned

    one = Ragged(rng, [1, 1], [20, 40], 4, 2, D)
    pages = Paged(rng, one, 16)
    decode = flashband.BatchDecodeWithPagedKVCacheWrapper(ws, backend="cpu")
    decode.plan(pages.indptr, pages.indices, pages.last_page_len, 4, 2, D, 16, q_data_type="float32")
    planned = decode._plan_args
    calls = []
    decode._plan_now = lambda lse, f=decode._plan_now: (calls.append(lse), f(lse))[1]
    ref, _ = one.reference(attention_np, one.q, one.k, one.v)
    dcache = (pages.k_pages.astype(np.float32), pages.v_pages.astype(np.float32))
    out = decode.forward(one.q.astype(np.float32), dcache, sm_scale=D ** -0.5, logits_soft_cap=0.0)
    assert_out(out.astype(np.float64), ref, "float32")
    assert calls == [] and decode._plan_args is planned and decode._sm_scale is None
    ref, _ = one.reference(attention_np, one.q, one.k, one.v, sm_scale=0.2, logits_soft_cap=3.0)
    out = decode.forward(one.q.astype(np.float32), dcache, sm_scale=0.2, logits_soft_cap=3.0)
    assert_out(out.astype(np.float64), ref, "float32")
    assert calls == [False] and decode._logits_soft_cap == 3.0


@pytest.mark.parametrize("layout", ["NHD", "HND"])
def test_page_size_one_caches_without_the_page_axis(layout):
    """FlashInfer reads a cache without its page axis as pages of one token (SGLang passes
    its [slots, Hk, D] buffers so): a (k, v) pair and a stacked [slots, 2, ...] cache."""
    rng = np.random.default_rng(18)
    batch = Ragged(rng, [3, 1], [20, 7], 4, 2, D)
    paged = Paged(rng, batch, 1)
    k = Paged.layout(paged.k_pages, layout)[:, :, :, :]
    v = Paged.layout(paged.v_pages, layout)
    squeeze = (lambda x: x[:, 0]) if layout == "NHD" else (lambda x: x[:, :, 0])
    ref, _ = batch.reference(attention_np, batch.q, batch.k, batch.v)
    w = flashband.BatchPrefillWithPagedKVCacheWrapper(np.empty(0, np.uint8), layout, backend="cpu")
    w.plan(batch.qo_indptr, paged.indptr, paged.indices, paged.last_page_len, 4, 2, D, 1,
           q_data_type="float32")
    q = batch.q.astype(np.float32)
    assert_out(w.run(q, (squeeze(k), squeeze(v))).astype(np.float64), ref, "float32")
    stacked = np.stack([squeeze(k), squeeze(v)], axis=1)
    assert_out(w.run(q, stacked).astype(np.float64), ref, "float32")
    with pytest.raises(flashband.InvalidArgumentError):
        w.run(q, (squeeze(k)[:, 0], squeeze(v)[:, 0]))  # two axes short: not a cache
    w16 = flashband.BatchPrefillWithPagedKVCacheWrapper(np.empty(0, np.uint8), layout, backend="cpu")
    w16.plan(batch.qo_indptr, np.array([0, 1, 2], np.int32), np.array([0, 1], np.int32),
             np.array([16, 7], np.int32), 4, 2, D, 16, q_data_type="float32")
    with pytest.raises(flashband.InvalidArgumentError):  # pages of one token, planned as 16
        w16.run(q, (squeeze(k), squeeze(v)))


def test_decode_with_several_queries_per_request():
    """q_len_per_req (speculative decoding): each request's last q_len_per_req tokens query
    its pages causally, bottom-right aligned; back to one query, the decode plan returns.
    Under use_cuda_graph the first plan fixes the value; a refused plan keeps the previous
    one (and its kind)."""
    rng = np.random.default_rng(10)
    batch = Ragged(rng, [3, 3, 3], [20, 40, 3], 4, 2, D)
    paged = Paged(rng, batch, 16)
    cache = (paged.k_pages.astype(np.float32), paged.v_pages.astype(np.float32))
    args = (paged.indptr, paged.indices, paged.last_page_len, 4, 2, D, 16)
    q = batch.q.astype(np.float32)
    ref, _ = batch.reference(attention_np, batch.q, batch.k, batch.v, causal=True)
    w = flashband.BatchDecodeWithPagedKVCacheWrapper(np.empty(0, np.uint8), backend="cpu")
    w.plan(*args, q_data_type="float32", q_len_per_req=3)
    assert_out(w.run(q, cache).astype(np.float64), ref, "float32")
    last_rows = q[2::3]  # one query per request: the last token's
    w.plan(*args, q_data_type="float32")
    assert_out(w.run(last_rows, cache).astype(np.float64), ref[2::3], "float32")
    with pytest.raises(flashband.InvalidArgumentError, match="^last_page_len: has 3 entries"):
        w.plan(np.array([0, 9], np.int32), *args[1:], q_data_type="float32", q_len_per_req=3)
    assert_out(w.run(last_rows, cache).astype(np.float64), ref[2::3], "float32")  # kept
    with pytest.raises(flashband.InvalidArgumentError, match="q_len_per_req"):
        w.plan(*args, q_data_type="float32", q_len_per_req=0)
    g = flashband.BatchDecodeWithPagedKVCacheWrapper(np.empty(0, np.uint8), use_cuda_graph=True,
                                                     backend="cpu")
    g.plan(*args, q_data_type="float32", q_len_per_req=3)
    with pytest.raises(flashband.InvalidArgumentError, match="q_len_per_req: got 1"):
        g.plan(*args, q_data_type="float32")
    assert_out(g.run(q, cache).astype(np.float64), ref, "float32")


def test_flashinfer_options_at_their_neutral_values_are_taken():
    """Engines pass FlashInfer's fixed_split_size, o_data_type and run()'s window_left,
    enable_pdl at neutral values: taken (enable_pdl, a launch hint, at any value;
    disable_split_kv at either, honoured). Other values, and inputs flashband has no use
    for (seq_lens, block_tables), are refused by name; window_right and sinks are taken
    (test_window_right.py, test_sinks.py)."""
    rng = np.random.default_rng(12)
    batch = Ragged(rng, [1, 1], [20, 40], 4, 2, D)
    paged = Paged(rng, batch, 16)
    cache = (paged.k_pages.astype(np.float32), paged.v_pages.astype(np.float32))
    ref, _ = batch.reference(attention_np, batch.q, batch.k, batch.v, window_left=7)
    w = flashband.BatchDecodeWithPagedKVCacheWrapper(np.empty(0, np.uint8), backend="cpu")
    args = (paged.indptr, paged.indices, paged.last_page_len, 4, 2, D, 16)
    w.plan(*args, q_data_type="float32", o_data_type=np.float32, fixed_split_size=-1,
           disable_split_kv=False, window_right=0, window_left=7)
    q = batch.q.astype(np.float32)
    for kw in (dict(), dict(window_left=7, enable_pdl=True), dict(enable_pdl=False)):
        assert_out(w.run(q, cache, **kw).astype(np.float64), ref, "float32")
    with pytest.raises(flashband.UnsupportedError, match="window_left: run.. got 3"):
        w.run(q, cache, window_left=3)
    with pytest.raises(flashband.InvalidArgumentError, match="sinks"):
        w.run(q, cache, sinks=np.zeros(3, np.float32))  # one per query head: 4
    refused = [dict(o_data_type="float16"), dict(fixed_split_size=8),
               dict(seq_lens=np.array([20, 40], np.int32)),
               dict(block_tables=np.zeros((2, 3), np.int32))]
    for kw in refused:
        with pytest.raises(flashband.UnsupportedError, match=next(iter(kw))):
            w.plan(*args, q_data_type="float32", **kw)
    assert_out(w.run(q, cache).astype(np.float64), ref, "float32")  # the plan before stays
    prefill = flashband.BatchPrefillWithPagedKVCacheWrapper(np.empty(0, np.uint8), backend="cpu")
    prefill.plan(batch.qo_indptr, *args[:3], 4, 2, D, 16, q_data_type="float32",
                 window_left=7, o_data_type="float32", fixed_split_size=None, disable_split_kv=False)
    assert_out(prefill.run(q, cache, window_left=7, enable_pdl=True).astype(np.float64), ref, "float32")
    for kw in (dict(fixed_split_size=4), dict(seq_lens=np.array([20, 40], np.int32))):
        with pytest.raises(flashband.UnsupportedError, match=next(iter(kw))):
            prefill.plan(batch.qo_indptr, *args[:3], 4, 2, D, 16, q_data_type="float32", **kw)
    # disable_split_kv is honoured (the cpu backend never splits); the option reaches C++.
    prefill.plan(batch.qo_indptr, *args[:3], 4, 2, D, 16, q_data_type="float32", window_left=7,
                 disable_split_kv=True)
    assert_out(prefill.run(q, cache).astype(np.float64), ref, "float32")
    assert "disable_split_kv=True" in repr(flashband._C.ProblemDesc(disable_split_kv=True))
    assert flashband._C.Options(disable_split_kv=True).disable_split_kv


def test_plans_keep_copies_of_host_index_arrays():
    """Engines rewrite their host index buffers every step: a plan keeps its own copies, so
    a run that re-plans (LSE asked otherwise than planned) still computes the planned
    problem."""
    rng = np.random.default_rng(13)
    batch = Ragged(rng, [1, 1], [20, 40], 4, 2, D)
    paged = Paged(rng, batch, 16)
    cache = (paged.k_pages.astype(np.float32), paged.v_pages.astype(np.float32))
    ref, ref_lse = batch.reference(attention_np, batch.q, batch.k, batch.v)
    indptr, indices, last = paged.indptr.copy(), paged.indices.copy(), paged.last_page_len.copy()
    w = flashband.BatchDecodeWithPagedKVCacheWrapper(np.empty(0, np.uint8), backend="cpu")
    w.plan(indptr, indices, last, 4, 2, D, 16, q_data_type="float32")
    indices[:] = indices[::-1]
    last[:] = 1
    out, lse = w.run(batch.q.astype(np.float32), cache, return_lse=True)  # re-plans for LSE
    assert_out(out.astype(np.float64), ref, "float32")
    assert np.abs(lse - ref_lse).max() < 1e-3


def test_flashinfer_aliases_and_index_buffer_checks():
    rng = np.random.default_rng(14)
    batch = Ragged(rng, [1, 1], [20, 40], 4, 2, D)
    paged = Paged(rng, batch, 16)
    cache = (paged.k_pages.astype(np.float32), paged.v_pages.astype(np.float32))
    ref, ref_lse = batch.reference(attention_np, batch.q, batch.k, batch.v)
    ws = np.empty(0, np.uint8)
    w = flashband.BatchDecodeWithPagedKVCacheWrapper(ws, use_cuda_graph=True, backend="cpu")
    assert w.is_cuda_graph_enabled
    w.begin_forward(paged.indptr, paged.indices, paged.last_page_len, 4, 2, D, 16,
                    q_data_type="float32")
    out, lse = w.run_return_lse(batch.q.astype(np.float32), cache)
    assert_out(out.astype(np.float64), ref, "float32")
    assert np.abs(lse - ref_lse).max() < 1e-3
    with pytest.raises(flashband.InvalidArgumentError, match="paged_kv_indices_buffer: must be contiguous"):
        flashband.BatchDecodeWithPagedKVCacheWrapper(ws, use_cuda_graph=True,
                                                     paged_kv_indices_buffer=np.zeros(16, np.int32)[::2])
    with pytest.raises(flashband.InvalidArgumentError, match="different batch sizes"):
        flashband.BatchDecodeWithPagedKVCacheWrapper(ws, "NHD", True, False, np.zeros(4, np.int32),
                                                     np.zeros(8, np.int32), np.zeros(2, np.int32))
    with pytest.raises(flashband.InvalidArgumentError, match="qo_indptr_buf: a list"):
        flashband.BatchPrefillWithRaggedKVCacheWrapper(ws, use_cuda_graph=True, qo_indptr_buf=[0, 1])
    with pytest.raises(flashband.UnsupportedError, match="jit_kwargs"):
        flashband.BatchPrefillWithPagedKVCacheWrapper(ws, jit_kwargs={"x": 1})
    # q_len_per_req > 1: errors name the decode's arguments, not the prefill's behind it.
    w = flashband.BatchDecodeWithPagedKVCacheWrapper(ws, backend="cpu")
    w.plan(paged.indptr, paged.indices, paged.last_page_len, 4, 2, D, 16, q_data_type="float32",
           q_len_per_req=3)
    with pytest.raises(flashband.InvalidArgumentError, match=r"^q: 2 tokens, but batch x q_len_per_req is 6$"):
        w.run(batch.q.astype(np.float32), cache)  # 2 rows where the plan needs 6


def test_run_before_plan():
    w = flashband.BatchPrefillWithRaggedKVCacheWrapper(np.empty(0, np.uint8))
    q, k, v = qkv(_numpy_env(), "float32")
    with pytest.raises(flashband.InvalidArgumentError, match="plan"):
        w.run(q, k, v)


def test_bad_pages_name_the_argument():
    rng = np.random.default_rng(9)
    batch = Ragged(rng, [2, 3], [5, 7], 2, 2, D)
    paged = Paged(rng, batch, 4, spare_pages=0)
    w = flashband.BatchPrefillWithPagedKVCacheWrapper(np.empty(0, np.uint8))

    def plan(indptr=paged.indptr, indices=paged.indices, last=paged.last_page_len, **kw):
        w.plan(batch.qo_indptr, indptr, indices, last, 2, 2, D, 4, q_data_type="float32", **kw)

    with pytest.raises(flashband.InvalidArgumentError, match="paged_kv_last_page_len"):
        plan(last=np.array([5, 3], np.int32))         # > page_size
    with pytest.raises(flashband.InvalidArgumentError, match="paged_kv_last_page_len"):
        plan(last=np.array([2], np.int32))            # one per request
    with pytest.raises(flashband.InvalidArgumentError, match="paged_kv_indices"):
        plan(indices=paged.indices[:-1])              # indptr runs past the indices
    with pytest.raises(flashband.InvalidArgumentError, match="paged_kv_indices"):
        plan(num_pages=paged.num_pages - 1)           # an index outside the cache
    # Without num_pages the cache given to run() is the bound.
    plan()
    small = paged.k_pages[: paged.num_pages - 1]
    with pytest.raises(flashband.InvalidArgumentError, match="pages"):
        w.run(batch.q, (small, small))
    with pytest.raises(flashband.InvalidArgumentError, match="paged_kv_cache"):
        w.run(batch.q, (paged.k_pages,))
    with pytest.raises(flashband.InvalidArgumentError, match="paged_kv_cache"):
        w.run(batch.q, paged.k_pages)                 # not a stacked [P, 2, ...] cache


def test_bad_merge_inputs():
    v = np.zeros((3, 2, D), np.float32)
    s = np.zeros((3, 2), np.float32)
    with pytest.raises(flashband.InvalidArgumentError, match="s_b"):
        flashband.merge_state(v, s, v, s.astype(np.float16))


# --- support queries -------------------------------------------------------------------------

def test_supports_and_caps():
    assert flashband.supports(device="cpu", dtype="float32", head_dim=D, backend="cpu")
    assert flashband.select_backend(device="cpu", dtype=np.float16, head_dim=D) == "cpu"
    answer = flashband.supports(device="cpu", dtype="float32", head_dim=D, backend="sm90")
    assert not answer and answer.reason
    caps = flashband.caps()
    assert "cpu" in caps["built_backends"] and caps["version"] == flashband.__version__
    assert "cpu" in flashband.support_matrix()
    assert flashband.batch_workspace_bytes(4, 100, 8, 128, "cpu") >= 0
    with pytest.raises(flashband.InvalidArgumentError, match="device"):
        flashband.supports(device="tpu")
    with pytest.raises(flashband.InvalidArgumentError, match="op"):
        flashband.supports("prefill")


# --- types ----------------------------------------------------------------------------------
# The package ships py.typed and no stub of its own (a hand-written __init__.pyi restated the
# modules and drifted): type checkers read the modules, so every public signature is annotated.


def _public_functions():
    for name in flashband.__all__:
        obj = getattr(flashband, name)
        if inspect.isfunction(obj):
            yield name, obj
        elif (inspect.isclass(obj) and not issubclass(obj, BaseException)
              and obj.__module__ != "flashband._C"):  # _C's classes: nanobind's _C.pyi
            for meth, fn in inspect.getmembers(obj, inspect.isfunction):
                if not meth.startswith("_") or meth == "__init__":
                    yield f"{name}.{meth}", fn


def test_public_signatures_are_annotated():
    checked = 0
    for name, fn in _public_functions():
        sig = inspect.signature(fn)
        bare = [p for p, v in sig.parameters.items()
                if p != "self" and v.annotation is inspect.Parameter.empty
                and v.kind not in (v.VAR_POSITIONAL, v.VAR_KEYWORD)]
        assert not bare, f"{name}: parameters without annotations {bare}"
        if not name.endswith(".__init__"):
            assert sig.return_annotation is not inspect.Signature.empty, f"{name}: no return annotation"
        checked += 1
    assert checked > 40  # every wrapper's plan/run and the free functions


def test_no_stub_shadows_the_modules():
    root = pathlib.Path(flashband.__file__).parent
    assert (root / "py.typed").exists()
    assert not (root / "__init__.pyi").exists(), "a stub would hide the modules' annotations from type checkers"


def test_more_flashinfer_arguments_at_their_neutral_values():
    """FlashInfer's fp8 scales of 1.0 on every entry point, o_dtype equal to q's, run()'s
    q_len_per_req equal to the plan's, and None for its approximate softmax skipping and fp4
    scale factors are taken; other values are refused by name."""
    rng = np.random.default_rng(19)
    batch = Ragged(rng, [1, 1], [20, 40], 4, 2, D)
    paged = Paged(rng, batch, 16)
    cache = (paged.k_pages.astype(np.float32), paged.v_pages.astype(np.float32))
    q = batch.q.astype(np.float32)
    ref, _ = batch.reference(attention_np, batch.q, batch.k, batch.v)
    ws = np.empty(0, np.uint8)
    k, v = batch.k[:20].astype(np.float32), batch.v[:20].astype(np.float32)
    one_ref, _ = attention_np(batch.q[:1], batch.k[:20], batch.v[:20])
    out = flashband.single_prefill_with_kv_cache(q[:1], k, v, backend="cpu", scale_q=1.0,
                                                 scale_k=np.ones(1, np.float32), scale_v=None,
                                                 o_dtype=np.float32)
    assert_out(out.astype(np.float64), one_ref, "float32")
    for kw in (dict(scale_k=0.5), dict(o_dtype="float16")):
        with pytest.raises(flashband.UnsupportedError, match=f"^{next(iter(kw))}"):
            flashband.single_prefill_with_kv_cache(q[:1], k, v, backend="cpu", **kw)
    out = flashband.single_decode_with_kv_cache(q[0], k, v, backend="cpu", q_scale=1.0, k_scale=1.0,
                                                v_scale=1.0)
    assert_out(out.astype(np.float64), one_ref[0], "float32")
    with pytest.raises(flashband.UnsupportedError, match="^v_scale"):
        flashband.single_decode_with_kv_cache(q[0], k, v, backend="cpu", v_scale=2.0)
    ragged = flashband.BatchPrefillWithRaggedKVCacheWrapper(ws, backend="cpu")
    ragged.plan(batch.qo_indptr, batch.kv_indptr, 4, 2, D, q_data_type="float32")
    out = ragged.run(q, batch.k.astype(np.float32), batch.v.astype(np.float32), q_scale=1.0,
                     k_scale=1.0, v_scale=1.0, o_scale=1.0)
    assert_out(out.astype(np.float64), ref, "float32")
    with pytest.raises(flashband.UnsupportedError, match="^o_scale"):
        ragged.run(q, batch.k.astype(np.float32), batch.v.astype(np.float32), o_scale=0.5)
    decode = flashband.BatchDecodeWithPagedKVCacheWrapper(ws, backend="cpu")
    decode.plan(paged.indptr, paged.indices, paged.last_page_len, 4, 2, D, 16, q_data_type="float32")
    out = decode.run(q, cache, q_len_per_req=1, skip_softmax_threshold_scale_factor=None,
                     kv_cache_sf=None)
    assert_out(out.astype(np.float64), ref, "float32")
    with pytest.raises(flashband.UnsupportedError, match="^q_len_per_req: run.. got 2"):
        decode.run(q, cache, q_len_per_req=2)
    prefill = flashband.BatchPrefillWithPagedKVCacheWrapper(ws, backend="cpu")
    prefill.plan(batch.qo_indptr, paged.indptr, paged.indices, paged.last_page_len, 4, 2, D, 16,
                 q_data_type="float32")
    for kw in (dict(skip_softmax_threshold_scale_factor=0.1), dict(kv_cache_sf=cache)):
        with pytest.raises(flashband.UnsupportedError, match=f"^{next(iter(kw))}"):
            prefill.run(q, cache, **kw)


def test_a_workspace_known_only_through_dlpack():
    """A float workspace of another framework, known only through DLPack (no shape or
    dtype attributes): the Python checks leave it to the native module, and the wrapper
    keeps its plan's arrays in it (as the sm80 "one buffer" GPU test does on the device)."""
    rng = np.random.default_rng(5)
    q, k, v = rand(rng, 7, 4, 64), rand(rng, 19, 2, 64), rand(rng, 19, 2, 64)
    ws = DLPackOnly(np.empty(1 << 20, np.uint8))
    w = flashband.BatchPrefillWithRaggedKVCacheWrapper(ws, backend="cpu")
    w.plan(np.array([0, 7], np.int32), np.array([0, 19], np.int32), 4, 2, 64, q_data_type="float32",
           causal=True)
    assert_out(w.run(q, k, v), attention_np(q.astype(np.float64), k.astype(np.float64),
                                            v.astype(np.float64), causal=True)[0], "float32")
