"""The BENCH.md matrix as plain data, and how each case is counted (no torch needed, so the
report can be rendered and self-tested anywhere).

FLOPs = 4 * D * visible (query, key) pairs, summed over query heads and requests: masked
pairs do not count. Decode is memory-bound and counted in bytes moved at least once:
Q, K and V of the visible keys, and O.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional

TOKENS = 16 * 1024   # B * S of the dense and window cases (BENCH.md)
HIDDEN = 2048        # H * D
BF16 = 2             # bytes per element


def visible_pairs(qo_len: int, kv_len: int, causal: bool, window_left: int) -> int:
    """SPEC.md's visibility rule, bottom-right aligned, counted per head of one request."""
    total = 0
    offset = kv_len - qo_len
    for i in range(qo_len):
        p = i + offset
        hi = min(p, kv_len - 1) if causal else kv_len - 1
        lo = max(0, p - window_left) if window_left >= 0 else 0
        total += max(0, hi - lo + 1)
    return total


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

    @property
    def op(self) -> str:
        if self.section == "decode":
            return "paged_decode"
        return "paged_prefill" if self.page_size else "ragged_prefill"

    @property
    def flops(self) -> float:
        pairs = visible_pairs(self.qo_len, self.kv_len, self.causal, self.window_left)
        return 4.0 * self.head_dim * pairs * self.num_qo_heads * self.batch

    @property
    def bytes(self) -> float:
        """Q, O and the K, V of the keys some query sees (each read once)."""
        first = max(0, self.kv_len - self.qo_len - self.window_left) if self.window_left >= 0 else 0
        keys = self.kv_len - first
        kv = 2 * keys * self.num_kv_heads * self.head_dim
        qo = 2 * self.qo_len * self.num_qo_heads * self.head_dim
        return float(BF16 * self.batch * (kv + qo))

    @property
    def memory_bound(self) -> bool:
        return self.section == "decode"

    def describe(self) -> Dict[str, object]:
        d = dataclasses.asdict(self)
        d.pop("plot")
        return d


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


SECTIONS = {"dense": dense, "window": window, "chunk": chunk, "paged": paged, "decode": decode,
            "prompt": prompt}


def matrix(quick: bool, sections: Optional[List[str]] = None) -> List[Case]:
    out = []
    for name, make in SECTIONS.items():
        if sections is None or name in sections:
            out.extend(make(quick))
    return out
