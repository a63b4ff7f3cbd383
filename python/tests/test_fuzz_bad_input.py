"""Property tests of bad input (issue 63): random shapes, dtypes, strides, index arrays and
scalar values, most of them malformed, through every public entry point. Each call ends one
of two ways: a flashband error whose message names one of the caller's arguments, with every
array the test passed still holding what it held (outputs are filled with a sentinel); or
a result that matches the float64 oracle computed from the arguments as they were given.

Runs in every env of _envs.py: the cpu backend here, and sm80, sm90 and cudnn where torch and
a GPU are present (there the mutations also move a tensor to the host and misalign one).
FLASHBAND_FUZZ_EXAMPLES sets the cases per entry point and env (default 300, derandomized so
CI is repeatable); the session prints how many ran (_fuzz_stats)."""

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flashband
import _fuzz_stats
from _cases import Paged, Ragged, rand
from _checks import assert_lse, assert_out
from _reference import attention_np, merge_np

SETTINGS = settings(max_examples=int(os.environ.get("FLASHBAND_FUZZ_EXAMPLES", "300")), deadline=None,
                    derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))
SENTINEL = 1000.0
OUTPUTS = ("out", "lse", "v_out", "s_out", "v", "s")
WORKSPACES = ("float_workspace_buffer",)

# Scalars drawn for the settings: valid values (the oracle must then match) and malformed ones.
WINDOWS = [-1, 0, 2, 5, 2**31 - 1, 2**40, -2, -2**40, 1.5, "3", None]
CAPS = [None, 0.0, 0.5, 30.0, -1.0, float("nan"), float("inf"), 1e-300, 1e300, "30", True]
SCALES = [None, 0.05, 0.3, 0.0, -0.1, float("nan"), float("inf"), 1e-50, 1e50, "0.1"]
FLAGS = [False, True, 2, "yes", None]
LAYOUTS = ["NHD", "HND", "nhd", 3, None]
INTS = [0, -1, 3, 2**31, 2**33, 1.5, "4", None, True]
# fp8 caches (issue 65): their formats, valid dequantization scales, and malformed ones (the
# arrays among them are made per env in mutate()).
FP8 = ["float8_e4m3fn", "float8_e5m2"]
KV_SCALES_VALID = [None, 1.0, 0.37, 3.1]
KV_SCALES = KV_SCALES_VALID + [0.0, -1.0, float("nan"), float("inf"), 1e-50, 1e50, "0.5", True]
KV_DTYPES = FP8 + ["float16", "bfloat16", "int8", None, 3]


# --- arrays in the env's framework -------------------------------------------------------
def _torch():
    import torch
    return torch


def cast(env, x, dtype):
    if env.framework == "numpy":
        with np.errstate(invalid="ignore"):  # NaN sentinels into int32: malformed on purpose
            return x.astype(dtype)
    return x.to(getattr(_torch(), dtype))


def filled(env, shape, dtype):
    value = SENTINEL if "float" in dtype else 7  # a workspace (uint8) or index array too
    if dtype in FP8:  # made through float32, as every framework converts to fp8
        return env.array(np.full(shape, value, np.float32), dtype)
    if env.framework == "numpy":
        return np.full(shape, value, dtype=dtype)
    return _torch().full(shape, value, dtype=getattr(_torch(), dtype), device=env.device)


def expanded(env, shape, dtype):
    """A writable view whose first dimension has stride 0 (its rows would race)."""
    one = filled(env, (1,) + tuple(shape[1:]), dtype)
    if env.framework == "numpy":
        return np.lib.stride_tricks.as_strided(one, shape, (0,) + one.strides[1:], writeable=True)
    return one.expand(*shape)


def offset_view(env, x):
    """x's values in a view one element past an allocation's start (not 16-byte aligned)."""
    flat = x.reshape(-1)
    if env.framework == "numpy":
        big = np.empty(flat.shape[0] + 1, dtype=x.dtype)
    else:
        big = _torch().empty(flat.shape[0] + 1, dtype=x.dtype, device=x.device)
    big[1:] = flat
    return big[1:].reshape(tuple(x.shape))


