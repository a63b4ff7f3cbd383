"""The issues' performance targets (sm80: issue 3, sm90: issue 4; fp8 KV: issue 65; mask
variants: issue 66), checked against one benchmark run's results, so each run states what
it meets instead of a hand-made table.

Each target compares a flashband backend alone (not the best of flashband) with the peer the
issue names, in the same run: "cuDNN" is the faster of cuDNN through flashband's own graph
and through torch SDPA, "FA2" is torch SDPA's FlashAttention-2 and "Flex" FlexAttention.
A target whose rows did not run (a quick run, a failed implementation) reads "not run".
Issues 65 and 66 compare each flashband backend with itself on the same problem without
the feature; their rows appear where the run has their sections, one per backend that
ran there, and a backend that refuses the feature reads "refused" with the reason.
"""

from __future__ import annotations

from typing import Callable, List, Optional, Sequence, Tuple

from cases import visible_pairs
from report import ok as trusted, ragged_tflops

Row = Tuple[str, str, str, str]  # issue, target, measured, met


def _value(case: Optional[dict], impl: str, key: str = "tflops") -> Optional[float]:
    r = case["results"].get(impl) if case else None
    return r[key] if trusted(r) and key in r else None


def _find(results: dict, section: str, **plot) -> Optional[dict]:
    for c in results["cases"]:
        if c["section"] == section and all(c["plot"].get(k) == v for k, v in plot.items()):
            return c
    return None


def _cudnn(case: dict) -> Optional[float]:
    vals = [v for v in (_value(case, "flashband-cudnn"), _value(case, "sdpa-cudnn")) if v]
    return max(vals) if vals else None


def _span(values: Sequence[float]) -> str:
    lo, hi = min(values), max(values)
    return f"{lo:.2f}x" if abs(hi - lo) < 0.005 else f"{lo:.2f}-{hi:.2f}x"


def _ratio_row(issue: str, target: str, pairs: List[Tuple[Optional[float], Optional[float]]],
               ok: Callable[[float], bool]) -> Row:
    """pairs: (ours, reference); the target holds when ok() holds for every ratio."""
    ratios = [a / b for a, b in pairs if a and b]
    if not ratios:
        return issue, target, "not run", "—"
    if len(ratios) < len(pairs):
        return issue, target, _span(ratios) + f" ({len(pairs) - len(ratios)} of {len(pairs)} rows missing)", "no"
    return issue, target, _span(ratios), "yes" if all(ok(r) for r in ratios) else "no"


def tile_floor(S: int, W: int, causal: bool, tile_m: int = 128, tile_n: int = 128,
               window_right: int = -1) -> float:
    """The band share a kernel that computes whole tile_m x tile_n tiles cannot go below, for
    one square request of S tokens: (visited / visible pairs) with the window W (and
    window_right, non-causal) over the same without them. Each query tile visits every key
    tile that any of its rows can see."""
    def visited(w: int, r: int) -> int:
        tiles = 0
        for m in range(0, S, tile_m):
            first = max(0, m - w) if w >= 0 else 0
            last = min(S, m + tile_m) - 1 if causal else S - 1
            if r >= 0:
                last = min(last, min(S, m + tile_m) - 1 + r)
            tiles += last // tile_n - first // tile_n + 1
        return tiles * tile_m * tile_n
    return ((visited(W, window_right) / visible_pairs(S, S, causal, W, window_right))
            / (visited(-1, -1) / visible_pairs(S, S, causal, -1)))


def _floor_note(results: dict, W: int) -> str:
    """The whole-tile floor of the causal window rows of width W, on sm90's 128 x 128 masked
    tile (both sides of those ratios run it; unmasked problems take a wider tile)."""
    floors = [tile_floor(c["plot"]["S"], W, True) for c in results["cases"]
              if c["section"] == "window" and c["plot"]["W"] == W and c["plot"]["mask"] == "causal"]
    return f" (causal, whole 128 x 128 tiles: >= {_span(floors)})" if floors else ""


def _with_note(row: Row, note: str) -> Row:
    issue, target, measured, met = row
    return (issue, target, measured + note, met) if measured != "not run" else row


def _band_share(results: dict, impl: str, W: int) -> List[Tuple[Optional[float], Optional[float]]]:
    """Per window row: (time with the window, share of visible pairs x time without)."""
    pairs = []
    for c in results["cases"]:
        if c["section"] != "window" or c["plot"]["W"] != W:
            continue
        plain = _find(results, "window", S=c["plot"]["S"], W=-1, mask=c["plot"]["mask"])
        t, t0 = _value(c, impl, "ms"), _value(plain, impl, "ms")
        pairs.append((t, c["flops"] / plain["flops"] * t0 if plain and t0 else None))
    return pairs


