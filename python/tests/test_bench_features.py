"""bench/'s rows for issues 65 (fp8 KV cache) and 66 (sinks, tree-verify mask,
window_right) without a GPU: their counting against hand-computed values, their goals in
targets.py, their report sections, and run.py --dry-run through the cpu backend."""

import itertools
import json
import pathlib
import subprocess
import sys

import pytest

RUN = pathlib.Path(__file__).resolve().parents[2] / "bench" / "run.py"
OLD_SECTIONS = ("dense", "window", "chunk", "paged", "decode", "prompt")
NEW_SECTIONS = "fp8kv,sinks,mask,window_right"


def _bench(name):
    if str(RUN.parent) not in sys.path:
        sys.path.insert(0, str(RUN.parent))
    return __import__(name)  # bench/ is not a package


def _find(cases, name):
    return next(c for c in cases if c.name == name)


def test_fp8_rows_count_one_byte_per_k_and_v_element():
    cases = _bench("cases")
    rows = cases.fp8kv(quick=False)
    bf16 = _find(rows, "fp8kv decode B=16 kv=32768 bf16")
    fp8 = _find(rows, "fp8kv decode B=16 kv=32768 e4m3")
    # K and V: 16 requests x 32768 keys x 8 heads x 128, 2 bytes (bf16) or 1 (e4m3);
    # Q and O: 16 x 32 heads x 128 at 2 bytes each, in both.
    kv_elems = 2 * 16 * 32768 * 8 * 128
    qo_bytes = 2 * 2 * 16 * 32 * 128
    assert bf16.bytes == 2 * kv_elems + qo_bytes == 2_147_745_792
    assert fp8.bytes == kv_elems + qo_bytes == 1_074_003_968
    assert fp8.flops == bf16.flops == 4 * 128 * 32768 * 32 * 16
    assert fp8.op == bf16.op == "paged_decode" and fp8.memory_bound
    assert (fp8.kv_dtype, fp8.k_scale, fp8.v_scale) == ("float8_e4m3fn", 0.37, 0.61)
    assert fp8.feature_args == {"kv_dtype": "float8_e4m3fn"} and bf16.feature_args == {}
    # prefill rows: the same shape twice; chunk 512 over 32k at one byte per K/V element
    chunk = _find(rows, "fp8kv paged chunk 512 over 32k e4m3")
    assert chunk.bytes == 32768 * 1 * 128 * 2 * 1 + 512 * 8 * 128 * 2 * 2
    assert not chunk.memory_bound and chunk.op == "paged_prefill"
    names = [c.name for c in rows]
    assert len(names) == 2 * (6 + 3 * 2 * 2 + 1) == len(set(names))


def test_visible_pairs_with_window_right_follow_the_spec_rule():
    cases = _bench("cases")
    # 4 x 4 non-causal, one key each side: rows see 0-1, 0-2, 1-3, 2-3
    assert cases.visible_pairs(4, 4, False, 1, 1) == 2 + 3 + 3 + 2
    # window_right 0 is causal
    assert cases.visible_pairs(4, 4, False, 1, 0) == cases.visible_pairs(4, 4, True, 1) == 1 + 2 + 2 + 2
    # bottom-right: 2 queries over 5 keys sit at p = 3, 4; r = 1 clips nothing, r = 0 one key
    assert cases.visible_pairs(2, 5, False, -1, 1) == 10
    assert cases.visible_pairs(2, 5, False, -1, 0) == 4 + 5
    assert cases.visible_pairs(2, 5, False, 0, 0) == 2
    # every small problem against SPEC.md's rule written as a set
    for qo, kv, causal, wl, wr in itertools.product((1, 3, 6), (0, 2, 7), (False, True), (-1, 0, 2), (-1, 0, 1, 3)):
        if causal and wr > 0:
            continue  # refused by flashband (F42): not a problem of the matrix
        want = 0
        for i in range(qo):
            p = i + kv - qo
            want += sum(1 for j in range(kv) if (not causal or j <= p) and (wl < 0 or j >= p - wl)
                        and (wr < 0 or j <= p + wr))
        assert cases.visible_pairs(qo, kv, causal, wl, wr) == want, (qo, kv, causal, wl, wr)
    row = _find(cases.window_right(quick=False), "window_right S=8192 W=128/128")
    # interior rows see 257 keys; the first and last 128 rows lose 128..1 of them
    assert row.pairs == 8192 * 257 - 2 * sum(range(1, 129))
    assert row.flops == 4 * 128 * row.pairs * 16 * 2
    assert row.feature_args == {"window_right": 128}