def padded_rows(env, x):
    """x's values in a view whose first dimension has a stride with a gap (valid)."""
    if len(x.shape) < 2 or x.shape[0] == 0:
        return x
    if env.framework == "numpy":
        big = np.zeros((x.shape[0], 2) + tuple(x.shape[1:]), dtype=x.dtype)
    else:
        big = _torch().zeros((x.shape[0], 2) + tuple(x.shape[1:]), dtype=x.dtype, device=x.device)
    big[:, 0] = x
    return big[:, 0]


def strided_last(env, x):
    """x's values with a last-dimension stride of 2 (not contiguous)."""
    if env.framework == "numpy":
        big = np.zeros(tuple(x.shape[:-1]) + (2 * x.shape[-1],), dtype=x.dtype)
    else:
        big = _torch().zeros(tuple(x.shape[:-1]) + (2 * x.shape[-1],), dtype=x.dtype, device=x.device)
    big[..., ::2] = x
    return big[..., ::2]


def is_array(x):
    return hasattr(x, "__dlpack__") and hasattr(x, "shape")


def snapshot(env, x):
    if not is_array(x):
        return None
    try:
        if isinstance(x, np.ndarray):  # a mutation may hand a torch env a NumPy array
            return np.array(x, dtype=np.float64)
        return env.to64(x).copy()
    except (TypeError, ValueError, RuntimeError):
        return None


# --- problems ----------------------------------------------------------------------------
class Problem:
    """A small valid problem drawn by hypothesis: lengths, heads, head dim, dtype, layout."""

    def __init__(self, draw, env, dtype, batch_min=1, batch_max=3):
        self.env, self.dtype = env, dtype
        self.batch = draw(st.integers(batch_min, batch_max))
        self.qo = [draw(st.integers(0, 5)) for _ in range(self.batch)]
        self.kv = [draw(st.integers(0, 9)) for _ in range(self.batch)]
        self.hk = draw(st.sampled_from([1, 2]))
        self.hq = self.hk * draw(st.sampled_from([1, 2]))
        self.d = draw(st.sampled_from([8, 16, 64] if env.device == "cpu" else [64, 128]))
        self.layout = draw(st.sampled_from(["NHD", "HND"]))
        self.page_size = draw(st.integers(1, 4))
        self.rng = np.random.default_rng(draw(st.integers(0, 2**16)))

    def arr(self, x32):
        return self.env.array(x32, self.dtype)


def _settings(draw, mutate):
    """causal/window/cap/scale: valid values unless this case mutates scalars."""
    pick = (lambda values, valid: draw(st.sampled_from(values if mutate else valid)))
    return dict(causal=pick(FLAGS, [False, True]), window_left=pick(WINDOWS, [-1, 0, 2, 5, 2**40]),
                logits_soft_cap=pick(CAPS, [None, 0.5, 30.0]), sm_scale=pick(SCALES, [None, 0.05, 0.3]))


def _to_nhd(x64, layout):
    return x64 if layout == "NHD" else x64.transpose(1, 0, 2)


def _scale_value(env, s):
    """A scale as the run read it: None is 1.0, an array its one element."""
    if s is None:
        return 1.0
    return float(env.to64(s).reshape(-1)[0]) if is_array(s) else float(s)


def _kv64(env, args, x, which):
    """K or V in float64, dequantized by the run's scale (1.0 unless an fp8 case gave one)."""
    return env.to64(x) * _scale_value(env, args.get(which + "_scale"))


def _ref_kw(args):
    cap = args.get("logits_soft_cap")
    return dict(causal=bool(args.get("causal", False)), window_left=int(args.get("window_left", -1)),
                logits_soft_cap=None if not cap else float(cap), sm_scale=args.get("sm_scale"))


# --- entry points: arguments, the call, the oracle -----------------------------------------
def single_args(draw, p, mutate):
    q32, k32, v32 = rand(p.rng, p.qo[0], p.hq, p.d), rand(p.rng, p.kv[0], p.hk, p.d), rand(p.rng, p.kv[0], p.hk, p.d)
    lay = (lambda x: x) if p.layout == "NHD" else (lambda x: np.ascontiguousarray(x.transpose(1, 0, 2)))
    args = dict(q=p.arr(q32), k=p.arr(lay(k32)), v=p.arr(lay(v32)), kv_layout=p.layout,
                out=filled(p.env, (p.qo[0], p.hq, p.d), p.dtype), lse=filled(p.env, (p.qo[0], p.hq), "float32"))
    args.update(_settings(draw, mutate))
    return args


