"""bench/run.py without a GPU: --help, and the report (tables, footnotes, plots when
matplotlib is present) rendered from synthetic results."""

import pathlib
import subprocess
import sys

RUN = pathlib.Path(__file__).resolve().parents[2] / "bench" / "run.py"


def test_help():
    out = subprocess.run([sys.executable, str(RUN), "--help"], capture_output=True, text=True,
                         check=True).stdout
    for flag in ("--quick", "--out", "--backends", "--report-only", "--selftest"):
        assert flag in out


def test_selftest_renders_every_section(tmp_path):
    subprocess.run([sys.executable, str(RUN), "--selftest", "--out", str(tmp_path)], check=True,
                   capture_output=True)
    md = (tmp_path / "benchmarks.md").read_text()
    for title in ("Dense prefill", "Sliding window", "Chunked prefill", "Paged KV", "Decode",
                  "One long prompt, few heads"):
        assert title in md
    assert "best flashband / best peer" in md and "[^1]:" in md  # ratios and error footnotes
    assert (tmp_path / "results.json").stat().st_size > 0
    pngs = sorted(p.name for p in (tmp_path / "img").glob("*.png")) if (tmp_path / "img").exists() else []
    assert len(pngs) <= 4  # the GPU machine returns at most 8 files
    # re-rendering the written JSON gives the same page
    again = tmp_path / "again"
    subprocess.run([sys.executable, str(RUN), "--report-only", str(tmp_path / "results.json"),
                    "--out", str(again)], check=True, capture_output=True)
    assert (again / "benchmarks.md").read_text() == md


def _bench_module(name):
    if str(RUN.parent) not in sys.path:
        sys.path.insert(0, str(RUN.parent))
    return __import__(name)  # bench/ is not a package


def _targets_module():
    return _bench_module("targets")


def _case(section, plot, flops, results):
    return {"section": section, "name": str(plot), "plot": plot, "flops": flops, "results": results}


def test_targets_compare_each_backend_with_the_named_peer():
    targets = _targets_module()

    def r(tflops, ms=1.0, err=0.01):
        return {"tflops": tflops, "ms": ms, "max_abs_err": err}

    cases = [
        # sm90 1.2x the faster cuDNN (SDPA's), at 2k: meets 1.10x; at 16k 1.05x: does not.
        _case("dense", {"D": 128, "S": 2048, "mask": "causal"}, 1.0,
              {"flashband-sm90": r(600), "flashband-cudnn": r(400), "sdpa-cudnn": r(500),
               "flashband-sm80": r(330), "sdpa-fa2": r(300)}),
        _case("dense", {"D": 128, "S": 16384, "mask": "non-causal"}, 1.0,
              {"flashband-sm90": r(630), "sdpa-cudnn": r(600),
               "flashband-sm80": r(700, err=0.5), "sdpa-fa2": r(300)}),  # sm80 untrusted
        # Window: a quarter of the pairs in 0.30 of the time -> 1.2x the band share.
        _case("window", {"S": 16384, "W": 4096, "mask": "causal"}, 0.25,
              {"flashband-sm90": r(500, ms=0.30), "flex": r(300), "flashband-sm80": r(1, ms=0.25)}),
        _case("window", {"S": 16384, "W": -1, "mask": "causal"}, 1.0,
              {"flashband-sm90": r(500, ms=1.0), "flashband-sm80": r(1, ms=1.0)}),
    ]
    rows = {t: (m, ok) for _, t, m, ok in targets.rows({"cases": cases, "ceilings": {"gemm_tflops": 700.0}})}
    assert rows["sm90 dense >= 1.10x cuDNN, S >= 2k"] == ("1.05-1.20x", "no")
    assert rows["sm90 dense >= 1.0x cuDNN, S = 512"] == ("not run", "—")
    assert rows["sm90 D=128 S=16k non-causal >= 680 TFLOP/s"] == ("630 (90% of this run's GEMM 700)", "no")
    assert rows["sm80 dense D=128 >= 1.1x FA2"] == ("1.10x (1 of 2 rows missing)", "no")
    assert rows["sm90 causal W=4096 S=16k >= 1.5x Flex"] == ("1.67x", "yes")
    assert rows["sm90 window W=4096 time <= 1.1x band share"] == (
        "1.20x (causal, whole 128 x 128 tiles: >= 1.02x)", "no")
    assert rows["sm80 window W=4096 time <= 1.2x band share"] == ("1.00x", "yes")
    assert rows["sm90 paged page 16 >= 0.95x ragged"] == ("not run", "—")


