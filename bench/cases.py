"""The BENCH.md matrix as plain data, and how each case is counted (no torch needed, so the
report can be rendered and self-tested anywhere).

FLOPs = 4 * D * visible (query, key) pairs, summed over query heads and requests: masked
pairs do not count. Decode is memory-bound and counted in bytes moved at least once:
Q, K and V of the visible keys, and O; an fp8 cache's K and V at one byte an element.

The sections after BENCH.md's matrix time issue 65's fp8 KV cache and issue 66's mask
variants, each row beside the same problem without the feature.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Dict, List, Optional, Sequence

TOKENS = 16 * 1024   # B * S of the dense and window cases (BENCH.md)
HIDDEN = 2048        # H * D
BF16 = 2             # bytes per element
FP8 = 1
E4M3 = "float8_e4m3fn"
FP8_SCALES = (0.37, 0.61)  # k_scale, v_scale of the fp8 rows: not 1.0, so the scale path is timed;
# under 1 (as amax / 448 scales are), so |out| stays where bf16 rounding is under report.MISMATCH
TREE_SEED = 0        # the tree-verify rows' draft tree (tree_parents)


def visible_pairs(qo_len: int, kv_len: int, causal: bool, window_left: int,
                  window_right: int = -1) -> int:
    """SPEC.md's visibility rule, bottom-right aligned, counted per head of one request;
    window_right = r >= 0 keeps keys j <= p(i) + r (causal is r = 0)."""
    total = 0
    offset = kv_len - qo_len
    for i in range(qo_len):
        p = i + offset
        hi = min(p, kv_len - 1) if causal else kv_len - 1
        if window_right >= 0:
            hi = min(hi, p + window_right)
        lo = max(0, p - window_left) if window_left >= 0 else 0
        total += max(0, hi - lo + 1)
    return total


def tree_parents(n: int, seed: int) -> List[int]:
    """A random tree over n draft tokens in topological order: parents[i] < i, and the root
    (token 0) has parent -1, the prefix's last token."""
    rnd = random.Random(seed)
    return [-1] + [rnd.randrange(i) for i in range(1, n)]


def tree_lineage(parents: Sequence[int], i: int) -> List[int]:
    """Draft token i and its ancestors: the draft keys row i sees."""
    out = []
    while i >= 0:
        out.append(i)
        i = parents[i]
    return out


def tree_pairs(prefix: int, parents: Sequence[int]) -> int:
    """Visible pairs of one request's tree-verify mask: every draft row sees the whole
    prefix, itself and its ancestors."""
    return sum(prefix + len(tree_lineage(parents, i)) for i in range(len(parents)))