def test_tree_mask_pairs():
    cases = _bench("cases")
    # the root sees itself, 1 and 2 their parent 0 too, 3 its parent 1 and the root
    assert [len(cases.tree_lineage([-1, 0, 0, 1], i)) for i in range(4)] == [1, 2, 2, 3]
    assert cases.tree_pairs(10, [-1, 0, 0, 1]) == 4 * 10 + 1 + 2 + 2 + 3
    # a chain is the causal problem; any other tree sees fewer draft keys
    chain = [-1, 0, 1, 2, 3]
    assert cases.tree_pairs(7, chain) == cases.visible_pairs(5, 12, True, -1)
    parents = cases.tree_parents(64, cases.TREE_SEED)
    assert parents[0] == -1 and all(0 <= p < i for i, p in enumerate(parents) if i)
    assert parents == cases.tree_parents(64, cases.TREE_SEED)  # the same tree every run
    tree, causal = (_find(cases.mask(quick=False), f"mask 64 drafts over 4096 {k}") for k in ("tree", "causal"))
    assert causal.pairs == 64 * 4096 + 64 * 65 // 2
    assert tree.pairs == 64 * 4096 + sum(len(cases.tree_lineage(parents, i)) for i in range(64)) < causal.pairs
    assert tree.flops == 4 * 128 * tree.pairs * 32 * 16
    assert tree.feature_args == {"custom_mask": True} and not tree.causal and causal.causal


def test_tree_mask_bits_match_the_counted_pairs():
    torch = pytest.importorskip("torch")
    cases = _bench("cases")
    pytest.importorskip("flashband._C")
    impls = _bench("impls")
    case = cases.shrunk(_find(cases.mask(quick=False), "mask 64 drafts over 4096 tree"))
    mask = impls._tree_mask(case, "cpu")
    prefix = case.kv_len - case.qo_len
    assert mask.shape == (64, case.kv_len) and bool(mask[:, :prefix].all())
    assert int(mask.sum()) == case.pairs
    assert bool(torch.equal(mask[:, prefix:], mask[:, prefix:].tril()))  # ancestors come first


def test_new_fields_stay_out_of_the_old_rows_params():
    cases = _bench("cases")
    for c in cases.matrix(False, list(OLD_SECTIONS)):
        assert set(c.describe()) == {"section", "name", "batch", "qo_len", "kv_len", "num_qo_heads",
                                     "num_kv_heads", "head_dim", "causal", "window_left", "page_size",
                                     "logits_soft_cap"}, c.name
    fp8 = _find(cases.fp8kv(quick=True), "fp8kv decode B=16 kv=32768 e4m3").describe()
    assert fp8["kv_dtype"] == "float8_e4m3fn" and fp8["decode"] is True and "sinks" not in fp8
    # the bf16 rows are the same problems as the decode and paged sections' (measured twice)
    repeats = _bench("repeats")
    results = {"cases": [{"section": c.section, "name": c.name, "params": c.describe()}
                         for c in cases.matrix(False, ["paged", "decode", "fp8kv"])]}
    twice = {tuple(sorted(c["name"] for c in g)) for g in repeats.repeated_problems(results)}
    assert ("decode B=16 kv=32768", "fp8kv decode B=16 kv=32768 bf16") in twice
    assert not any("e4m3" in n for g in twice for n in g)