def test_report_has_the_targets_section(tmp_path):
    subprocess.run([sys.executable, str(RUN), "--selftest", "--out", str(tmp_path)], check=True,
                   capture_output=True)
    md = (tmp_path / "benchmarks.md").read_text()
    assert "Against the issues' targets" in md and "| issue | target | measured | met |" in md


def test_tile_floor_counts_the_tiles_a_query_tile_must_visit():
    targets = _targets_module()

    def brute(S, W, causal, t):
        # visited pairs: every (query tile, key tile) with at least one visible pair
        def visited(w):
            tiles = set()
            for i in range(S):
                lo = max(0, i - w) if w >= 0 else 0
                hi = i if causal else S - 1
                for k in range(lo, hi + 1):
                    tiles.add((i // t, k // t))
            return len(tiles) * t * t
        vis = targets.visible_pairs
        return (visited(W) / vis(S, S, causal, W)) / (visited(-1) / vis(S, S, causal, -1))

    for S, W, causal in ((256, 40, True), (256, 40, False), (200, 70, True), (320, 0, True)):
        assert abs(targets.tile_floor(S, W, causal, 32, 32) - brute(S, W, causal, 32)) < 1e-12
    # W = 1024 causal on 128 x 128 tiles: 9 tiles for 1025 visible keys a row (1.124),
    # over the unwindowed diagonal's waste: above the 1.1x at 16k.
    assert 1.11 < targets.tile_floor(16384, 1024, True) < 1.12
    assert targets.tile_floor(16384, 4096, False) < 1.01


def _repeat_case(section, name, params, results):
    return {"section": section, "name": name, "plot": {}, "flops": 1e9,
            "params": dict(params, section=section, name=name), "results": results}


def _timed(tflops, err=0.01):
    return {"tflops": tflops, "ms": 1.0 / tflops, "max_abs_err": err}


SHAPE = {"batch": 2, "qo_len": 8192, "causal": True, "window_left": -1, "page_size": 0}


def test_problems_measured_twice_show_their_spread():
    repeats, report = _bench_module("repeats"), _bench_module("report")
    results = {"cases": [
        _repeat_case("dense", "dense 8k causal", SHAPE,
                     {"flashband-sm90": _timed(555), "flashband-sm80": _timed(350),
                      "flex": {"skipped": "no"}}),
        _repeat_case("window", "window 8k none causal", SHAPE,
                     {"flashband-sm90": _timed(630), "flashband-sm80": _timed(352, err=0.5),
                      "flex": _timed(390)}),
        _repeat_case("window", "window 8k W=1024 causal", dict(SHAPE, window_left=1024),
                     {"flashband-sm90": _timed(460)}),
        _repeat_case("dense", "hand-made, no params", {}, {"flashband-sm90": _timed(1)}),
    ]}
    results["cases"][-1].pop("params")
    groups = repeats.repeated_problems(results)
    assert [[c["name"] for c in g] for g in groups] == [["dense 8k causal", "window 8k none causal"]]
    lines = report._repeats_table(results)
    # sm90's two readings 13.5% apart: bold; sm80's second is untrusted and flex ran once, so
    # neither has two readings to compare, and neither gets a column
    assert lines[0] == "| problem | sections | sm90 |"
    assert lines[2] == "| dense 8k causal | dense, window | **555–630 (14%)** |"
    close = {"cases": [_repeat_case("dense", "a", SHAPE, {"flashband-sm90": _timed(600)}),
                       _repeat_case("paged", "b", SHAPE, {"flashband-sm90": _timed(612)})]}
    assert report._repeats_table(close)[2] == "| a | dense, paged | 600–612 (2%) |"
    assert report._repeats_table({"cases": []}) == ["(no problem was measured twice)"]


def test_settle_measures_disagreeing_readings_again_and_keeps_medians():
    repeats, report = _bench_module("repeats"), _bench_module("report")
    results = {"cases": [
        _repeat_case("dense", "dense 8k causal", SHAPE,
                     {"flashband-sm90": _timed(555), "sdpa-cudnn": _timed(548)}),
        _repeat_case("window", "window 8k none causal", SHAPE,
                     {"flashband-sm90": _timed(630), "sdpa-cudnn": _timed(559)}),
    ]}
    asked = []
    later = {"dense 8k causal": [560, 550], "window 8k none causal": [556, 552]}

    def remeasure(entry, name):
        asked.append((entry["name"], name))
        tflops = later[entry["name"]].pop(0)
        return dict(_timed(tflops), window=[tflops, tflops + 1])  # a stand-in time window

    settled = repeats.settle(results, remeasure)
    # only sm90 disagreed (13.5%; SDPA's 2% did not), so only its two cases ran again, twice
    assert asked == [("dense 8k causal", "flashband-sm90")] * 2 + [
        ("window 8k none causal", "flashband-sm90")] * 2
    assert len(settled) == 1 and settled[0].startswith("flashband-sm90: dense 8k causal")
    dense, window = (c["results"]["flashband-sm90"] for c in results["cases"])
    assert abs(dense["tflops"] - 555) < 1e-9 and abs(window["tflops"] - 556) < 1e-9
    assert abs(dense["ms"] - 1 / 555) < 1e-12 and len(window["readings_ms"]) == 3
    # each keeps the window of the reading it kept (its clock, gpu_clock.attach)
    assert window["window"] == [556, 557] and dense["window"] is None
    assert results["cases"][0]["results"]["sdpa-cudnn"] == _timed(548)
    # the table now shows the settled spread (0.2%), marked as measured three times
    assert report._repeats_table(results)[2] == "| dense 8k causal | dense, window | 555–556 (0%) ×3 | 548–559 (2%) |"
    # a settled problem is not measured again
    assert repeats.settle(results, lambda e, n: 1 / 0) == []
    # once stop() says the time is spent, nothing more is measured, and the line says so
    fresh = {"cases": [
        _repeat_case("dense", "d", SHAPE, {"flashband-sm90": _timed(555)}),
        _repeat_case("window", "w", SHAPE, {"flashband-sm90": _timed(630)})]}
    assert repeats.settle(fresh, lambda e, n: 1 / 0, stop=lambda: True) == [
        "flashband-sm90: d and the rest not measured again (time budget)"]
    assert fresh["cases"][1]["results"]["flashband-sm90"] == _timed(630)
    assert "ran out" in report._repeats_note(dict(fresh, meta={"settled": [
        "flashband-sm90: d and the rest not measured again (time budget)"]}))
    assert "ran out" not in report._repeats_note(dict(results, meta={"settled": settled}))
    # the page says whether its run measured disagreeing readings again (run.py records it)
    assert "predates" in report._repeats_note(results)
    assert "median of its three" in report._repeats_note(dict(results, meta={"settled": settled}))
    assert "since the time budget" in report._repeats_note(
        dict(results, meta={"settled": "the time budget of 200 s was spent"}))


def test_settle_keeps_the_first_reading_where_a_re_measurement_fails():
    repeats, report = _bench_module("repeats"), _bench_module("report")
    results = {"cases": [
        _repeat_case("dense", "dense 8k causal", SHAPE, {"flashband-sm90": _timed(555)}),
        _repeat_case("window", "window 8k none causal", SHAPE, {"flashband-sm90": _timed(630)}),
    ]}
    answers = {"dense 8k causal": [_timed(560), _timed(550)],
               "window 8k none causal": [_timed(556), {"error": "RuntimeError: lost"}]}
    settled = repeats.settle(results, lambda entry, name: answers[entry["name"]].pop(0))
    dense, window = (c["results"]["flashband-sm90"] for c in results["cases"])
    assert dense["readings_ms"] == [1 / 555, 1 / 560, 1 / 550] and abs(dense["tflops"] - 555) < 1e-9
    # one failure of two: the window case is left as it was, with no readings_ms, no average
    assert window == _timed(630)
    assert "window 8k none causal kept 0.002 ms (a re-measurement failed)" in settled[0]
    # the table marks how many readings each case has and keeps the spread in bold
    assert report._repeats_table(results)[2] == \
        "| dense 8k causal | dense, window | **555–630 (14%) ×3/1** |"


def test_remeasure_runs_the_same_measure_on_fresh_inputs():
    run = _bench_module("run")
    cases = _bench_module("cases")
    case = next(c for c in cases.matrix(False) if c.section == "window" and c.window_left < 0)
    made = []

    class FakeTorch:
        class cuda:
            synchronize = staticmethod(lambda: None)
            empty_cache = staticmethod(lambda: None)

    class FakeImpls:
        class Inputs:
            def __init__(self, c):
                made.append(c.name)
                self.case = c

        spot_check = staticmethod(lambda inputs, out: 0.001)

    class Impl:
        name = "flashband-sm90"
        skip_reason = staticmethod(lambda c: None)
        prepare = staticmethod(lambda inputs: (lambda: None, lambda: None, lambda: {"variant": "v"}))

    remeasure = run._remeasurer([case], [Impl()], lambda fn: 2.0, FakeTorch, FakeImpls)
    r = remeasure({"name": case.name}, "flashband-sm90")
    assert made == [case.name]
    assert r["ms"] == 2.0 and abs(r["tflops"] - case.flops / 2.0 / 1e9) < 1e-6
    assert r["max_abs_err"] == 0.001 and r["variant"] == "v"


def test_paged_ratios_divide_by_the_mean_of_the_two_ragged_readings():
    report, targets, cases = _bench_module("report"), _targets_module(), _bench_module("cases")
    # The matrix brackets every shape's pages with a ragged reading before and after.
    paged = cases.paged(quick=False)
    for shape in {c.plot["shape"] for c in paged}:
        kinds = [c.name.split(shape + " ")[1] for c in paged if c.plot["shape"] == shape]
        assert kinds == ["ragged", "page 1", "page 16", "page 128", "ragged again"]
    assert paged[0].describe() == paged[4].describe() | {"name": paged[0].name}  # one problem

    sm90 = "flashband-sm90"
    shape = "D=128 S=2048 non-causal"

    def case(page, again, tflops):
        return _case("paged", {"shape": shape, "page_size": page, "again": again}, 1.0,
                     {sm90: _timed(tflops)} if tflops else {})

    # ragged 600 before the pages and 500 after (clocks dropped): ratios over 550
    results = {"cases": [case(0, False, 600), case(16, False, 495), case(1, False, 440),
                         case(0, True, 500)], "ceilings": {}}
    lines = report._paged_table(results, report.Footnotes())
    assert lines[0] == "| shape | backend | ragged | page 1 | page 16 | ragged again |"
    assert lines[2] == f"| {shape} | sm90 | 600 | 440 (0.80x) | 495 (0.90x) | 500 |"
    rows = {t: (m, ok) for _, t, m, ok in targets.rows(results)}
    assert rows["sm90 paged page 16 >= 0.95x ragged"] == ("0.90x", "no")
    assert rows["sm90 paged page 1 >= 0.85x ragged"] == ("0.80x", "no")
    # an untrusted or missing second reading leaves the first alone
    results["cases"][-1]["results"] = {sm90: _timed(500, err=0.5)}
    assert report.ragged_tflops(results, shape, sm90) == 600
    results["cases"].pop()
    assert report.ragged_tflops(results, shape, sm90) == 600
    assert report.ragged_tflops(results, shape, "flashband-sm80") is None


def test_problems_measured_twice_count_a_section_s_readings():
    report = _bench_module("report")
    results = {"cases": [_repeat_case("dense", "a", SHAPE, {"flashband-sm90": _timed(600)}),
                         _repeat_case("paged", "b", SHAPE, {"flashband-sm90": _timed(612)}),
                         _repeat_case("paged", "c", SHAPE, {"flashband-sm90": _timed(606)})]}
    assert report._repeats_table(results)[2] == "| a | dense, paged ×2 | 600–612 (2%) |"


def test_the_page_says_what_paged_ratios_divide_by():
    report = _bench_module("report")
    bracketed = report.fake_results()
    md = report.markdown(bracketed, [])
    assert "| ragged again |" in md and "the mean of its readings before and after" in md
    # a results file from before the second ragged reading renders as it did
    older = dict(bracketed, cases=[c for c in bracketed["cases"] if not c["plot"].get("again")])
    md = report.markdown(older, [])
    assert "ragged again" not in md and "the ratios of sections 2, 4 and 7 divide by one" in md


def _gpu_clock():
    return _bench_module("gpu_clock")


def test_gpu_clock_gives_each_reading_the_samples_of_its_window(monkeypatch):
    import datetime
    import time

    # nvidia-smi prints local time: a zone other than UTC shows a parse that reads UTC
    monkeypatch.setenv("TZ", "Asia/Kolkata")
    time.tzset()
    try:
        gc = _gpu_clock()
        gpu, other = "GPU-aaaa", "GPU-bbbb"

        def line(t, mhz, w, uuid=gpu):
            return datetime.datetime.fromtimestamp(t).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3] + f", {uuid}, {mhz}, {w}"

        t0 = 1_800_000_000.0
        text = "\n".join([line(t0 + 0.00, 1980, 300.5), line(t0 + 0.02, 1700, 690.0),
                          line(t0 + 0.04, 1720, "[N/A]"), line(t0 + 0.06, 1740, 680.0),
                          "2026/12/04 19:00:00.000, GPU-aaaa, [N/A], [N/A]", "garbage",
                          line(t0 + 1.0, 1980, 100.0), line(t0 + 0.04, 1410, 150.0, other)])
        samples = gc.parse(text)
        assert len(samples) == 6  # lines without a clock or time dropped; a missing power is None
        assert abs(samples[1][0] - (t0 + 0.02)) < 1e-3 and samples[1][1:] == (gpu, 1700.0, 690.0)
        assert samples[2][3] is None
        ours = [x for x in samples if x[1] == gpu]
        # the window's edges count: 0.02 and 0.06 are in
        assert gc.window_stats(ours, [t0 + 0.02, t0 + 0.06]) == {"sm_mhz": 1720.0, "clock_samples": 3,
                                                                  "power_w": 685.0}
        assert gc.window_stats(ours, [t0 + 2, t0 + 3]) == {}
        results = {"ceilings": {"gemm_tflops": 700.0, "gemm_window": [t0 - 0.01, t0 + 0.01]},
                   "cases": [{"results": {"flashband-sm90": {"ms": 1.0, "window": [t0 + 0.01, t0 + 0.07]},
                                          "sdpa-cudnn": {"ms": 1.1, "window": [t0 + 0.9, t0 + 1.1]},
                                          "flex": {"skipped": "not supported"}}}]}
        assert gc.summary(results) is None  # nothing attached yet
        gc.attach(results, samples)  # two GPUs sampled and none named: no clocks
        assert gc.summary(results) is None
        gc.attach(results, samples, gpu)
        r = results["cases"][0]["results"]
        assert r["flashband-sm90"]["sm_mhz"] == 1720.0 and r["sdpa-cudnn"]["sm_mhz"] == 1980.0
        assert "sm_mhz" not in r["flex"]
        assert results["ceilings"]["gemm_sm_mhz"] == 1980.0
        text_ = gc.summary(results)
        assert "flashband-sm90 1720 MHz (1720–1720)" in text_ and "sdpa-cudnn 1980 MHz" in text_
        assert "GEMM ceiling's reading 1980 MHz" in text_
    finally:
        monkeypatch.undo()  # TZ as it was, then the C library's zone from it
        time.tzset()


def _stand_in_nvidia_smi(tmp_path):
    """A stand-in for nvidia-smi: one power reading for the probe, lines every 20 ms in a loop."""
    fake = tmp_path / "nvidia-smi"
    fake.write_text("#!" + sys.executable + "\n"
                    "import datetime, sys, time\n"
                    "query = [a for a in sys.argv if a.startswith('--query-gpu=')][0]\n"
                    "if '-lms' not in sys.argv:\n"
                    "    print('612.5' if query.endswith('power.draw.instant') else 'bad'); sys.exit(0)\n"
                    "assert query == '--query-gpu=timestamp,uuid,clocks.sm,power.draw.instant', query\n"
                    "while True:\n"
                    "    print(datetime.datetime.now().strftime('%Y/%m/%d %H:%M:%S.%f')[:-3] + ', GPU-x, 1755, 612.5', flush=True)\n"
                    "    time.sleep(0.02)\n")
    fake.chmod(0o755)
    return fake


def _alive(pid):
    import pathlib as _pl
    status = _pl.Path(f"/proc/{pid}/status")
    try:
        return "\tZ" not in [l for l in status.read_text().splitlines() if l.startswith("State:")][0]
    except (OSError, IndexError):
        return False


def test_gpu_clock_sampler_runs_a_sampler_and_cleans_up(tmp_path):
    gc = _gpu_clock()
    import pathlib as _pl
    import time

    fake = _stand_in_nvidia_smi(tmp_path)
    assert gc.power_field(str(fake)) == "power.draw.instant"
    sampler = gc.Sampler(exe=str(fake))
    path, pid = _pl.Path(sampler.path), sampler.proc.pid
    start = time.time()
    while time.time() - start < 5 and path.read_text().count("\n") < 5:
        time.sleep(0.05)
    samples = sampler.stop()
    assert len(samples) >= 5, samples
    assert all(start - 1 <= t <= time.time() and tuple(rest) == ("GPU-x", 1755.0, 612.5) for t, *rest in samples)
    assert not path.exists() and not _alive(pid)  # the temporary file and the sampler are gone
    assert sampler.stop() == []  # a second stop is harmless
    assert gc.Sampler(exe=str(tmp_path / "missing")).stop() == []  # cannot start: no clocks


def test_gpu_clock_sampler_dies_with_the_run(tmp_path):
    import subprocess
    import time

    fake = _stand_in_nvidia_smi(tmp_path)
    child = ("import sys, os; sys.path.insert(0, sys.argv[1]); import gpu_clock; "
             "s = gpu_clock.Sampler(exe=sys.argv[2]); print(s.proc.pid, flush=True); os._exit(0)")
    out = subprocess.run([sys.executable, "-c", child, str(RUN.parent), str(fake)], capture_output=True,
                         text=True, timeout=30, check=True).stdout
    pid = int(out.split()[0])
    deadline = time.time() + 5
    while _alive(pid) and time.time() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)