@dataclasses.dataclass
class Case:
    section: str                 # dense | window | chunk | paged | decode | prompt
    name: str                    # unique, human-readable
    batch: int
    qo_len: int                  # per request
    kv_len: int                  # per request
    num_qo_heads: int
    num_kv_heads: int
    head_dim: int
    causal: bool
    window_left: int = -1
    page_size: int = 0           # 0: ragged (contiguous) KV
    plot: Dict[str, object] = dataclasses.field(default_factory=dict)  # axes for the report
    logits_soft_cap: float = 0.0  # 0: none (bench/probe.py --softcap; run.py's cases have none)
    # Issues 65 and 66 (describe() leaves them out at these defaults, so the BENCH.md rows
    # keep their params):
    decode: bool = False         # the paged decode entry point outside the decode section
    kv_dtype: str = ""           # "": K/V in q's dtype (bf16); else torch's fp8 name
    k_scale: float = 1.0
    v_scale: float = 1.0
    sinks: bool = False          # runs pass attention sinks (float32 [Hq])
    window_right: int = -1
    tree_mask_seed: int = -1     # >= 0: a tree-verify custom mask over the qo_len draft tokens

    @property
    def op(self) -> str:
        if self.section == "decode" or self.decode:
            return "paged_decode"
        return "paged_prefill" if self.page_size else "ragged_prefill"

    @property
    def tree(self) -> Optional[List[int]]:
        return tree_parents(self.qo_len, self.tree_mask_seed) if self.tree_mask_seed >= 0 else None

    @property
    def pairs(self) -> int:
        """Visible pairs of one request and head."""
        if self.tree is not None:
            return tree_pairs(self.kv_len - self.qo_len, self.tree)
        return visible_pairs(self.qo_len, self.kv_len, self.causal, self.window_left, self.window_right)

    @property
    def feature_args(self) -> Dict[str, object]:
        """The supports() / select_backend() arguments of issues 65 and 66 this case sets."""
        args: Dict[str, object] = {}
        if self.window_right >= 0:
            args["window_right"] = self.window_right
        if self.kv_dtype:
            args["kv_dtype"] = self.kv_dtype
        if self.sinks:
            args["sinks"] = True
        if self.tree is not None:
            args["custom_mask"] = True
        return args

    @property
    def flops(self) -> float:
        return 4.0 * self.head_dim * self.pairs * self.num_qo_heads * self.batch

    @property
    def kv_element_bytes(self) -> int:
        return FP8 if self.kv_dtype.startswith("float8") else BF16

    @property
    def bytes(self) -> float:
        """Q, O and the K, V of the keys some query sees (each read once), K and V at their
        storage size."""
        first = max(0, self.kv_len - self.qo_len - self.window_left) if self.window_left >= 0 else 0
        keys = self.kv_len - first
        kv = 2 * keys * self.num_kv_heads * self.head_dim
        qo = 2 * self.qo_len * self.num_qo_heads * self.head_dim
        return float(self.batch * (self.kv_element_bytes * kv + BF16 * qo))

    @property
    def memory_bound(self) -> bool:
        return self.op == "paged_decode"

    def describe(self) -> Dict[str, object]:
        d = dataclasses.asdict(self)
        d.pop("plot")
        for f in dataclasses.fields(self):
            if f.name in _EXTENSIONS and d[f.name] == f.default:
                d.pop(f.name)
        return d


_EXTENSIONS = ("decode", "kv_dtype", "k_scale", "v_scale", "sinks", "window_right", "tree_mask_seed")


def _mask_name(causal: bool) -> str:
    return "causal" if causal else "non-causal"


def dense(quick: bool) -> List[Case]:
    dims = [128] if quick else [64, 128, 256]
    lens = [2048, 16384] if quick else [512, 2048, 8192, 16384]
    cases = []
    for d in dims:
        for s in lens:
            for causal in (False, True):
                h = HIDDEN // d
                cases.append(Case("dense", f"dense D={d} S={s} {_mask_name(causal)}", TOKENS // s,
                                  s, s, h, h, d, causal,
                                  plot=dict(D=d, S=s, mask=_mask_name(causal))))
    return cases