def single_call(env, args):
    return flashband.single_prefill_with_kv_cache(
        args["q"], args["k"], args["v"], causal=args["causal"], kv_layout=args["kv_layout"],
        window_left=args["window_left"], logits_soft_cap=args["logits_soft_cap"], sm_scale=args["sm_scale"],
        return_lse=True, backend=env.backend, out=args["out"], lse=args["lse"], **_scales(args))


def single_ref(env, args, before):
    k = _to_nhd(_kv64(env, args, args["k"], "k"), args["kv_layout"])
    v = _to_nhd(_kv64(env, args, args["v"], "v"), args["kv_layout"])
    return attention_np(env.to64(args["q"]), k, v, **_ref_kw(args))


def ragged_args(draw, p, mutate):
    batch = Ragged(p.rng, p.qo, p.kv, p.hq, p.hk, p.d)
    lay = (lambda x: x) if p.layout == "NHD" else (lambda x: np.ascontiguousarray(x.transpose(1, 0, 2)))
    args = dict(qo_indptr=p.env.index(batch.qo_indptr), kv_indptr=p.env.index(batch.kv_indptr),
                num_qo_heads=p.hq, num_kv_heads=p.hk, head_dim_qk=p.d, kv_layout=p.layout,
                q=p.arr(batch.q), k=p.arr(lay(batch.k)), v=p.arr(lay(batch.v)),
                out=filled(p.env, batch.q.shape, p.dtype), lse=filled(p.env, batch.q.shape[:2], "float32"),
                float_workspace_buffer=_workspace(p.env), share_workspace=draw(st.booleans()) if mutate else False)
    args.update(_settings(draw, mutate))
    return args


def _workspace(env):
    nbytes = flashband.batch_workspace_bytes(8, 64, 8, 128, env.device, 64)
    return env.workspace(nbytes)


def ragged_call(env, args):
    def planned():
        w = flashband.BatchPrefillWithRaggedKVCacheWrapper(args["float_workspace_buffer"], args["kv_layout"],
                                                           backend=env.backend)
        w.plan(args["qo_indptr"], args["kv_indptr"], args["num_qo_heads"], args["num_kv_heads"],
               args["head_dim_qk"], causal=args["causal"], window_left=args["window_left"],
               logits_soft_cap=args["logits_soft_cap"], sm_scale=args["sm_scale"], q_data_type=fw_dtype(args["q"]),
               kv_data_type=args.get("kv_data_type"))
        return w

    w = planned()
    if args["share_workspace"]:  # another wrapper plans over the same workspace before w runs
        planned()
    return w.run(args["q"], args["k"], args["v"], out=args["out"], lse=args["lse"], return_lse=True, **_scales(args))


def _host(env, x):
    return np.asarray(x.cpu().numpy() if hasattr(x, "cpu") else x)


def ragged_ref(env, args, before):
    qo, kv = _host(env, args["qo_indptr"]), _host(env, args["kv_indptr"])
    q = env.to64(args["q"])
    k, v = (_to_nhd(_kv64(env, args, args[n], n), args["kv_layout"]) for n in ("k", "v"))
    outs, lses = [], []
    for b in range(len(qo) - 1):
        o, s = attention_np(q[qo[b]:qo[b + 1]], k[kv[b]:kv[b + 1]], v[kv[b]:kv[b + 1]], **_ref_kw(args))
        outs.append(o)
        lses.append(s)
    return _rows(outs, lses, q)


def _rows(outs, lses, q):
    """The per-request results as q's rows; rows past the last request are not written."""
    o = np.concatenate(outs) if outs else np.zeros((0,) + q.shape[1:])
    s = np.concatenate(lses) if lses else np.zeros((0, q.shape[1]))
    return o, s