def _paged(results: dict, impl: str, page: int) -> List[Tuple[Optional[float], Optional[float]]]:
    pairs = []
    for c in results["cases"]:
        if c["section"] == "paged" and c["plot"]["page_size"] == page:
            pairs.append((_value(c, impl), ragged_tflops(results, c["plot"]["shape"], impl)))
    return pairs


def rows(results: dict) -> List[Row]:
    out: List[Row] = []
    dense = [c for c in results["cases"] if c["section"] == "dense"]
    sm90 = "flashband-sm90"
    out.append(_ratio_row("4", "sm90 dense >= 1.10x cuDNN, S >= 2k",
                          [(_value(c, sm90), _cudnn(c)) for c in dense if c["plot"]["S"] >= 2048],
                          lambda r: r >= 1.10))
    out.append(_ratio_row("4", "sm90 dense >= 1.0x cuDNN, S = 512",
                          [(_value(c, sm90), _cudnn(c)) for c in dense if c["plot"]["S"] == 512],
                          lambda r: r >= 1.0))
    big = _value(_find(results, "dense", D=128, S=16384, mask="non-causal"), sm90)
    gemm = results.get("ceilings", {}).get("gemm_tflops")
    out.append(("4", "sm90 D=128 S=16k non-causal >= 680 TFLOP/s",
                f"{big:.0f}" + (f" ({100 * big / gemm:.0f}% of this run's GEMM {gemm:.0f})" if gemm else "")
                if big else "not run", ("yes" if big >= 680 else "no") if big else "—"))
    out.append(_ratio_row("4", "sm90 causal W=4096 S=16k >= 1.5x Flex",
                          [(_value(c, sm90), _value(c, "flex"))
                           for c in [_find(results, "window", S=16384, W=4096, mask="causal")] if c],
                          lambda r: r >= 1.5))
    for W in (4096, 1024):
        out.append(_with_note(_ratio_row("4", f"sm90 window W={W} time <= 1.1x band share",
                                         _band_share(results, sm90, W), lambda r: r <= 1.1),
                              _floor_note(results, W)))
    chunk = _find(results, "chunk", chunk=512, W=-1)
    ref = _find(results, "dense", D=128, S=16384, mask="non-causal")
    out.append(_ratio_row("4", "sm90 chunk 512 over 32k >= 0.70x dense D=128 16k",
                          [(_value(chunk, sm90), _value(ref, sm90))] if chunk and ref else [],
                          lambda r: r >= 0.70))
    out.append(_ratio_row("4", "sm90 paged page 16 >= 0.95x ragged", _paged(results, sm90, 16), lambda r: r >= 0.95))
    out.append(_ratio_row("4", "sm90 paged page 1 >= 0.85x ragged", _paged(results, sm90, 1), lambda r: r >= 0.85))
    sm80 = "flashband-sm80"
    out.append(_ratio_row("3", "sm80 dense D=128 >= 1.1x FA2",
                          [(_value(c, sm80), _value(c, "sdpa-fa2")) for c in dense if c["plot"]["D"] == 128],
                          lambda r: r >= 1.1))
    for W in (1024, 4096):
        out.append(_ratio_row("3", f"sm80 window W={W} time <= 1.2x band share", _band_share(results, sm80, W),
                              lambda r: r <= 1.2))
    out.append(_ratio_row("3", "sm80 paged page 16 >= 0.9x ragged", _paged(results, sm80, 16), lambda r: r >= 0.9))
    dec = _find(results, "decode", B=128, kv=32768)
    copy = results.get("ceilings", {}).get("copy_tbps")
    out.append(_ratio_row("3", "sm80 decode B=128 kv=32k >= 80% of copy bandwidth",
                          [(_value(dec, sm80, "tbps"), copy)] if dec else [], lambda r: r >= 0.8))
    return out


def base_of(results: dict, case: dict, **plot) -> Optional[dict]:
    """The case of case's section whose plot is case's with these values: the same problem
    without the feature."""
    return _find(results, case["section"], **dict(case["plot"], **plot))


def backends(results: dict, section: str) -> List[str]:
    """flashband backends (not graph rows) with a trusted reading in the section."""
    names: List[str] = []
    for c in results["cases"]:
        for n, r in c["results"].items():
            if (c["section"] == section and n.startswith("flashband") and not n.endswith("(graph)")
                    and trusted(r) and n not in names):
                names.append(n)
    return names


def _feature_row(issue: str, target: str, cases: List[dict], impl: str,
                 pair: Callable[[dict], Tuple[Optional[float], Optional[float]]],
                 ok: Callable[[float], bool]) -> Row:
    """_ratio_row over pair(case) for the feature's cases; where impl refused every one of
    them, the reason (the goal is not met)."""
    row = _ratio_row(issue, target, [pair(c) for c in cases], ok)
    refused = [c["results"][impl]["skipped"] for c in cases if "skipped" in c["results"].get(impl, {})]
    if refused and len(refused) == len(cases):
        return issue, target, "refused: " + refused[0][:120], "no"
    return row


