"""The implementations timed side by side, on one case's inputs: every flashband GPU backend,
and the peers in the same process -- torch SDPA with cuDNN or FlashAttention-2, and
FlexAttention compiled with a block mask. Each prepares a zero-argument callable (timed) and
returns its output in flashband's layout [B * qo_len, Hq, D] for the spot check.

All tensors are bf16, NHD, but an fp8 case's K/V cache (issue 65); the peers read the same
memory through [B, H, S, D] views. The device is CUDA; run.py's --dry-run passes "cpu" to
run flashband's cpu backend on shrunk cases.
"""

from __future__ import annotations

import math
import time
from typing import Callable, Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F

import flashband
from cases import Case, tree_lineage

DTYPE = torch.bfloat16
WORKSPACE_MIN = 128 << 20  # like FlashInfer's usual float workspace


class Inputs:
    """Random inputs of one case (never zeros), contiguous-ragged and/or paged.

    Paged prefill pages are a random permutation of the pool (realistic scatter); decode pages
    are in request order so that the peers can read the same cache as a contiguous view.
    An fp8 cache holds random normal values rounded to fp8 (the scales apply on top)."""

    def __init__(self, case: Case, seed: int = 0, device: str = "cuda"):
        g = torch.Generator(device=device).manual_seed(seed)
        b, qo, kv, hq, hk, d = (case.batch, case.qo_len, case.kv_len, case.num_qo_heads,
                                case.num_kv_heads, case.head_dim)
        randn = lambda *shape: torch.randn(*shape, generator=g, device=device, dtype=DTYPE)
        kv_dtype = getattr(torch, case.kv_dtype) if case.kv_dtype else DTYPE
        randkv = lambda *shape: randn(*shape).to(kv_dtype)
        self.case, self.device = case, device
        self.q = randn(b * qo, hq, d)
        self.qo_indptr = torch.arange(b + 1, dtype=torch.int32) * qo
        self.kv_indptr = torch.arange(b + 1, dtype=torch.int32) * kv
        # Sinks near log(kv_len) carry a share of the softmax that the spot check sees.
        self.sinks = (torch.randn(hq, generator=g, device=device) + math.log(kv)) if case.sinks else None
        # [qo_len, kv_len], the same for every request (the tree of cases.tree_parents)
        self.mask = _tree_mask(case, device) if case.tree is not None else None
        p = case.page_size
        if not p:
            self.k, self.v = randkv(b * kv, hk, d), randkv(b * kv, hk, d)
            self.k_cache = self.v_cache = None
            return
        pages_per_req = kv // p
        num_pages = b * pages_per_req
        self.k_cache, self.v_cache = randkv(num_pages, p, hk, d), randkv(num_pages, p, hk, d)
        if case.op == "paged_decode":
            self.indices = torch.arange(num_pages, dtype=torch.int32)
        else:
            self.indices = torch.randperm(num_pages, dtype=torch.int32)
        self.page_indptr = torch.arange(b + 1, dtype=torch.int32) * pages_per_req
        self.last_page_len = torch.full((b,), p, dtype=torch.int32)
        self.k = self.v = None
        self._indices_dev = self.indices.to(device, dtype=torch.long)

    def request_kv(self, b: int) -> Tuple[torch.Tensor, torch.Tensor]:
        """K, V of request b as [kv_len, Hk, D] (a gather for paged inputs)."""
        c = self.case
        if self.k is not None:
            s = slice(b * c.kv_len, (b + 1) * c.kv_len)
            return self.k[s], self.v[s]
        n = c.kv_len // c.page_size
        pages = self._indices_dev[b * n:(b + 1) * n]
        shape = (c.kv_len, c.num_kv_heads, c.head_dim)
        # fp8 pages are gathered as bytes: indexing may lack an fp8 kernel on some devices
        gather = (lambda t: t.view(torch.uint8)[pages].view(t.dtype)) if self.k_cache.element_size() == 1 \
            else (lambda t: t[pages])
        return gather(self.k_cache).reshape(shape), gather(self.v_cache).reshape(shape)

    def contiguous_kv_views(self) -> Tuple[torch.Tensor, torch.Tensor]:
        """[B, Hk, kv_len, D] views for the peers (ragged inputs, or decode's ordered pages)."""
        c = self.case
        k, v = (self.k, self.v) if self.k is not None else (self.k_cache, self.v_cache)
        shape = (c.batch, c.kv_len, c.num_kv_heads, c.head_dim)
        return k.view(shape).transpose(1, 2), v.view(shape).transpose(1, 2)

    def q_view(self) -> torch.Tensor:
        c = self.case
        return self.q.view(c.batch, c.qo_len, c.num_qo_heads, c.head_dim).transpose(1, 2)


