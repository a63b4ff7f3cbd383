"""Sections 9-12 of benchmarks.md: issue 65's fp8 KV cache and issue 66's mask variants
(attention sinks, a tree-verify custom mask, window_right). Each row sits beside the same
problem without the feature, and the ratio columns compare each flashband backend with
itself; a backend that refuses a row shows its reason as a footnote. The goals, with
pass/fail, are in section 7 (targets.feature_rows). Sections the run lacks are left out,
so a run of BENCH.md's matrix renders as it did."""

from __future__ import annotations

from typing import Callable, List, Optional, Tuple

import targets
from report import Footnotes, _decode_extra, _section_table, ok, short

Section = Tuple[str, str, List[str]]


def _per_backend(case: dict, base: Optional[dict], ratio: Callable[[dict, dict], float]) -> str:
    """ratio(row's result, base's result) for each flashband backend (not graph rows) that
    has a trusted reading of both, e.g. "sm80 0.52, sm90 0.61"."""
    if not base or base is case:
        return ""
    parts = []
    for n, r in case["results"].items():
        b = base["results"].get(n)
        if n.startswith("flashband") and not n.endswith("(graph)") and ok(r) and ok(b):
            parts.append(f"{short(n)} {ratio(r, b):.2f}")
    return ", ".join(parts)


def _time_ratio(results: dict, **plot) -> Callable[[dict], str]:
    """This row's time over that of its base (plot values changed as given)."""
    return lambda c: _per_backend(c, targets.base_of(results, c, **plot), lambda r, b: r["ms"] / b["ms"])


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 2**10:.0f} KiB"


def _workspace(results: dict) -> Callable[[dict], str]:
    """workspace_size() (float + int buffers) and the plan's KV splits, fp8 and bf16."""
    def f(c: dict) -> str:
        base = targets.base_of(results, c, kv_dtype="bf16")
        if c["plot"]["kv_dtype"] == "bf16" or not base:
            return ""
        parts = []
        for n, r in c["results"].items():
            b = base["results"].get(n)
            if not (ok(r) and ok(b) and "workspace_bytes" in r and "workspace_bytes" in b):
                continue
            sizes = [" + ".join(_mib(x) for x in w["workspace_bytes"]) + f", {w.get('num_kv_splits', '?')} splits"
                     for w in (r, b)]
            parts.append(f"{short(n)}: {sizes[0]} (bf16 {sizes[1]})")
        return "; ".join(parts)
    return f


def _band_share(results: dict) -> Callable[[dict], str]:
    def f(c: dict) -> str:
        dense = targets.base_of(results, c, W=-1)
        if c["plot"]["W"] < 0 or not dense:
            return ""
        parts = []
        for n in c["results"]:
            t, ref = targets.band_share_pair(results, c, n)
            if n.startswith("flashband") and not n.endswith("(graph)") and t and ref:
                parts.append(f"{short(n)} {t / ref:.2f}")
        floor = targets.tile_floor(c["plot"]["S"], c["plot"]["W"], False, window_right=c["plot"]["W"])
        return ", ".join(parts) + f" (share {c['flops'] / dense['flops']:.3f}, 128² tiles >= {floor:.2f})"
    return f


def sections(results: dict, notes: Footnotes) -> List[Section]:
    present = {c["section"] for c in results["cases"]}
    out: List[Section] = []
    table = lambda section, keys, extra=None, where=lambda c: True: _section_table(
        results, section, keys, notes, extra, where, refusals=True)
    if "fp8kv" in present:
        decode = lambda c: c["plot"]["part"] == "decode"
        out.append((
            "9. fp8 KV cache (issue 65)",
            "Each shape with a bf16 cache, then an e4m3 one (k_scale 0.37, v_scale 0.61, floats on "
            "every run). Decode (page 16, Hq = 32, Hk = 8, D = 128): TB/s of the bytes moved, K and "
            "V at one byte an element in the e4m3 rows; the peers read the bf16 row's cache. The "
            "time ratio is each backend's e4m3 row over its bf16 row (goal <= 0.55); workspace: "
            "`workspace_size()` (float + int buffers) and the plan's KV splits.",
            table("fp8kv", ["B", "kv", "kv_dtype"],
                  [_decode_extra(results), ("time e4m3 / bf16", _time_ratio(results, kv_dtype="bf16")),
                   ("workspace e4m3 (bf16)", _workspace(results))], decode)
            + ["", "Paged prefill (page 16; the dense shapes and chunk 512 over 32k), TFLOP/s; the "
               "ratio is each backend's e4m3 TFLOP/s over its bf16 row's (goal >= 0.95)", ""]
            + table("fp8kv", ["shape", "kv_dtype"],
                    ("e4m3 / bf16 TFLOP/s", lambda c: _per_backend(
                        c, targets.base_of(results, c, kv_dtype="bf16"), lambda r, b: r["tflops"] / b["tflops"])),
                    lambda c: not decode(c))))
    if "sinks" in present:
        out.append((
            "10. Attention sinks (issue 66)",
            "Paged decode (Hq = 32, Hk = 8, D = 128) and paged prefill (D = 128, H = 16, B·S = 16k), "
            "page 16, each without and with float32 [Hq] sinks; the ratio is each backend's time "
            "with sinks over without (goal <= 1.03).",
            table("sinks", ["shape", "sinks"], ("time with / without", _time_ratio(results, sinks=False)))))
    if "mask" in present:
        out.append((
            "11. Tree-verify custom mask (issue 66)",
            "16 requests of 64 draft tokens over a prefix (paged, page 16, Hq = 32, Hk = 8, D = "
            "128): the prefix all visible and each draft token itself and its ancestors in a random "
            "tree (`cases.tree_parents`), beside the same problem causal. TFLOP/s of visible pairs; "
            "the ratio is each backend's causal time over its tree time (speed of the same problem, "
            "goal >= 0.9).",
            table("mask", ["prefix", "mask"], ("causal time / tree time", lambda c: _per_backend(
                c, targets.base_of(results, c, mask="causal"), lambda r, b: b["ms"] / r["ms"])))))
    if "window_right" in present:
        out.append((
            "12. Two-sided window (issue 66)",
            "Bidirectional local attention: window_left = window_right = W, non-causal, ragged, D = "
            "128, H = 16, B·S = 16k, beside the dense non-causal shape; TFLOP/s of visible pairs "
            "(keys p(i) - W .. p(i) + W). Band share: the time with the window over (visible-pair "
            "share x dense time), goal <= 1.1; whole 128 x 128 tiles alone cost the floor shown.",
            table("window_right", ["S", "W"], ("time / (share x dense)", _band_share(results)))))
    return out