def paged_args(draw, p, mutate, decode=False):
    qo = [1] * p.batch if decode else p.qo
    batch = Ragged(p.rng, qo, p.kv, p.hq, p.hk, p.d)
    paged = Paged(p.rng, batch, p.page_size, spare_pages=draw(st.integers(0, 2)))
    cache = [Paged.layout(x, p.layout) for x in (paged.k_pages, paged.v_pages)]
    names = (("indptr", "indices", "last_page_len") if decode else
             ("paged_kv_indptr", "paged_kv_indices", "paged_kv_last_page_len"))
    args = {names[0]: p.env.index(paged.indptr), names[1]: p.env.index(paged.indices),
            names[2]: p.env.index(paged.last_page_len),
            "num_qo_heads": p.hq, "num_kv_heads": p.hk, "page_size": p.page_size, "kv_layout": p.layout,
            "q": p.arr(batch.q), "paged_kv_cache": (p.arr(cache[0]), p.arr(cache[1])),
            "out": filled(p.env, batch.q.shape, p.dtype), "lse": filled(p.env, batch.q.shape[:2], "float32")}
    args["head_dim" if decode else "head_dim_qk"] = p.d
    if not decode:
        args["qo_indptr"] = p.env.index(batch.qo_indptr)
    args.update(_settings(draw, mutate))
    if decode:
        del args["causal"]
    return args


def _scales(args):
    """The fp8 cases' k_scale / v_scale (absent elsewhere)."""
    return {n: args[n] for n in ("k_scale", "v_scale") if n in args}


def with_fp8_cache(make):
    """An entry's arguments with K and V as an fp8 cache (a format drawn per case), the plan's
    kv_data_type, and k_scale / v_scale: valid values, or malformed ones when mutating."""
    def args(draw, p, mutate):
        a = make(draw, p, mutate)
        kv = draw(st.sampled_from(FP8))
        to_fp8 = (lambda x: p.env.array(p.env.to64(x).astype(np.float32), kv))
        if "paged_kv_cache" in a:
            a["paged_kv_cache"] = tuple(to_fp8(x) for x in a["paged_kv_cache"])
        else:
            a["k"], a["v"] = to_fp8(a["k"]), to_fp8(a["v"])
        if "single" not in make.__name__:  # single prefill: the dtype is k's own
            a["kv_data_type"] = kv
        scales = KV_SCALES if mutate else KV_SCALES_VALID
        a["k_scale"], a["v_scale"] = draw(st.sampled_from(scales)), draw(st.sampled_from(scales))
        return a
    args.__name__ = make.__name__ + "_fp8"
    return args


def fw_dtype(x):
    return str(getattr(x, "dtype", "float16")).removeprefix("torch.") if is_array(x) else "float16"


def paged_call(env, args):
    w = flashband.BatchPrefillWithPagedKVCacheWrapper(_workspace(env), args["kv_layout"], backend=env.backend)
    w.plan(args["qo_indptr"], args["paged_kv_indptr"], args["paged_kv_indices"], args["paged_kv_last_page_len"],
           args["num_qo_heads"], args["num_kv_heads"], args["head_dim_qk"], args["page_size"],
           causal=args["causal"], window_left=args["window_left"], logits_soft_cap=args["logits_soft_cap"],
           sm_scale=args["sm_scale"], q_data_type=fw_dtype(args["q"]), kv_data_type=args.get("kv_data_type"))
    return w.run(args["q"], args["paged_kv_cache"], out=args["out"], lse=args["lse"], return_lse=True,
                 **_scales(args))


def decode_call(env, args):
    w = flashband.BatchDecodeWithPagedKVCacheWrapper(_workspace(env), args["kv_layout"], backend=env.backend)
    w.plan(args["indptr"], args["indices"], args["last_page_len"], args["num_qo_heads"], args["num_kv_heads"],
           args["head_dim"], args["page_size"], window_left=args["window_left"],
           logits_soft_cap=args["logits_soft_cap"], sm_scale=args["sm_scale"], q_data_type=fw_dtype(args["q"]),
           kv_data_type=args.get("kv_data_type"))
    return w.run(args["q"], args["paged_kv_cache"], out=args["out"], lse=args["lse"], return_lse=True,
                 **_scales(args))


