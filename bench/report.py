"""Renders bench results (the dict run.py writes to results.json) as docs/benchmarks.md and
a few PNG plots. Needs no GPU and no torch; matplotlib is optional (plots are skipped, and
the page says so, without it)."""

from __future__ import annotations

import math
import pathlib
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import gpu_clock
from repeats import SPREAD_FLAG, repeated_problems, spread

MISMATCH = 0.05  # max |out - fp32 reference| on sampled rows above which a number is not trusted


# --- reading results -------------------------------------------------------------------------

def impl_names(results: dict) -> List[str]:
    """Every implementation seen, flashband backends first, in first-seen order."""
    seen: List[str] = []
    for case in results["cases"]:
        for name in case["results"]:
            if name not in seen:
                seen.append(name)
    return [n for n in seen if n.startswith("flashband")] + [
        n for n in seen if not n.startswith("flashband")]


def ok(r: Optional[dict]) -> bool:
    return bool(r) and "ms" in r and (r.get("max_abs_err") is None or r["max_abs_err"] <= MISMATCH)


def metric(case: dict) -> str:
    decode = case["section"] == "decode" or case.get("params", {}).get("decode")
    return "tbps" if decode else "tflops"


def best(case: dict, flashband: bool) -> Tuple[Optional[str], Optional[float]]:
    key = metric(case)
    # CUDA-graph rows (impls.FlashbandGraph) time replays, not launches: not compared here.
    cands = [(r[key], n) for n, r in case["results"].items()
             if n.startswith("flashband") == flashband and not n.endswith("(graph)") and ok(r)]
    if not cands:
        return None, None
    v, n = max(cands)
    return n, v


class Footnotes:
    """Errors become numbered footnotes under the page, so tables stay narrow."""

    def __init__(self):
        self.items: List[str] = []

    def add(self, text: str) -> int:
        if text not in self.items:
            self.items.append(text)
        return self.items.index(text) + 1


def cell(r: Optional[dict], key: str, notes: Footnotes, impl: str, case: str,
         refusals: bool = False) -> str:
    """refusals: a flashband backend's skip shows its reason as a footnote (the sections of
    issues 65 and 66, where a refusal is the finding), not a bare dash."""
    if not r:
        return ""
    if "skipped" in r:
        if refusals and _refusable(impl):
            return "refused[^%d]" % notes.add(f"{impl} refuses: {r['skipped']}")
        return "—"
    if "error" in r:
        return "err[^%d]" % notes.add(f"{impl}, {case}: {r['error']}")
    v = r.get(key)
    if v is None:
        return "?"
    text = f"{v:.2f}" if key == "tbps" else f"{v:.0f}"
    err = r.get("max_abs_err")
    if err is not None and err > MISMATCH:
        note = (f"{impl}, {case}: max abs error {err:.3g} against the fp32 reference; "
                "not counted as best")
        text += " ⚠[^%d]" % notes.add(note)
    return text


def ratio_cell(case: dict) -> str:
    fb_name, fb = best(case, True)
    peer_name, peer = best(case, False)
    if fb is None or peer is None:
        return ""
    return f"**{fb / peer:.2f}** ({short(fb_name)} / {peer_name})"


def _refusable(name: str) -> bool:
    """A flashband backend whose skip is a refusal worth its reason (graph rows skip what
    is not decode)."""
    return name.startswith("flashband") and not name.endswith("(graph)")


def short(name: Optional[str]) -> str:
    return (name or "").replace("flashband-", "")