def _workspace_growth(case: dict, base: Optional[dict], impl: str) -> Optional[float]:
    """The larger of workspace_size()'s bytes (float + int buffers) and the plan's KV splits
    (its scratch of partial states grows with them), fp8 over bf16."""
    r, b = case["results"].get(impl), base["results"].get(impl) if base else None
    if not (trusted(r) and trusted(b) and "workspace_bytes" in r and "workspace_bytes" in b):
        return None
    growth = sum(r["workspace_bytes"]) / max(sum(b["workspace_bytes"]), 1)
    if r.get("num_kv_splits") and b.get("num_kv_splits"):
        growth = max(growth, r["num_kv_splits"] / b["num_kv_splits"])
    return growth


def feature_rows(results: dict) -> List[Row]:
    """Issue 65's and 66's goals, for the sections this run has."""
    out: List[Row] = []
    by = lambda section, **plot: [c for c in results["cases"] if c["section"] == section
                                  and all(c["plot"].get(k) == v for k, v in plot.items())]
    copy = results.get("ceilings", {}).get("copy_tbps")
    for impl in backends(results, "fp8kv"):
        n = impl.replace("flashband-", "")
        dec = by("fp8kv", part="decode", kv_dtype="e4m3")
        bf16 = lambda c: base_of(results, c, kv_dtype="bf16")
        out.append(_feature_row("65", f"{n} fp8 decode B >= 16: >= 90% of copy bandwidth",
                                [c for c in dec if c["plot"]["B"] >= 16], impl,
                                lambda c: (_value(c, impl, "tbps"), copy), lambda r: r >= 0.9))
        out.append(_feature_row("65", f"{n} fp8 decode time <= 0.55x bf16", dec, impl,
                                lambda c: (_value(c, impl, "ms"), _value(bf16(c), impl, "ms")),
                                lambda r: r <= 0.55))
        out.append(_feature_row("65", f"{n} fp8 decode workspace and KV splits <= bf16's", dec, impl,
                                lambda c: (_workspace_growth(c, bf16(c), impl), 1.0), lambda r: r <= 1.0))
        out.append(_feature_row("65", f"{n} fp8 paged prefill >= 0.95x bf16",
                                by("fp8kv", part="prefill", kv_dtype="e4m3"), impl,
                                lambda c: (_value(c, impl), _value(bf16(c), impl)), lambda r: r >= 0.95))
    for impl in backends(results, "sinks"):
        out.append(_feature_row("66", f"{impl.replace('flashband-', '')} sinks cost <= 3%",
                                by("sinks", sinks=True), impl,
                                lambda c: (_value(c, impl, "ms"), _value(base_of(results, c, sinks=False), impl, "ms")),
                                lambda r: r <= 1.03))
    for impl in backends(results, "mask"):
        # speed of the same problem: causal time over tree time
        out.append(_feature_row("66", f"{impl.replace('flashband-', '')} tree mask >= 0.9x causal speed",
                                by("mask", mask="tree"), impl,
                                lambda c: (_value(base_of(results, c, mask="causal"), impl, "ms"), _value(c, impl, "ms")),
                                lambda r: r >= 0.9))
    for impl in backends(results, "window_right"):
        for W in sorted({c["plot"]["W"] for c in by("window_right") if c["plot"]["W"] >= 0}):
            rows_w = by("window_right", W=W)
            floors = [tile_floor(c["plot"]["S"], W, False, window_right=W) for c in rows_w]
            out.append(_with_note(_feature_row(
                "66", f"{impl.replace('flashband-', '')} window_right W={W}/{W} time <= 1.1x band share",
                rows_w, impl, lambda c: band_share_pair(results, c, impl), lambda r: r <= 1.1),
                f" (whole 128 x 128 tiles: >= {_span(floors)})"))
    return out


def band_share_pair(results: dict, case: dict, impl: str) -> Tuple[Optional[float], Optional[float]]:
    """(time with the two-sided window, share of visible pairs x the dense time)."""
    dense = base_of(results, case, W=-1)
    t, t0 = _value(case, impl, "ms"), _value(dense, impl, "ms")
    return t, case["flops"] / dense["flops"] * t0 if dense and t0 else None


def table(results: dict) -> List[str]:
    lines = ["| issue | target | measured | met |", "|---|---|---|---|"]
    lines += [f"| {i} | {t} | {m} | {ok} |" for i, t, m, ok in rows(results) + feature_rows(results)]
    return lines