def _paged_ref(env, args, qo, indptr, indices, last, causal):
    q = env.to64(args["q"])
    ps = int(args["page_size"])
    k, v = (_kv64(env, args, x, n) for x, n in zip(args["paged_kv_cache"], ("k", "v")))
    if args["kv_layout"] == "HND":
        k, v = k.transpose(0, 2, 1, 3), v.transpose(0, 2, 1, 3)
    kw = dict(_ref_kw(args), causal=causal)
    outs, lses = [], []
    for b in range(len(indptr) - 1):
        pages = indices[indptr[b]:indptr[b + 1]]
        n = len(pages)
        kv = (n - 1) * ps + int(last[b]) if n else 0
        kb, vb = (x[pages].reshape(-1, x.shape[2], x.shape[3])[:kv] for x in (k, v))
        o, s = attention_np(q[qo[b]:qo[b + 1]], kb, vb, **kw)
        outs.append(o)
        lses.append(s)
    return _rows(outs, lses, q)


def paged_ref(env, args, before):
    return _paged_ref(env, args, _host(env, args["qo_indptr"]), _host(env, args["paged_kv_indptr"]),
                      _host(env, args["paged_kv_indices"]), _host(env, args["paged_kv_last_page_len"]),
                      bool(args["causal"]))


def decode_ref(env, args, before):
    indptr = _host(env, args["indptr"])
    return _paged_ref(env, args, np.arange(len(indptr)), indptr, _host(env, args["indices"]),
                      _host(env, args["last_page_len"]), False)


def merge_args(draw, p, mutate):
    n = sum(p.qo)
    states = []
    for _ in range(2):
        s = rand(p.rng, n, p.hq, scale=3.0)
        s[p.rng.random(s.shape) < 0.2] = -np.inf  # empty states too
        states += [p.arr(rand(p.rng, n, p.hq, p.d)), p.env.array(s, "float32")]
    return dict(v_a=states[0], s_a=states[1], v_b=states[2], s_b=states[3],
                v_out=filled(p.env, (n, p.hq, p.d), p.dtype), s_out=filled(p.env, (n, p.hq), "float32"))


def merge_call(env, args):
    return flashband.merge_state(args["v_a"], args["s_a"], args["v_b"], args["s_b"], v_out=args["v_out"],
                                 s_out=args["s_out"])


def merge_ref(env, args, before):
    return merge_np(*(before[k] for k in ("v_a", "s_a", "v_b", "s_b")))


def in_place_args(draw, p, mutate):
    a = merge_args(draw, p, mutate)
    return dict(v=a["v_a"], s=a["s_a"], v_other=a["v_b"], s_other=a["s_b"])


def in_place_call(env, args):
    flashband.merge_state_in_place(args["v"], args["s"], args["v_other"], args["s_other"])
    return args["v"], args["s"]


def in_place_ref(env, args, before):
    return merge_np(*(before[k] for k in ("v", "s", "v_other", "s_other")))


ENTRIES = {
    "single_prefill": (single_args, single_call, single_ref, ("out", "lse")),
    "ragged_prefill": (ragged_args, ragged_call, ragged_ref, ("out", "lse")),
    "paged_prefill": (paged_args, paged_call, paged_ref, ("out", "lse")),
    "paged_decode": (lambda draw, p, m: paged_args(draw, p, m, decode=True), decode_call, decode_ref, ("out", "lse")),
    "single_prefill_fp8": (with_fp8_cache(single_args), single_call, single_ref, ("out", "lse")),
    "ragged_prefill_fp8": (with_fp8_cache(ragged_args), ragged_call, ragged_ref, ("out", "lse")),
    "paged_prefill_fp8": (with_fp8_cache(paged_args), paged_call, paged_ref, ("out", "lse")),
    "paged_decode_fp8": (with_fp8_cache(lambda draw, p, m: paged_args(draw, p, m, decode=True)), decode_call,
                         decode_ref, ("out", "lse")),
    "merge_state": (merge_args, merge_call, merge_ref, ("v_out", "s_out")),
    "merge_state_in_place": (in_place_args, in_place_call, in_place_ref, ("v", "s")),
}