def _tree_mask(case: Case, device: str) -> torch.Tensor:
    """One request's tree-verify mask: the prefix all visible, each draft token itself and
    its ancestors."""
    prefix = case.kv_len - case.qo_len
    mask = torch.zeros(case.qo_len, case.kv_len, dtype=torch.bool)
    mask[:, :prefix] = True
    for i in range(case.qo_len):
        mask[i, [prefix + j for j in tree_lineage(case.tree, i)]] = True
    return mask.to(device)


def spot_check(inputs: Inputs, out: torch.Tensor, rows: int = 64, seed: int = 1) -> float:
    """Max |out - reference| over sampled query rows, the reference in float32 with an
    explicit mask written from SPEC.md (bottom-right causal, window on both sides, custom
    mask), the fp8 cache dequantized with its scales, and the sinks in the denominator."""
    c = inputs.case
    gen = torch.Generator().manual_seed(seed)
    total = c.batch * c.qo_len
    picks = torch.randperm(total, generator=gen)[:rows].tolist() + [0, total - 1]
    by_request: Dict[int, List[int]] = {}
    for t in sorted(set(picks)):
        by_request.setdefault(t // c.qo_len, []).append(t % c.qo_len)
    worst = 0.0
    group = c.num_qo_heads // c.num_kv_heads
    scale = 1.0 / math.sqrt(c.head_dim)
    for b, qrows in by_request.items():
        k, v = inputs.request_kv(b)
        k = (k.float() * c.k_scale).repeat_interleave(group, dim=1)     # [kv, Hq, D]
        v = (v.float() * c.v_scale).repeat_interleave(group, dim=1)
        i = torch.tensor(qrows, device=inputs.device)
        q = inputs.q[b * c.qo_len + i].float()              # [r, Hq, D]
        s = torch.einsum("rhd,jhd->hrj", q, k) * scale
        if c.logits_soft_cap > 0:
            s = c.logits_soft_cap * torch.tanh(s / c.logits_soft_cap)
        p = (i + c.kv_len - c.qo_len)[:, None]
        j = torch.arange(c.kv_len, device=inputs.device)[None, :]
        vis = torch.ones_like(j, dtype=torch.bool) & (j >= 0)
        if c.causal:
            vis = vis & (j <= p)
        if c.window_left >= 0:
            vis = vis & (j >= p - c.window_left)
        if c.window_right >= 0:
            vis = vis & (j <= p + c.window_right)
        if inputs.mask is not None:
            vis = vis & inputs.mask[i]
        s = s.masked_fill(~vis[None], -math.inf)
        if inputs.sinks is not None:  # one more logit per head, with no value
            sink = inputs.sinks.float()[:, None, None].expand(-1, len(qrows), 1)
            probs = torch.softmax(torch.cat([s, sink], dim=-1), dim=-1)[..., :-1]
        else:
            probs = torch.softmax(s, dim=-1)
        ref = torch.einsum("hrj,jhd->rhd", probs.nan_to_num(0.0), v)
        got = out[b * c.qo_len + i].float()
        worst = max(worst, (got - ref).abs().max().item())
    return worst


# --- flashband ---------------------------------------------------------------------------------

class Flashband:
    use_cuda_graph = False

    def __init__(self, backend: str):
        self.backend = backend
        self.name = f"flashband-{backend}"

    def skip_reason(self, c: Case, device: str = "cuda") -> Optional[str]:
        window = c.window_left if c.window_left < c.kv_len - 1 else -1
        answer = flashband.supports(c.op, backend=self.backend, dtype="bfloat16", device=device,
                                    head_dim=c.head_dim, num_qo_heads=c.num_qo_heads,
                                    num_kv_heads=c.num_kv_heads, causal=c.causal,
                                    window_left=window, page_size=c.page_size,
                                    logits_soft_cap=c.logits_soft_cap or None,
                                    **c.feature_args)
        return None if answer else answer.reason

    def prepare(self, x: Inputs):
        c = x.case
        need = flashband.batch_workspace_bytes(c.batch, c.batch * c.qo_len, c.num_qo_heads,
                                               c.head_dim, x.device)
        ws = torch.empty(max(need, WORKSPACE_MIN), dtype=torch.uint8, device=x.device)
        out = torch.empty_like(x.q)
        common = dict(q_data_type=DTYPE, logits_soft_cap=c.logits_soft_cap or None)
        if c.kv_dtype:
            common["kv_data_type"] = getattr(torch, c.kv_dtype)
        run_args = {}
        if c.kv_dtype:
            run_args.update(k_scale=c.k_scale, v_scale=c.v_scale)
        if c.sinks:
            run_args["sinks"] = x.sinks
        if c.op == "paged_decode":
            w = flashband.BatchDecodeWithPagedKVCacheWrapper(ws, "NHD", self.use_cuda_graph,
                                                             backend=self.backend)
            decode_args = (x.page_indptr, x.indices, x.last_page_len, c.num_qo_heads,
                           c.num_kv_heads, c.head_dim, c.page_size)
            w.plan(*decode_args, **common)
            fn = lambda: w.run(x.q, (x.k_cache, x.v_cache), out=out, **run_args)
        elif c.page_size:
            w = flashband.BatchPrefillWithPagedKVCacheWrapper(ws, "NHD", backend=self.backend)
            mask = {} if x.mask is None else {"custom_mask": x.mask.expand(c.batch, -1, -1).reshape(-1)}
            w.plan(x.qo_indptr, x.page_indptr, x.indices, x.last_page_len, c.num_qo_heads,
                   c.num_kv_heads, c.head_dim, c.page_size, causal=c.causal,
                   window_left=c.window_left, window_right=c.window_right, **mask, **common)
            fn = lambda: w.run(x.q, (x.k_cache, x.v_cache), out=out, **run_args)
        else:
            w = flashband.BatchPrefillWithRaggedKVCacheWrapper(ws, "NHD", backend=self.backend)
            w.plan(x.qo_indptr, x.kv_indptr, c.num_qo_heads, c.num_kv_heads, c.head_dim,
                   causal=c.causal, window_left=c.window_left, window_right=c.window_right, **common)
            fn = lambda: w.run(x.q, x.k, x.v, out=out, **run_args)

        def info():
            i = w.last_run_info
            r = {"variant": i.variant, "num_kv_splits": i.num_kv_splits} if i else {}
            if c.section == "fp8kv" and c.op == "paged_decode" and not self.use_cuda_graph:
                # issue 65: an fp8 plan must not need more workspace than bf16's (a failure
                # here is recorded beside the timing, not in its place)
                try:
                    r["workspace_bytes"] = list(w.workspace_size(*decode_args, **common))
                except Exception as e:
                    r["workspace_error"] = f"{type(e).__name__}: {e}"[:200]
            return r

        return fn, (lambda: out), info


class FlashbandGraph(Flashband):
    """Decode as CUDA-graph users run it: planned with use_cuda_graph=True (sm80's split count
    then fills one wave of CTAs whatever the lengths), captured once and timed by replays.
    Its rows stay out of the "best flashband" ratios (report.best), which compare launches."""
    use_cuda_graph = True

    def __init__(self, backend: str):
        super().__init__(backend)
        self.name = f"flashband-{backend} (graph)"

    def skip_reason(self, c: Case) -> Optional[str]:
        return "graph rows: decode only" if c.op != "paged_decode" else super().skip_reason(c)

    def prepare(self, x: Inputs):
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            fn, out, info = super().prepare(x)  # plans on the capture stream
            fn()  # warm-up outside the capture
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, stream=stream):
                fn()
        torch.cuda.current_stream().wait_stream(stream)
        return graph.replay, out, info