def test_gpu_clock_can_be_turned_off(tmp_path, monkeypatch):
    gc = _gpu_clock()
    monkeypatch.setenv("FB_BENCH_CLOCK", "0")
    sampler = gc.Sampler(exe=str(_stand_in_nvidia_smi(tmp_path)))
    assert sampler.proc is None and sampler.stop() == []


def test_report_shows_the_clock_line_only_with_clocks(tmp_path):
    report = _bench_module("report")
    results = report.fake_results(quick=True)
    md = tmp_path / "a.md"
    report.render(results, md, tmp_path / "img")
    assert "SM clock during the readings" not in md.read_text()
    for case in results["cases"]:
        for r in case["results"].values():
            if "ms" in r:
                r["sm_mhz"] = 1800.0
    report.render(results, md, tmp_path / "img")
    assert "SM clock during the readings" in md.read_text()
    assert "a record, not a correction" in md.read_text()


def test_graph_rows_stay_out_of_the_best_flashband_ratios():
    """Decode's "(graph)" columns time replays of a captured run; the best-flashband ratios
    compare launches, so they leave those rows out."""
    report = _bench_module("report")
    c = _case("decode", {"B": 1, "kv": 2048}, 1.0,
              {"flashband-sm80": {"tbps": 2.0, "ms": 1.0, "max_abs_err": 0.01},
               "flashband-sm80 (graph)": {"tbps": 3.0, "ms": 0.7, "max_abs_err": 0.01}})
    assert report.best(c, True) == ("flashband-sm80", 2.0)