# --- mutations -------------------------------------------------------------------------------
def mutate_array(draw, env, x, output):
    """A malformed (or differently laid out but valid) stand-in for array x."""
    kinds = ["rank_up", "rank_down", "float64", "int32", "other_float", "none", "list", "text",
             "shape", "strided_last", "padded_rows", "offset"]
    if output:
        kinds += ["expanded"] + (["read_only"] if env.framework == "numpy" else [])
    if env.device == "cuda":
        kinds += ["host"]
    kind = draw(st.sampled_from(kinds))
    shape = tuple(x.shape)
    if kind == "rank_up":
        return x[None]
    if kind == "rank_down":
        return x[0] if shape and shape[0] > 0 else x.reshape(-1)
    if kind in ("float64", "int32"):
        return cast(env, x, kind)
    if kind == "other_float":
        return cast(env, x, "float32" if fw_dtype(x) != "float32" else "float16")
    if kind == "none":
        return None
    if kind == "list":
        return x.tolist()
    if kind == "text":
        return "x"
    if kind == "shape" and shape:
        dim = draw(st.integers(0, len(shape) - 1))
        new = list(shape)
        new[dim] = max(new[dim] + draw(st.sampled_from([-1, 1])), 0)
        return filled(env, tuple(new), fw_dtype(x))
    if kind == "strided_last" and shape and shape[-1] > 1:
        return strided_last(env, x)
    if kind == "padded_rows":
        return padded_rows(env, x)
    if kind == "offset":
        return offset_view(env, x)
    if kind == "expanded" and shape and shape[0] > 1:
        return expanded(env, shape, fw_dtype(x))
    if kind == "read_only":
        x = x.copy()
        x.flags.writeable = False
        return x
    if kind == "host":
        return x.cpu()
    return x


def mutate_index(draw, env, x):
    """A malformed (or reordered but valid) stand-in for a host int32 index array."""
    a = _host(env, x).copy()
    kind = draw(st.sampled_from(["start", "decrease", "past_end", "float", "two_d", "list", "int64",
                                 "value", "negative", "shorter", "none"]))
    if kind == "start" and len(a):
        a[0] += 1
    elif kind == "decrease" and len(a) > 1:
        a[-1] = a[-2] - 1
    elif kind == "past_end" and len(a):
        a[-1] += draw(st.integers(1, 3))
    elif kind == "float":
        return env.array(a.astype(np.float32), "float32") if env.framework != "numpy" else a.astype(np.float32)
    elif kind == "two_d":
        return env.index(a)[None]
    elif kind == "list":
        return a.tolist()  # valid: converted
    elif kind == "int64":
        return a.astype(np.int64)  # valid: every value fits
    elif kind == "value" and len(a):
        a[draw(st.integers(0, len(a) - 1))] = draw(st.sampled_from([0, 1, 5, 2**31 - 1]))
    elif kind == "negative" and len(a):
        a[draw(st.integers(0, len(a) - 1))] = -1
    elif kind == "shorter" and len(a):
        a = a[:-1]
    elif kind == "none":
        return None
    return env.index(a)


INDEX_KEYS = ("qo_indptr", "kv_indptr", "paged_kv_indptr", "paged_kv_indices", "paged_kv_last_page_len",
              "indptr", "indices", "last_page_len")
INT_KEYS = ("num_qo_heads", "num_kv_heads", "head_dim_qk", "head_dim", "page_size")