# --- torch SDPA (cuDNN, FlashAttention-2) ------------------------------------------------------

class Sdpa:
    def __init__(self, name: str, backend_attr: str):
        self.name = name
        self.backend_attr = backend_attr

    def skip_reason(self, c: Case) -> Optional[str]:
        if c.section in ("sinks", "mask"):
            return f"the {c.section} section compares flashband with itself"
        if c.kv_dtype:
            return "SDPA reads 16-bit K/V: its row is the bf16 one of this shape"
        if c.logits_soft_cap > 0:
            return "SDPA has no soft cap"
        if c.window_left >= 0:
            return "SDPA has no sliding window (only a dense mask)"
        if c.page_size and c.op != "paged_decode":
            return "paged section compares flashband with itself"
        return None

    def prepare(self, x: Inputs):
        from torch.nn.attention import SDPBackend, sdpa_kernel
        from torch.nn.attention.bias import causal_lower_right

        c = x.case
        backend = getattr(SDPBackend, self.backend_attr)
        q = x.q_view()
        k, v = x.contiguous_kv_views()
        kw = dict(enable_gqa=c.num_qo_heads != c.num_kv_heads)
        if c.causal and c.qo_len == c.kv_len:
            kw["is_causal"] = True              # top-left == bottom-right when square
        elif c.causal:
            kw["attn_mask"] = causal_lower_right(c.qo_len, c.kv_len)
        held = []

        def fn():
            with sdpa_kernel([backend]):
                held[:] = [F.scaled_dot_product_attention(q, k, v, **kw)]

        def out():
            return held[0].transpose(1, 2).reshape(x.q.shape)

        return fn, out, dict


# --- FlexAttention -----------------------------------------------------------------------------

_FLEX = None