def window(quick: bool) -> List[Case]:
    lens = [16384] if quick else [8192, 16384, 32768]
    windows = [4096, -1] if quick else [1024, 4096, -1]
    causals = (True,) if quick else (False, True)
    cases = []
    d, h = 128, HIDDEN // 128
    for s in lens:
        for w in windows:
            for causal in causals:
                label = f"W={w}" if w >= 0 else "no window"
                cases.append(Case("window", f"window S={s} {label} {_mask_name(causal)}",
                                  max(1, TOKENS // s), s, s, h, h, d, causal, w,
                                  plot=dict(S=s, W=w, mask=_mask_name(causal))))
    return cases


def chunk(quick: bool) -> List[Case]:
    chunks = [512] if quick else [256, 512, 2048]
    windows = [-1] if quick else [-1, 4096]
    cases = []
    for w in windows:
        for c in chunks:
            label = f" W={w}" if w >= 0 else ""
            cases.append(Case("chunk", f"chunk {c} over 32k{label}", 1, c, 32768, 8, 1, 128,
                              True, w, plot=dict(chunk=c, W=w)))
    return cases


def paged(quick: bool) -> List[Case]:
    """The dense and window cases with pages, between two readings of the same shape ragged
    (page_size 0, before and after the pages: the ratios divide by their mean, and the pair
    shows a drift of the GPU's clocks within the shape). D = 128 takes every mask; D = 64 and
    256, whose paged kernels gather rows of other widths, one short non-causal and one long
    causal shape each."""
    shapes = [(16384, True, -1, 128)] if quick else [
        (2048, False, -1, 128), (2048, True, -1, 128), (16384, False, -1, 128),
        (16384, True, -1, 128), (16384, True, 4096, 128),
        (2048, False, -1, 64), (16384, True, -1, 64), (2048, False, -1, 256), (16384, True, -1, 256)]
    pages = [0, 16] if quick else [0, 1, 16, 128]
    cases = []
    for s, causal, w, d in shapes:
        h = HIDDEN // d
        shape = f"D={d} S={s} {_mask_name(causal)}" + (f" W={w}" if w >= 0 else "")
        for p, again in [(p, False) for p in pages] + [(0, True)]:
            kind = "ragged again" if again else f"page {p}" if p else "ragged"
            cases.append(Case("paged", f"paged {shape} {kind}", TOKENS // s, s, s, h, h, d,
                              causal, w, p, plot=dict(shape=shape, page_size=p, again=again)))
    return cases


def decode(quick: bool) -> List[Case]:
    batches = [16] if quick else [1, 16, 128]
    lens = [32768] if quick else [2048, 32768]
    return [Case("decode", f"decode B={b} kv={kv}", b, 1, kv, 32, 8, 128, False, -1, 16,
                 plot=dict(B=b, kv=kv))
            for kv in lens for b in batches]


def prompt(quick: bool) -> List[Case]:
    """One long causal prompt over few heads, as a GPU holds it under tensor parallelism
    (S x H = 16k rows x heads, D = 128): too few query tiles to fill the GPU twice, so how
    the longest ones are scheduled (split-KV) decides the time. Last in the run: a time
    budget spent early skips it before BENCH.md's sections."""
    lens = [4096] if quick else [2048, 4096, 8192, 16384]
    return [Case("prompt", f"prompt S={s} H={TOKENS // s}", 1, s, s, TOKENS // s, TOKENS // s, 128, True,
                 plot=dict(S=s, H=TOKENS // s))
            for s in lens]


def _kv_label(kv_dtype: str) -> str:
    return "e4m3" if kv_dtype == E4M3 else "bf16"


def fp8kv(quick: bool) -> List[Case]:
    """Issue 65: each shape with a bf16 cache, then with an e4m3 one (scales FP8_SCALES).
    Decode as section 5 (its peers read the bf16 row); paged prefill (page 16) as the dense
    rows and chunk 512 over 32k, against the same backend's bf16 row."""
    scales = dict(zip(("k_scale", "v_scale"), FP8_SCALES))
    cases = []
    batches = [16] if quick else [1, 16, 128]
    lens = [32768] if quick else [2048, 32768]
    for kv in lens:
        for b in batches:
            for dt in ("", E4M3):
                cases.append(Case("fp8kv", f"fp8kv decode B={b} kv={kv} {_kv_label(dt)}", b, 1, kv, 32, 8,
                                  128, False, -1, 16, decode=True, kv_dtype=dt, **(scales if dt else {}),
                                  plot=dict(part="decode", B=b, kv=kv, kv_dtype=_kv_label(dt))))
    dims = [128] if quick else [64, 128, 256]
    seqs = [16384] if quick else [2048, 16384]
    causals = (True,) if quick else (False, True)
    shapes = [(f"D={d} S={s} {_mask_name(c)}", TOKENS // s, s, s, HIDDEN // d, HIDDEN // d, d, c)
              for d in dims for s in seqs for c in causals]
    if not quick:
        shapes.append(("chunk 512 over 32k", 1, 512, 32768, 8, 1, 128, True))
    for shape, b, qo, kv, hq, hk, d, causal in shapes:
        for dt in ("", E4M3):
            cases.append(Case("fp8kv", f"fp8kv paged {shape} {_kv_label(dt)}", b, qo, kv, hq, hk, d, causal,
                              -1, 16, kv_dtype=dt, **(scales if dt else {}),
                              plot=dict(part="prefill", shape=shape, kv_dtype=_kv_label(dt))))
    return cases


def sinks(quick: bool) -> List[Case]:
    """Issue 66 (a): paged decode and paged prefill (page 16) without, then with, sinks."""
    shapes = []
    for kv in [32768] if quick else [2048, 32768]:
        for b in [16] if quick else [1, 128]:
            shapes.append((f"decode B={b} kv={kv}", dict(batch=b, qo_len=1, kv_len=kv, num_qo_heads=32,
                                                         num_kv_heads=8, causal=False, decode=True)))
    for s in [16384] if quick else [2048, 16384]:
        for causal in (True,) if quick else (False, True):
            shapes.append((f"paged D=128 S={s} {_mask_name(causal)}",
                           dict(batch=TOKENS // s, qo_len=s, kv_len=s, num_qo_heads=HIDDEN // 128,
                                num_kv_heads=HIDDEN // 128, causal=causal)))
    return [Case("sinks", f"sinks {shape} {'with' if on else 'without'}", head_dim=128, page_size=16,
                 sinks=on, plot=dict(shape=shape, sinks=on), **kw)
            for shape, kw in shapes for on in (False, True)]


DRAFT = 64  # tree-verify rows: draft tokens per request


def mask(quick: bool) -> List[Case]:
    """Issue 66 (b): tree-verify, B = 16 requests of DRAFT draft tokens over a prefix
    (paged, page 16, Hq 32, Hk 8, D 128): the prefix all visible, each draft token seeing
    itself and its ancestors in a random tree (tree_parents), beside the same problem
    causal (the draft tokens a chain)."""
    cases = []
    for prefix in [4096] if quick else [4096, 32768]:
        for tree in (False, True):
            kind = "tree" if tree else "causal"
            cases.append(Case("mask", f"mask {DRAFT} drafts over {prefix} {kind}", 16, DRAFT, prefix + DRAFT,
                              32, 8, 128, not tree, -1, 16, tree_mask_seed=TREE_SEED if tree else -1,
                              plot=dict(prefix=prefix, mask=kind)))
    return cases


def window_right(quick: bool) -> List[Case]:
    """Issue 66 (c): bidirectional local attention (window_left = window_right = W,
    non-causal; ModernBERT's local layers take W = 64 a side) beside the dense non-causal
    shape, ragged, D = 128, H = 16, B·S = 16k."""
    cases = []
    d, h = 128, HIDDEN // 128
    for s in [8192] if quick else [8192, 32768]:
        for w in [128, -1] if quick else [128, 1024, -1]:
            label = f"W={w}/{w}" if w >= 0 else "dense"
            cases.append(Case("window_right", f"window_right S={s} {label}", max(1, TOKENS // s), s, s, h, h, d,
                              False, w, window_right=w, plot=dict(S=s, W=w)))
    return cases


def shrunk(c: Case) -> Case:
    """The same case at a size the cpu backend runs in a moment (run.py --dry-run): batch <=
    2, queries <= 64 (decode 1), keys <= 256 (a square case stays square, a tree keeps its
    drafts over a shorter prefix), each at least one page, windows / 32."""
    qo = 1 if c.op == "paged_decode" else min(c.qo_len, max(64, c.page_size))
    kv = qo if c.qo_len == c.kv_len else min(c.kv_len, max(256, c.page_size))
    window = lambda w: w if w <= 0 else max(1, w // 32)
    return dataclasses.replace(c, batch=min(c.batch, 2), qo_len=qo, kv_len=kv,
                               window_left=window(c.window_left), window_right=window(c.window_right))


def without_features(c: Case) -> Case:
    """c with issue 65's scales and issue 66's variants dropped (a tree becomes causal): a
    reference for it must differ from c's, or the spot check could not see an ignored one."""
    return dataclasses.replace(c, k_scale=1.0, v_scale=1.0, sinks=False, window_right=-1,
                               tree_mask_seed=-1, causal=c.causal or c.tree is not None)


SECTIONS = {"dense": dense, "window": window, "chunk": chunk, "paged": paged, "decode": decode,
            "prompt": prompt, "fp8kv": fp8kv, "sinks": sinks, "mask": mask, "window_right": window_right}


def matrix(quick: bool, sections: Optional[List[str]] = None) -> List[Case]:
    out = []
    for name, make in SECTIONS.items():
        if sections is None or name in sections:
            out.extend(make(quick))
    return out