def mutate(draw, env, args):
    """One malformed argument (or a valid re-layout of one)."""
    key = draw(st.sampled_from(sorted(args)))
    value = args[key]
    if key in INDEX_KEYS:
        args[key] = mutate_index(draw, env, value)
    elif key in INT_KEYS:
        nearby = [value + 1, value * 2] if type(value) is int else []
        args[key] = draw(st.sampled_from(INTS + nearby))
    elif key == "kv_layout":
        args[key] = draw(st.sampled_from(LAYOUTS))
    elif key == "paged_kv_cache":
        part = draw(st.integers(0, 2))
        cache = list(value)
        if part == 2:
            args[key] = draw(st.sampled_from([cache[:1], cache[0], None]))
        else:
            cache[part] = mutate_array(draw, env, cache[part], output=False)
            args[key] = tuple(cache)
    elif key == "float_workspace_buffer":
        args[key] = draw(st.sampled_from([env.workspace(16), env.workspace(0), None, value[None],
                                          mutate_array(draw, env, value, output=False)]))
    elif key == "share_workspace":
        args[key] = not value
    elif key == "causal":
        args[key] = draw(st.sampled_from(FLAGS))
    elif key == "window_left":
        args[key] = draw(st.sampled_from(WINDOWS))
    elif key == "logits_soft_cap":
        args[key] = draw(st.sampled_from(CAPS))
    elif key == "sm_scale":
        args[key] = draw(st.sampled_from(SCALES))
    elif key in ("k_scale", "v_scale"):
        arrays = [env.array(np.ones(2, np.float32), "float32"), env.array(np.ones((1,), np.float32), "float64"),
                  env.array(np.full((1,), 0.5, np.float32), "float32")]
        args[key] = draw(st.sampled_from(KV_SCALES + arrays))
    elif key == "kv_data_type":
        args[key] = draw(st.sampled_from(KV_DTYPES))
    elif is_array(value):
        if key in OUTPUTS and draw(st.booleans()):
            others = [v for k, v in args.items() if is_array(v) and k != key and not isinstance(v, tuple)]
            if others:  # an output that aliases another argument
                args[key] = draw(st.sampled_from(others))
                return
        args[key] = mutate_array(draw, env, value, output=key in OUTPUTS)


# --- the property ------------------------------------------------------------------------
def _arrays(args):
    for key, value in args.items():
        if isinstance(value, tuple):
            for i, part in enumerate(value):
                yield f"{key}[{i}]", part
        else:
            yield key, value


def check_call(env, dtype, entry, data):
    make, call, ref, outputs = ENTRIES[entry]
    draw = data.draw
    p = Problem(draw, env, dtype)
    mutations = draw(st.sampled_from([0, 1, 1, 1, 2]))
    args = make(draw, p, mutations > 0)
    for _ in range(mutations):
        mutate(draw, env, args)
    before = {k: snapshot(env, v) for k, v in _arrays(args)}
    try:
        result = call(env, args)
    except flashband.FlashbandError as e:
        message = str(e)
        names = set(args) | {"head_dim", "q_data_type", "backend", "workspace", "paged_kv_cache"}
        assert any(n in message for n in names), f"{entry}: error names no argument: {message}"
        for k, v in _arrays(args):
            if before[k] is not None and k not in WORKSPACES:  # a plan that passed wrote its workspace
                assert np.array_equal(snapshot(env, v), before[k], equal_nan=True), f"{entry}: {k} written by a refused call"
        _fuzz_stats.record(entry, "refused")
        return
    env.sync()
    out, lse = result if isinstance(result, tuple) else (result, None)
    ref_o, ref_s = ref(env, args, before)
    rows = ref_o.shape[0]
    out_dtype = fw_dtype(out)
    assert_out(env.to64(out)[:rows], ref_o, out_dtype if out_dtype in ("float16", "bfloat16") else "float32")
    assert_lse(env.to64(lse)[:rows], ref_s, out_dtype if out_dtype in ("float16", "bfloat16") else "float32")
    for k, v in _arrays(args):
        if (k not in outputs and k not in WORKSPACES and before[k] is not None
                and not any(v is args[o] for o in outputs)):
            assert np.array_equal(snapshot(env, v), before[k], equal_nan=True), f"{entry}: input {k} was written"
    _fuzz_stats.record(entry, "computed")


def _fp8_arrays(env):
    """Whether this env can hold an fp8 cache: torch, or NumPy with ml_dtypes."""
    if env.framework != "numpy":
        return True
    try:
        import ml_dtypes  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_bad_input_property(env, dtype, entry):
    if entry.endswith("_fp8") and (dtype not in ("float16", "bfloat16") or not _fp8_arrays(env)):
        pytest.skip("fp8 caches: fp16/bf16 q, and torch or NumPy with ml_dtypes")

    @SETTINGS
    @given(data=st.data())
    def run(data):
        check_call(env, dtype, entry, data)

    run()