def test_tile_floor_with_window_right():
    targets = _bench("targets")

    def brute(S, W, t):
        def visited(w):
            tiles = set()
            for i in range(S):
                lo, hi = (max(0, i - w), min(S - 1, i + w)) if w >= 0 else (0, S - 1)
                tiles.update((i // t, k // t) for k in range(lo, hi + 1))
            return len(tiles) * t * t
        vis = targets.visible_pairs
        return (visited(W) / vis(S, S, False, W, W)) / (visited(-1) / vis(S, S, False, -1))

    for S, W in ((256, 40), (200, 70), (320, 0), (96, 31)):
        assert abs(targets.tile_floor(S, W, False, 32, 32, window_right=W) - brute(S, W, 32)) < 1e-12
    # W = 128 a side on 128-wide tiles: 3 key tiles (384 keys) for 257 visible a row
    assert 1.48 < targets.tile_floor(8192, 128, False, window_right=128) < 1.50


def _r(ms, err=0.01, **extra):
    return dict({"ms": ms, "tflops": 1.0 / ms, "tbps": 1.0 / ms, "max_abs_err": err}, **extra)


def _c(section, plot, results, flops=1.0):
    return {"section": section, "name": f"{section} {plot}", "plot": plot, "flops": flops, "results": results}


def test_targets_of_issues_65_and_66():
    targets = _bench("targets")
    sm80, sm90 = "flashband-sm80", "flashband-sm90"
    refusal = {"skipped": "backend 'sm90' does not support kv_dtype float8_e4m3fn"}
    ws = [100, 10]
    results = {"ceilings": {"copy_tbps": 2.0}, "cases": [
        # decode B=16: 0.5 of bf16's time (goal <= 0.55: yes); 1 / 0.55 = 1.82 TB/s, 91% of copy
        _c("fp8kv", {"part": "decode", "B": 16, "kv": 32768, "kv_dtype": "bf16"},
           {sm80: _r(1.1, workspace_bytes=ws, num_kv_splits=4), sm90: _r(1.0)}),
        _c("fp8kv", {"part": "decode", "B": 16, "kv": 32768, "kv_dtype": "e4m3"},
           {sm80: _r(0.55, workspace_bytes=ws, num_kv_splits=4), sm90: refusal}),
        # decode B=1 at 0.6 (no); its bandwidth is not in the B >= 16 goal; a larger workspace
        _c("fp8kv", {"part": "decode", "B": 1, "kv": 2048, "kv_dtype": "bf16"},
           {sm80: _r(1.0, workspace_bytes=ws), sm90: _r(1.0)}),
        _c("fp8kv", {"part": "decode", "B": 1, "kv": 2048, "kv_dtype": "e4m3"},
           {sm80: _r(0.6, workspace_bytes=[100, 12]), sm90: refusal}),
        # prefill: fp8 0.96x of bf16's TFLOP/s (yes)
        _c("fp8kv", {"part": "prefill", "shape": "D=128 S=2048 causal", "kv_dtype": "bf16"}, {sm80: _r(1.0)}),
        _c("fp8kv", {"part": "prefill", "shape": "D=128 S=2048 causal", "kv_dtype": "e4m3"},
           {sm80: _r(1 / 0.96)}),
        # sinks: 2% and 4% slower (no); a trusted reading only for sm80
        _c("sinks", {"shape": "a", "sinks": False}, {sm80: _r(1.0), sm90: _r(1.0, err=0.5)}),
        _c("sinks", {"shape": "a", "sinks": True}, {sm80: _r(1.02)}),
        _c("sinks", {"shape": "b", "sinks": False}, {sm80: _r(1.0)}),
        _c("sinks", {"shape": "b", "sinks": True}, {sm80: _r(1.04)}),
        # tree: sm80 refuses; sm90 at causal 1.0 / tree 1.05 = 0.95x (yes)
        _c("mask", {"prefix": 4096, "mask": "causal"}, {sm80: _r(1.0), sm90: _r(1.0)}),
        _c("mask", {"prefix": 4096, "mask": "tree"},
           {sm80: {"skipped": "backend 'sm80' does not support custom_mask"}, sm90: _r(1.05)}),
        # window_right: a tenth of the pairs in 0.12 of the dense time: 1.2x the band share
        _c("window_right", {"S": 8192, "W": -1}, {sm90: _r(1.0)}, flops=10.0),
        _c("window_right", {"S": 8192, "W": 128}, {sm90: _r(0.12)}, flops=1.0),
    ]}
    rows = {t: (i, m, ok) for i, t, m, ok in targets.feature_rows(results)}
    assert rows["sm80 fp8 decode time <= 0.55x bf16"] == ("65", "0.50-0.60x", "no")
    assert rows["sm80 fp8 decode B >= 16: >= 90% of copy bandwidth"] == ("65", "0.91x", "yes")
    assert rows["sm80 fp8 decode workspace and KV splits <= bf16's"] == ("65", "1.00-1.02x", "no")
    assert rows["sm80 fp8 paged prefill >= 0.95x bf16"] == ("65", "0.96x", "yes")
    assert rows["sm90 fp8 decode time <= 0.55x bf16"] == (
        "65", "refused: backend 'sm90' does not support kv_dtype float8_e4m3fn", "no")
    assert rows["sm80 sinks cost <= 3%"] == ("66", "1.02-1.04x", "no")
    assert "sm90 sinks cost <= 3%" not in rows  # no trusted reading in the section
    assert rows["sm80 tree mask >= 0.9x causal speed"] == (
        "66", "refused: backend 'sm80' does not support custom_mask", "no")
    assert rows["sm90 tree mask >= 0.9x causal speed"] == ("66", "0.95x", "yes")
    assert rows["sm90 window_right W=128/128 time <= 1.1x band share"] == (
        "66", "1.20x (whole 128 x 128 tiles: >= 1.49x)", "no")
    # the goals join section 7 only where the run has these sections
    # more KV splits than bf16's plan: more scratch, though workspace_size() is the same
    results["cases"][1]["results"][sm80]["num_kv_splits"] = 6
    rows = {t: (m, ok) for _, t, m, ok in targets.feature_rows(results)}
    assert rows["sm80 fp8 decode workspace and KV splits <= bf16's"] == ("1.02-1.50x", "no")
    assert any("| 65 |" in line for line in targets.table(results))
    assert targets.feature_rows({"cases": [], "ceilings": {}}) == []


def test_report_sections_of_issues_65_and_66(tmp_path):
    subprocess.run([sys.executable, str(RUN), "--selftest", "--out", str(tmp_path)], check=True,
                   capture_output=True)
    md = (tmp_path / "benchmarks.md").read_text()
    for title in ("9. fp8 KV cache (issue 65)", "10. Attention sinks (issue 66)",
                  "11. Tree-verify custom mask (issue 66)", "12. Two-sided window (issue 66)"):
        assert f"## {title}" in md
    # a refusal shows its reason, once per reason
    assert "refused[^" in md and md.count("flashband-sm80 refuses: flashband-sm80: synthetic refusal") == 1
    for column in ("time e4m3 / bf16", "workspace e4m3 (bf16)", "e4m3 / bf16 TFLOP/s", "time with / without",
                   "causal time / tree time", "time / (share x dense)"):
        assert column in md
    # results without the new sections render without them (the page as before)
    report = _bench("report")
    results = json.loads((tmp_path / "results.json").read_text())
    results["cases"] = [c for c in results["cases"] if c["section"] in OLD_SECTIONS]
    old = report.markdown(results, [])
    assert "## 9." not in old and "| 65 |" not in old and "| 66 |" not in old and "refused[^" not in old


def _dry_run(*args):
    return subprocess.run([sys.executable, str(RUN), "--dry-run", *args], capture_output=True, text=True)


def test_dry_run_refuses_what_it_would_ignore():
    done = _dry_run("--backends", "sm80", "--time-budget", "10")
    assert done.returncode == 2 and "--backends, --time-budget not taken" in done.stderr


def test_dry_run_on_the_cpu_backend():
    pytest.importorskip("torch")
    pytest.importorskip("flashband._C")
    done = _dry_run("--quick", "--sections", NEW_SECTIONS)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith(("ok", "FAIL"))]
    assert len(lines) == 12 and all(line.startswith("ok") for line in lines)
    # each row with a feature showed that its reference sees the feature
    assert sum("against the reference without its features" in line for line in lines) == 6
    assert done.stdout.rstrip().endswith("dry run, 0 failed")


def test_progress_prints_the_fp8_decode_workspace(capsys):
    run = _bench("run")
    progress = run.Progress(2)
    timed = {"ms": 0.5, "tbps": 2.1, "max_abs_err": 0.001}
    progress.line("fp8kv decode B=16 kv=32768 e4m3", "flashband-sm80",
                  dict(timed, workspace_bytes=[1 << 27, 40960], num_kv_splits=8))
    progress.line("decode B=16 kv=32768", "flashband-sm80", timed)
    fp8, plain = capsys.readouterr().out.splitlines()
    assert fp8.endswith("workspace 134217728 + 40960 B, 8 splits")
    assert plain.endswith("err 0.001")  # the other rows print as before