def _flex():
    global _FLEX
    if _FLEX is None:
        import torch._dynamo
        from torch.nn.attention.flex_attention import flex_attention

        # Each mask / shape is a recompile; the default limit (8) would silently fall back
        # to the eager (very slow) path partway through the matrix.
        torch._dynamo.config.cache_size_limit = 256
        if hasattr(torch._dynamo.config, "accumulated_cache_size_limit"):
            torch._dynamo.config.accumulated_cache_size_limit = 4096
        _FLEX = torch.compile(flex_attention)
    return _FLEX


def _mask_mod(offset: int, causal: bool, window: int, window_right: int = -1):
    """SPEC.md's visibility with bottom-right alignment p = q_idx + offset. The numbers are
    captured as tensors so that a new window or offset is an input, not a recompile."""
    off = torch.tensor(offset, device="cuda")
    win = torch.tensor(window, device="cuda")
    if window_right >= 0:  # non-causal (causal is window_right 0), both sides bounded
        right = torch.tensor(window_right, device="cuda")
        return lambda b, h, q, kv: (kv >= q + off - win) & (kv <= q + off + right)
    if causal and window >= 0:
        return lambda b, h, q, kv: (kv <= q + off) & (kv >= q + off - win)
    if causal:
        return lambda b, h, q, kv: kv <= q + off
    return lambda b, h, q, kv: kv >= q + off - win


class Flex:
    name = "flex"

    def skip_reason(self, c: Case) -> Optional[str]:
        if c.section not in ("window", "chunk", "window_right"):
            return "FlexAttention is the peer of the window, chunk and window_right sections only"
        if c.logits_soft_cap > 0:
            return "the Flex peer here has no soft cap"
        return None

    def prepare(self, x: Inputs):
        from torch.nn.attention.flex_attention import create_block_mask

        c = x.case
        flex = _flex()
        # FlexAttention's own layout, [B, H, S, D] contiguous (a copy made outside the timing).
        q = x.q_view().contiguous()
        k, v = (t.contiguous() for t in x.contiguous_kv_views())
        block_mask = None
        if c.causal or c.window_left >= 0:
            block_mask = create_block_mask(_mask_mod(c.kv_len - c.qo_len, c.causal, c.window_left,
                                                     c.window_right),
                                           None, None, c.qo_len, c.kv_len, device="cuda")
        gqa = c.num_qo_heads != c.num_kv_heads
        held = []

        def fn():
            held[:] = [flex(q, k, v, block_mask=block_mask, enable_gqa=gqa)]

        def out():
            return held[0].transpose(1, 2).reshape(x.q.shape)

        return fn, out, dict


def implementations() -> List[object]:
    """Every flashband GPU backend in this build, then the peers."""
    impls: List[object] = [Flashband(b) for b in flashband.built_backends() if b != "cpu"]
    impls += [FlashbandGraph(b) for b in flashband.built_backends() if b in ("sm80", "cudnn")]
    impls += [Sdpa("sdpa-cudnn", "CUDNN_ATTENTION"), Sdpa("sdpa-fa2", "FLASH_ATTENTION"), Flex()]
    return impls


# --- ceilings ----------------------------------------------------------------------------------

def ceilings(time_ms: Callable[[Callable[[], object]], float]) -> Dict[str, object]:
    """Device-to-device copy bandwidth (bytes read + written) and the bf16 GEMM rate."""
    out: Dict[str, object] = {}
    src = torch.randn(1 << 29, device="cuda", dtype=DTYPE)  # 1 GiB
    dst = torch.empty_like(src)
    ms = time_ms(lambda: dst.copy_(src))
    out["copy_tbps"] = 2 * src.numel() * src.element_size() / ms / 1e9
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=DTYPE)
    b = torch.randn(n, n, device="cuda", dtype=DTYPE)
    start = time.time()
    ms = time_ms(lambda: a @ b)
    out["gemm_tflops"] = 2 * n ** 3 / ms / 1e9
    out["gemm_window"] = [start, time.time()]  # its SM clock (gpu_clock.attach)
    return out


def versions() -> Dict[str, object]:
    import platform
    import subprocess

    import triton

    props = torch.cuda.get_device_properties(0)
    info = {
        "gpu": torch.cuda.get_device_name(0),
        "compute_capability": "%d.%d" % torch.cuda.get_device_capability(0),
        "sm_count": props.multi_processor_count,
        "gpu_memory_gib": round(props.total_memory / 2**30, 1),
        "torch": torch.__version__,
        "cuda_runtime": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "triton": triton.__version__,
        "python": platform.python_version(),
        "flashband": flashband.__version__,
        "flashband_backends": list(flashband.built_backends()),
    }
    try:
        info["driver"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=10).stdout.strip().splitlines()[0]
    except Exception:  # nvidia-smi is optional
        pass
    return info