def table(header: Sequence[str], rows: List[Sequence[str]]) -> List[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


# --- sections ----------------------------------------------------------------------------------

def _impl_columns(results: dict, section: str) -> List[str]:
    """Implementations that ran (or failed) in a section: all-skipped ones are left out."""
    names = []
    for n in impl_names(results):
        for c in results["cases"]:
            r = c["results"].get(n)
            if c["section"] == section and r and "skipped" not in r:
                names.append(n)
                break
    return names


def _section_table(results: dict, section: str, keys: Sequence[str], notes: Footnotes,
                   extra=None, where: Callable[[dict], bool] = lambda c: True,
                   refusals: bool = False) -> List[str]:
    """extra: a (header, f(case) -> text) column after the ratio, or a list of them; where:
    which of the section's cases make the rows; refusals: as cell()'s."""
    extras = [extra] if isinstance(extra, tuple) else list(extra or [])
    cases = [c for c in results["cases"] if c["section"] == section and where(c)]
    if not cases:
        return ["(not run)"]

    def shown(n: str) -> bool:  # ran or failed on a row (or refused it, with refusals)
        return any(r and ("skipped" not in r or (refusals and _refusable(n)))
                   for r in (c["results"].get(n) for c in cases))

    impls = [n for n in impl_names(results) if shown(n)]
    header = list(keys) + ["auto"] + [short(n) for n in impls] + ["best flashband / best peer"]
    header += [e[0] for e in extras]
    rows = []
    for c in cases:
        row = [_fmt_param(k, c["plot"].get(k)) for k in keys]
        row.append(short(c.get("auto_backend", ""))[:12])
        row += [cell(c["results"].get(n), metric(c), notes, n, c["name"], refusals) for n in impls]
        row.append(ratio_cell(c))
        row += [e[1](c) for e in extras]
        rows.append(row)
    return table(header, rows)


def _fmt_param(key: str, v) -> str:
    if key in ("S", "kv", "chunk") and isinstance(v, int) and v >= 1024 and v % 1024 == 0:
        return f"{v // 1024}k"
    if key == "W":
        return "none" if v is None or v < 0 else str(v)
    return str(v)


def _window_vs_none(results: dict):
    """Best flashband time with the window / without it, beside the FLOP ratio: the cost must
    scale with the band, not with kv_len."""
    plain = {}
    for c in results["cases"]:
        if c["section"] == "window" and c["plot"]["W"] < 0:
            plain[(c["plot"]["S"], c["plot"]["mask"])] = c

    def f(c: dict) -> str:
        if c["plot"]["W"] < 0:
            return ""
        base = plain.get((c["plot"]["S"], c["plot"]["mask"]))
        name, _ = best(c, True)
        if not base or not name or not ok(base["results"].get(name)):
            return ""
        t = c["results"][name]["ms"] / base["results"][name]["ms"]
        return f"{t:.2f} (FLOPs {c['flops'] / base['flops']:.2f})"

    return "time vs no window (best flashband)", f


def ragged_tflops(results: dict, shape: str, impl: str) -> Optional[float]:
    """The paged section's ragged TFLOP/s of one shape and implementation, which its paged
    ratios divide by: the mean of the trusted readings taken before and after the shape's
    paged rows, so that a drift of the GPU's clocks within the shape is split between them.
    Older results, with one reading, give that one."""
    values = [c["results"][impl]["tflops"] for c in results["cases"]
              if c["section"] == "paged" and c["plot"]["shape"] == shape and c["plot"]["page_size"] == 0
              and ok(c["results"].get(impl))]
    return sum(values) / len(values) if values else None


def _paged_table(results: dict, notes: Footnotes) -> List[str]:
    cases = [c for c in results["cases"] if c["section"] == "paged"]
    if not cases:
        return ["(not run)"]
    impls = [n for n in _impl_columns(results, "paged") if n.startswith("flashband")]
    # Columns: ragged, the pages, ragged again (the second reading, where the run has one).
    shapes: Dict[str, Dict[tuple, dict]] = {}
    for c in cases:
        shapes.setdefault(c["plot"]["shape"], {})[(c["plot"].get("again", False), c["plot"]["page_size"])] = c
    columns = sorted({k for by_kind in shapes.values() for k in by_kind})
    header = ["shape", "backend"] + ["ragged again" if again else f"page {p}" if p else "ragged"
                                     for again, p in columns]
    rows = []
    for shape, by_kind in shapes.items():
        for n in impls:
            ragged = ragged_tflops(results, shape, n)
            row = [shape, short(n)]
            for again, p in columns:
                c = by_kind.get((again, p))
                r = c["results"].get(n) if c else None
                text = cell(r, "tflops", notes, n, c["name"]) if c else ""
                if p and ok(r) and ragged:
                    text += f" ({r['tflops'] / ragged:.2f}x)"
                row.append(text)
            rows.append(row)
    return table(header, rows)


def _decode_extra(results: dict):
    copy = results.get("ceilings", {}).get("copy_tbps")

    def f(c: dict) -> str:
        _, v = best(c, True)
        return f"{100 * v / copy:.0f}%" if v and copy else ""

    return "best flashband / copy bandwidth", f


def _repeats_note(results: dict) -> str:
    flag = f"{100 * SPREAD_FLAG:.0f}%"
    settled = results.get("meta", {}).get("settled")
    if settled is None:
        return (f"Bold: more than {flag} apart. This run predates measuring such readings "
                "again: each is one do_bench median.")
    if isinstance(settled, str):
        return f"Bold: more than {flag} apart. Not measured again, since {settled}."
    cut = any("not measured again" in line for line in settled)
    return (f"Readings more than {flag} apart are measured twice more and each case keeps the "
            "median of its three (×3; results.json keeps all three, and a case whose "
            f"re-measurement failed keeps its first); bold: still more than {flag} apart."
            + (" The time budget ran out before every such problem was measured again." if cut else ""))


def _repeats_table(results: dict) -> List[str]:
    groups = repeated_problems(results)
    if not groups:
        return ["(no problem was measured twice)"]
    impls = [n for n in impl_names(results)
             if any(sum(ok(c["results"].get(n)) for c in g) > 1 for g in groups)]
    header = ["problem", "sections"] + [short(n) for n in impls]
    rows = []
    for g in groups:
        sections = [c["section"] for c in g]
        row = [g[0]["name"], ", ".join(f"{x} ×{sections.count(x)}" if sections.count(x) > 1 else x
                                       for x in dict.fromkeys(sections))]
        for n in impls:
            rs = [c["results"][n] for c in g if ok(c["results"].get(n))]
            if len(rs) < 2:
                row.append("")
                continue
            vals = [r[metric(g[0])] for r in rs]
            text = f"{min(vals):.0f}–{max(vals):.0f} ({100 * spread(vals):.0f}%)"
            counts = [len(r.get("readings_ms", [0])) for r in rs]
            if max(counts) > 1:  # measured again: readings per case
                text += " ×" + (str(counts[0]) if len(set(counts)) == 1 else "/".join(map(str, counts)))
            row.append(f"**{text}**" if spread(vals) > SPREAD_FLAG else text)
        rows.append(row)
    return table(header, rows)


def _feature_sections(results: dict, notes: Footnotes) -> List[Tuple[str, str, List[str]]]:
    import report_features  # imports this module: loaded on first use

    return report_features.sections(results, notes)


def _targets(results: dict) -> List[str]:
    import targets  # imports this module: loaded on first use

    return targets.table(results)


# --- the page ----------------------------------------------------------------------------------

def markdown(results: dict, plots: List[str], plot_note: str = "") -> str:
    meta = results.get("meta", {})
    v = meta.get("versions", {})
    ceil = results.get("ceilings", {})
    notes = Footnotes()
    out = ["# flashband benchmarks", ""]
    out.append(f"Generated by `{meta.get('command', 'python bench/run.py')}` on "
               f"{meta.get('date', '?')}{' (quick subset)' if meta.get('quick') else ''}. "
               "Raw numbers: `results.json` beside the script's output.")
    out.append("")
    out.append(f"- Machine: {v.get('gpu', '?')} (sm_{v.get('compute_capability', '?').replace('.', '')}, "
               f"{v.get('sm_count', '?')} SMs, {v.get('gpu_memory_gib', '?')} GiB), driver {v.get('driver', '?')}")
    out.append(f"- Software: torch {v.get('torch', '?')} (CUDA {v.get('cuda_runtime', '?')}, cuDNN "
               f"{v.get('cudnn', '?')}), triton {v.get('triton', '?')}, Python {v.get('python', '?')}, "
               f"flashband {v.get('flashband', '?')} with backends {', '.join(v.get('flashband_backends', []))}")
    copy, gemm = ceil.get("copy_tbps"), ceil.get("gemm_tflops")
    out.append(f"- Ceilings measured in the same run: bf16 GEMM 8192³ "
               f"{'%.0f TFLOP/s' % gemm if gemm else '?'}; device-to-device copy "
               f"{'%.2f TB/s' % copy if copy else '?'} (bytes read + written)")
    t = meta.get("timing", {})
    out.append(f"- Timing: `triton.testing.do_bench` median (warm-up {t.get('warmup_ms', '?')} ms, "
               f"{t.get('rep_ms', '?')} ms of repeats, L2 flushed before each run); bf16 inputs, "
               "random normal. TFLOP/s count 4·D per visible (query, key) pair, masked pairs "
               "excluded; decode counts bytes of Q, K, V and O moved once (TB/s). Decode's "
               "\"(graph)\" columns plan with use_cuda_graph=True and time replays of one "
               "captured run; the best-flashband ratios leave them out.")
    clock_line = gpu_clock.summary(results)
    if clock_line:
        out.append(clock_line)
    out.append(f"- Every number is cross-checked: the output's max |error| against an fp32 "
               f"reference on sampled rows must be ≤ {MISMATCH} or it is marked ⚠ and not "
               "counted as best. — : not supported by that implementation (not an error). "
               "`auto`: the backend flashband's auto selection picks.")
    out.append("")
    # Runs since the twentieth session read each paged shape ragged twice (cases.paged).
    bracketed = any(c["plot"].get("again") for c in results["cases"] if c["section"] == "paged")
    sections = [
        ("1. Dense prefill", "B·S = 16k tokens, H·D = 2048, TFLOP/s. Peers: cuDNN and "
         "FlashAttention-2 through torch SDPA.", _section_table(results, "dense", ["D", "S", "mask"], notes)),
        ("2. Sliding window", "D = 128, H = 16, B·S = 16k (B = 1 at 32k), TFLOP/s of visible "
         "pairs. Peer: FlexAttention (compiled, block mask); SDPA only without a window.",
         _section_table(results, "window", ["S", "W", "mask"], notes, _window_vs_none(results))),
        ("3. Chunked prefill", "A query chunk over a 32k cache, Hq = 8, Hk = 1, D = 128, causal "
         "bottom-right (SDPA with `causal_lower_right`), TFLOP/s.",
         _section_table(results, "chunk", ["chunk", "W"], notes)),
        ("4. Paged KV", "The same shapes with a paged cache (pages shuffled), TFLOP/s and the "
         "ratio to the same backend on the ragged (contiguous) KV" + (
             ": the mean of its readings before and after the pages (ragged, ragged again)."
             if bracketed else "."), _paged_table(results, notes)),
        ("5. Decode", "Hq = 32, Hk = 8, D = 128, page size 16, TB/s of Q, K, V, O moved once. "
         "Peers read the same pages as one contiguous KV.",
         _section_table(results, "decode", ["B", "kv"], notes, _decode_extra(results))),
        ("6. One long prompt, few heads", "A single causal request of S tokens over H = 16k / S "
         "heads (Hk = H), D = 128, as one GPU holds it under tensor parallelism, TFLOP/s: too few "
         "query tiles to fill the GPU twice, so the schedule of the longest ones decides.",
         _section_table(results, "prompt", ["S", "H"], notes)),
        ("7. Against the issues' targets", "Each flashband backend alone against the peer the "
         "issue names, in this run (`bench/targets.py`): cuDNN is the faster of flashband's "
         "cuDNN graph and SDPA's; band share: time with the window over (visible-pair share x "
         "time without it).", _targets(results)),
        ("8. Problems measured twice", "Shapes that two or three sections share" + (
             ", and the paged section's two ragged readings of each shape" if bracketed else "") +
         " (same problem, same entry point), TFLOP/s: each implementation's lowest and highest "
         "trusted reading in this run and how far apart they are, the run's own noise (" + (
             "the window ratios of sections 2 and 7 divide by one such reading, the paged ratios "
             "of sections 4 and 7 by the mean of the paged section's two). " if bracketed else
             "the ratios of sections 2, 4 and 7 divide by one such reading). ")
         + _repeats_note(results),
         _repeats_table(results)),
    ]
    sections += _feature_sections(results, notes)
    for title, text, body in sections:
        out += [f"## {title}", "", text, ""] + body + [""]
    if plots or plot_note:
        out += ["## Plots", ""]
        out += [f"![{pathlib.Path(p).stem}]({p})" for p in plots]
        if plot_note:
            out.append(plot_note)
        out.append("")
    if notes.items:
        out += [f"[^{i + 1}]: {text}" for i, text in enumerate(notes.items)]
        out.append("")
    return "\n".join(out)


# --- plots -------------------------------------------------------------------------------------

def _series(cases: List[dict], x: str, names: List[str], key: str):
    """{impl: ([x...], [y...])} over the cases that ran."""
    s: Dict[str, Tuple[list, list]] = {}
    for c in sorted(cases, key=lambda c: c["plot"][x]):
        for n in names:
            r = c["results"].get(n)
            if ok(r):
                xs, ys = s.setdefault(n, ([], []))
                xs.append(c["plot"][x])
                ys.append(r[key])
    return {n: s[n] for n in names if n in s}


# One colour per implementation across every panel; flashband solid, peers dashed.
COLORS = {"flashband-sm90": "tab:blue", "flashband-sm80": "tab:orange",
          "flashband-cudnn": "tab:green", "flashband-auto": "tab:cyan", "sdpa-cudnn": "tab:red",
          "flashband-sm80 (graph)": "tab:olive", "flashband-cudnn (graph)": "tab:pink",
          "sdpa-fa2": "tab:purple", "flex": "tab:brown"}


def color(name: str) -> str:
    return COLORS.get(name, "tab:gray")


def _panel(ax, series, title: str, xlabel: str, ylabel: str, logx: bool = True):
    for n, (xs, ys) in series.items():
        style = "-o" if n.startswith("flashband") else "--s"
        ax.plot(xs, ys, style, label=short(n) if n.startswith("flashband") else n, markersize=4,
                color=color(n))
    if logx:
        ax.set_xscale("log", base=2)
    ax.set_ylim(bottom=0)
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(xlabel, fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(True, alpha=0.3)
    if series:
        ax.legend(fontsize=6)


def _paged_panel(ax, paged: List[dict], names: List[str]) -> None:
    """Paged / ragged TFLOP/s of the same backend: one dot per shape, the line through their
    geometric mean."""
    sizes = sorted({c["plot"]["page_size"] for c in paged if c["plot"]["page_size"]})
    for n in names:
        if not n.startswith("flashband"):
            continue
        line = []
        bases = {shape: ragged_tflops({"cases": paged}, shape, n) for shape in {c["plot"]["shape"] for c in paged}}
        for p in sizes:
            ratios = []
            for c in paged:
                base = bases[c["plot"]["shape"]]
                if c["plot"]["page_size"] == p and base and ok(c["results"].get(n)):
                    ratios.append(c["results"][n]["tflops"] / base)
            if ratios:
                ax.plot([p] * len(ratios), ratios, ".", color=color(n), alpha=0.4)
                line.append((p, math.exp(sum(map(math.log, ratios)) / len(ratios))))
        if line:
            ax.plot(*zip(*line), "-o", markersize=4, color=color(n), label=short(n))
    ax.axhline(1.0, color="gray", lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_title("paged / ragged, same backend (dots: shapes)", fontsize=9)
    ax.set_xlabel("page size", fontsize=8)
    ax.set_ylabel("TFLOP/s ratio (geometric mean)", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=6)


def plot(results: dict, img_dir: pathlib.Path) -> List[pathlib.Path]:
    """At most four PNGs: dense, window, chunk + paged, decode."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    img_dir.mkdir(parents=True, exist_ok=True)
    names = impl_names(results)
    by = lambda sec: [c for c in results["cases"] if c["section"] == sec]
    written = []

    def save(fig, name):
        path = img_dir / name
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)

    dense = by("dense")
    if dense:
        dims = sorted({c["plot"]["D"] for c in dense})
        masks = ["non-causal", "causal"]
        fig, axes = plt.subplots(2, len(dims), figsize=(4 * len(dims), 6.5), squeeze=False)
        for i, m in enumerate(masks):
            for j, d in enumerate(dims):
                sub = [c for c in dense if c["plot"]["D"] == d and c["plot"]["mask"] == m]
                _panel(axes[i][j], _series(sub, "S", names, "tflops"), f"dense D={d}, {m}",
                       "S (tokens per request; B·S = 16k)", "TFLOP/s")
        save(fig, "dense.png")

    window = by("window")
    if window:
        ws = sorted({c["plot"]["W"] for c in window}, key=lambda w: (w >= 0, w))
        masks = [m for m in ("non-causal", "causal") if any(c["plot"]["mask"] == m for c in window)]
        fig, axes = plt.subplots(len(masks), len(ws), figsize=(4 * len(ws), 3.2 * len(masks)),
                                 squeeze=False)
        for i, m in enumerate(masks):
            for j, w in enumerate(ws):
                sub = [c for c in window if c["plot"]["W"] == w and c["plot"]["mask"] == m]
                _panel(axes[i][j], _series(sub, "S", names, "tflops"),
                       f"window {'none' if w < 0 else w}, {m}", "S", "TFLOP/s (visible pairs)")
        save(fig, "window.png")

    chunk, paged = by("chunk"), by("paged")
    if chunk or paged:
        ws = sorted({c["plot"]["W"] for c in chunk}, key=lambda w: (w >= 0, w))
        fig, axes = plt.subplots(1, len(ws) + (1 if paged else 0),
                                 figsize=(4 * (len(ws) + 1), 3.4), squeeze=False)
        for j, w in enumerate(ws):
            sub = [c for c in chunk if c["plot"]["W"] == w]
            _panel(axes[0][j], _series(sub, "chunk", names, "tflops"),
                   f"chunked prefill over 32k{'' if w < 0 else f', window {w}'}",
                   "chunk (query tokens)", "TFLOP/s")
        if paged:
            _paged_panel(axes[0][len(ws)], paged, names)
        save(fig, "chunk_paged.png")

    decode = by("decode")
    if decode:
        kvs = sorted({c["plot"]["kv"] for c in decode})
        fig, axes = plt.subplots(1, len(kvs), figsize=(4 * len(kvs), 3.4), squeeze=False)
        copy = results.get("ceilings", {}).get("copy_tbps")
        for j, kv in enumerate(kvs):
            sub = [c for c in decode if c["plot"]["kv"] == kv]
            ax = axes[0][j]
            _panel(ax, _series(sub, "B", names, "tbps"), f"decode, kv_len {kv}", "batch", "TB/s")
            if copy:
                ax.axhline(copy, color="gray", ls=":", lw=1)
                ax.text(ax.get_xlim()[0], copy, " copy", fontsize=6, va="bottom")
        save(fig, "decode.png")
    return written


def render(results: dict, md_path: pathlib.Path, img_dir: pathlib.Path) -> List[pathlib.Path]:
    """Writes the markdown page and the plots; returns the files written."""
    note = ""
    try:
        pngs = plot(results, img_dir)
    except ImportError as e:
        pngs, note = [], f"(plots skipped: {e})"
    rel = [_relative(p, md_path.parent) for p in pngs]
    md_path.parent.mkdir(parents=True, exist_ok=True)
    md_path.write_text(markdown(results, rel, note))
    return [md_path] + pngs


def _relative(path: pathlib.Path, base: pathlib.Path) -> str:
    try:
        return str(path.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(path)


# --- synthetic results, to check this module without a GPU -----------------------------------

def fake_results(quick: bool = False, seed: int = 0) -> dict:
    import random

    from cases import matrix

    rnd = random.Random(seed)
    impls = ["flashband-sm90", "flashband-sm80", "flashband-cudnn", "sdpa-cudnn", "sdpa-fa2", "flex"]
    out = {"meta": {"date": "2000-01-01T00:00:00Z (synthetic)", "quick": quick,
                    "command": "python bench/run.py --selftest",
                    "versions": {"gpu": "synthetic GPU", "compute_capability": "9.0",
                                 "sm_count": 132, "gpu_memory_gib": 139.8, "torch": "x",
                                 "flashband": "x", "flashband_backends": ["cpu", "sm80", "sm90"]},
                    "timing": {"warmup_ms": 25, "rep_ms": 100}},
           "ceilings": {"copy_tbps": 4.2, "gemm_tflops": 750.0}, "cases": []}
    for c in matrix(quick):
        entry = {"section": c.section, "name": c.name, "params": c.describe(), "plot": c.plot,
                 "flops": c.flops, "bytes": c.bytes, "auto_backend": "sm90", "results": {}}
        for n in impls:
            roll = rnd.random()
            if n == "flex" and c.section not in ("window", "chunk", "window_right"):
                entry["results"][n] = {"skipped": "not a peer here"}
            elif n.startswith("sdpa") and (c.window_left >= 0 or (c.page_size and not c.memory_bound)
                                           or c.kv_dtype or c.section in ("sinks", "mask")):
                entry["results"][n] = {"skipped": "no window"}
            elif n in ("flashband-sm90", "flashband-cudnn") and (c.kv_dtype or c.tree) or \
                    n == "flashband-sm80" and c.tree:
                entry["results"][n] = {"skipped": f"{n}: synthetic refusal"}
            elif roll < 0.05:
                entry["results"][n] = {"error": "RuntimeError: synthetic failure"}
            else:
                scale = 4.0 if c.memory_bound else 600.0
                value = scale * (0.3 + 0.7 * rnd.random())
                ms = (c.bytes / value / 1e9) if c.memory_bound else c.flops / value / 1e9
                r = {"ms": ms, "tflops": c.flops / ms / 1e9,
                     "max_abs_err": 0.2 if roll > 0.97 else 0.01}
                if c.memory_bound:
                    r["tbps"] = c.bytes / ms / 1e9
                if c.section == "fp8kv" and c.memory_bound:
                    r.update(workspace_bytes=[128 << 20, 40 << 10], num_kv_splits=8)
                entry["results"][n] = r
        out["cases"].append(entry)
    return out
