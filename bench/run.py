#!/usr/bin/env python3
"""flashband's side-by-side benchmark: the BENCH.md matrix for every flashband GPU backend in
the build and the peers (cuDNN and FlashAttention-2 through torch SDPA, FlexAttention), timed
in the same process with triton.testing.do_bench (median).

Writes the raw numbers (results.json, rewritten after every case, so an interrupted run keeps
what it measured), a markdown page of tables with the best peer and the ratio, and up to four
PNG plots. A failing implementation or shape records its error and the run continues. A
problem that two sections share and whose readings disagree is measured again (repeats.py).
Each reading also keeps its time window and, where nvidia-smi runs, the GPU's SM clock and
power during it (gpu_clock.py), so that a slower clock is told from a slower kernel.

  python bench/run.py                      # full matrix (~8 min on an H200)
  python bench/run.py --quick --out out/   # ~1 min subset, everything under out/
  python bench/run.py --backends sm90,sdpa-cudnn --sections dense
  python bench/run.py --report-only bench/results.json   # re-render, no GPU needed
  python bench/run.py --selftest --out /tmp/x            # render synthetic results, no GPU
  python bench/run.py --dry-run --sections fp8kv,mask    # the calls on the cpu backend, no GPU
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import datetime
import json
import os
import pathlib
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import cases as matrix_mod  # noqa: E402  (no torch: --help, --selftest and --report-only run anywhere)
import gpu_clock  # noqa: E402
import repeats  # noqa: E402
import report  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    p.add_argument("--quick", action="store_true", help="a ~1 minute subset of the matrix")
    p.add_argument("--out", type=pathlib.Path, metavar="DIR",
                   help="write results.json, benchmarks.md and img/*.png under DIR (default: "
                        "bench/results.json, docs/benchmarks.md, docs/img/)")
    p.add_argument("--backends", metavar="LIST",
                   help="comma-separated substrings of implementation names to run: "
                        "flashband-sm90, flashband-sm80, flashband-cudnn, sdpa-cudnn, sdpa-fa2, "
                        "flex, and decode's 'flashband-sm80 (graph)', 'flashband-cudnn (graph)' "
                        "(e.g. 'flashband,sdpa-cudnn', or 'graph'); default: all")
    p.add_argument("--sections", metavar="LIST",
                   help=f"comma-separated subset of {','.join(matrix_mod.SECTIONS)}")
    p.add_argument("--time-budget", type=float, metavar="SECONDS",
                   help="stop starting new cases after this long (the report is still written; "
                        "the rest is marked skipped); 0 = no limit (default: 540)")
    p.add_argument("--warmup-ms", type=float, help="do_bench warm-up (default 25, quick 10)")
    p.add_argument("--rep-ms", type=float, help="do_bench repeat time (default 100, quick 40)")
    p.add_argument("--report-only", type=pathlib.Path, metavar="RESULTS_JSON",
                   help="render the page and plots from an existing results.json; no GPU")
    p.add_argument("--selftest", action="store_true",
                   help="render synthetic results (checks the report code without a GPU)")
    p.add_argument("--dry-run", action="store_true",
                   help="no GPU: every case of the chosen sections (--quick: of the quick subset) "
                        "shrunk to a tiny shape (cases.shrunk) and run once through flashband's cpu "
                        "backend with the benchmark's own calls, its output spot-checked against "
                        "the reference, and that reference shown to differ from the one without the "
                        "case's fp8 scales, sinks, window_right or tree mask; exits 1 on a failure")
    args = p.parse_args(argv)
    if args.dry_run:
        given = [f for f, v in (("--out", args.out), ("--backends", args.backends),
                                ("--time-budget", args.time_budget), ("--warmup-ms", args.warmup_ms),
                                ("--rep-ms", args.rep_ms), ("--report-only", args.report_only),
                                ("--selftest", args.selftest)) if v]
        if given:
            p.error(f"--dry-run times nothing and writes nothing: {', '.join(given)} not taken with it")
    elif args.time_budget is None:
        args.time_budget = 540.0
    return args


def output_paths(out):
    if out:
        return out / "results.json", out / "benchmarks.md", out / "img"
    return HERE / "results.json", ROOT / "docs" / "benchmarks.md", ROOT / "docs" / "img"


def write_json(path: pathlib.Path, results: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(results, indent=1, default=str))
    os.replace(tmp, path)


class Progress:
    def __init__(self, total: int):
        self.total, self.done, self.start = total, 0, time.time()

    def elapsed(self) -> float:
        return time.time() - self.start

    def line(self, what: str, impl: str, result: dict) -> None:
        self.done += 1
        if "ms" in result:
            value = (f"{result['tbps']:6.2f} TB/s" if "tbps" in result
                     else f"{result['tflops']:6.0f} TFLOP/s")
            value += f"  {result['ms']:8.3f} ms  err {result.get('max_abs_err', float('nan')):.3g}"
            if "workspace_bytes" in result:  # the fp8kv decode rows (issue 65)
                value += (f"  workspace {' + '.join(map(str, result['workspace_bytes']))} B, "
                          f"{result.get('num_kv_splits', '?')} splits")
        elif "error" in result:
            value = "ERROR " + result["error"][:100]
        else:
            value = "skip  " + result.get("skipped", "")[:80]
        pct = 100 * self.done / max(self.total, 1)
        print(f"[{self.done:4d}/{self.total} {pct:3.0f}% {self.elapsed():5.0f}s] {what:38s} "
              f"{impl:16s} {value}", flush=True)


def run_benchmark(args) -> int:
    # Started before torch (no threads yet to fork beside), stopped however the run ends.
    clock = gpu_clock.Sampler()
    try:
        return _run_benchmark(args, clock)
    finally:
        clock.stop()


def _run_benchmark(args, clock: gpu_clock.Sampler) -> int:
    import torch
    import triton.testing

    import flashband
    import impls

    if not torch.cuda.is_available():
        print("run.py: needs a CUDA GPU (use --selftest or --report-only without one)",
              file=sys.stderr)
        return 2
    json_path, md_path, img_dir = output_paths(args.out)
    warmup = args.warmup_ms or (10.0 if args.quick else 25.0)
    rep = args.rep_ms or (40.0 if args.quick else 100.0)

    def time_ms(fn):
        return triton.testing.do_bench(fn, warmup=warmup, rep=rep, return_mode="median")

    patterns = [s.strip() for s in (args.backends or "").split(",") if s.strip()]
    chosen = [i for i in impls.implementations()
              if not patterns or any(p in i.name for p in patterns)]
    sections = [s.strip() for s in args.sections.split(",")] if args.sections else None
    unknown = set(sections or []) - set(matrix_mod.SECTIONS)
    if unknown:
        print(f"run.py: unknown sections {sorted(unknown)}", file=sys.stderr)
        return 2
    todo = matrix_mod.matrix(args.quick, sections)
    command = "python bench/run.py " + " ".join(sys.argv[1:])
    results = {"meta": {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                        "quick": args.quick, "command": command.strip(),
                        "versions": impls.versions(), "implementations": [i.name for i in chosen],
                        "timing": {"warmup_ms": warmup, "rep_ms": rep, "return_mode": "median"}},
               "ceilings": {}, "cases": []}
    progress = Progress(len(todo) * len(chosen) + 1)
    print(f"run.py: {len(todo)} cases x {len(chosen)} implementations "
          f"({', '.join(i.name for i in chosen)}); results -> {json_path}", flush=True)

    try:
        results["ceilings"] = impls.ceilings(time_ms)
        c = results["ceilings"]
        progress.line("ceilings", "torch", {"skipped": f"copy {c['copy_tbps']:.2f} TB/s, "
                                                       f"GEMM {c['gemm_tflops']:.0f} TFLOP/s"})
    except Exception as e:  # keep going: the ratios simply lose their ceiling
        results["ceilings"] = {"error": _err(e)}
        progress.line("ceilings", "torch", {"error": _err(e)})
    torch.cuda.empty_cache()

    def over_budget() -> bool:
        return bool(args.time_budget) and progress.elapsed() > args.time_budget

    aborted = None
    for case in todo:
        entry = {"section": case.section, "name": case.name, "params": case.describe(),
                 "plot": case.plot, "flops": case.flops, "bytes": case.bytes, "results": {}}
        results["cases"].append(entry)
        entry["auto_backend"] = _auto(flashband, case)
        if aborted or over_budget():
            why = aborted or f"time budget of {args.time_budget:.0f} s spent"
            for i in chosen:
                entry["results"][i.name] = {"skipped": why}
                progress.done += 1
            continue
        try:
            inputs = impls.Inputs(case)
        except Exception as e:
            for i in chosen:
                entry["results"][i.name] = {"error": "inputs: " + _err(e)}
                progress.line(case.name, i.name, entry["results"][i.name])
            inputs = None
        for impl in chosen if inputs is not None else []:
            r = measure(impl, case, inputs, time_ms, torch, impls)
            entry["results"][impl.name] = r
            progress.line(case.name, impl.name, r)
            if "error" in r and not _cuda_alive(torch):
                aborted = f"CUDA context lost after {impl.name} on {case.name}"
                print(f"run.py: {aborted}; skipping the rest", flush=True)
                break
        del inputs
        torch.cuda.empty_cache()
        write_json(json_path, results)

    # "settled": what was measured again, or why nothing was (report.py words section 8 by it)
    if aborted:
        results["meta"]["settled"] = "the run was aborted"
    elif over_budget():
        results["meta"]["settled"] = f"the time budget of {args.time_budget:.0f} s was spent"
    else:
        results["meta"]["settled"] = repeats.settle(
            results, _remeasurer(todo, chosen, time_ms, torch, impls),
            stop=over_budget)
        for line in results["meta"]["settled"]:
            print(f"run.py: measured again: {line}", flush=True)
    try:
        gpu_clock.attach(results, clock.stop(), gpu_clock.device_uuid(torch))
    except Exception as e:  # an optional record: the results stand without it
        print(f"run.py: no SM clocks ({_err(e)})", flush=True)
    write_json(json_path, results)
    written = report.render(results, md_path, img_dir)
    print(f"run.py: done in {progress.elapsed():.0f}s; wrote {json_path}, "
          + ", ".join(str(p) for p in written), flush=True)
    return 1 if aborted else 0


def measure(impl, case, inputs, time_ms, torch, impls) -> dict:
    reason = impl.skip_reason(case)
    if reason:
        return {"skipped": reason}
    try:
        fn, output, info = impl.prepare(inputs)
        fn()
        torch.cuda.synchronize()
        err = impls.spot_check(inputs, output())
        start = time.time()
        ms = time_ms(fn)
        r = {"ms": ms, "tflops": case.flops / ms / 1e9, "max_abs_err": err, "window": [start, time.time()]}
        if case.memory_bound:
            r["tbps"] = case.bytes / ms / 1e9
        r.update(info())
        return r
    except Exception as e:
        return {"error": _err(e)}


def _remeasurer(todo, chosen, time_ms, torch, impls):
    """remeasure(entry, impl name) for repeats.settle: fresh inputs, the same measure()."""
    cases = {c.name: c for c in todo}
    by_name = {i.name: i for i in chosen}

    def remeasure(entry: dict, name: str) -> dict:
        case = cases[entry["name"]]
        try:
            inputs = impls.Inputs(case)
        except Exception as e:
            return {"error": "inputs: " + _err(e)}
        r = measure(by_name[name], case, inputs, time_ms, torch, impls)
        del inputs
        torch.cuda.empty_cache()
        return r

    return remeasure


def dry_run(args) -> int:
    import torch  # noqa: F401  (impls needs it; a clear ImportError here otherwise)

    import impls

    sections = [s.strip() for s in args.sections.split(",")] if args.sections else None
    cpu = impls.Flashband("cpu")
    failed = 0
    for case in map(matrix_mod.shrunk, matrix_mod.matrix(args.quick, sections)):
        reason = cpu.skip_reason(case, device="cpu")
        if reason:
            failed += 1
            print(f"FAIL {case.name}: the cpu backend refuses it: {reason}", flush=True)
            continue
        x = impls.Inputs(case, device="cpu")
        try:
            fn, output, info = cpu.prepare(x)
            fn()
            err = impls.spot_check(x, output())
            recorded = info()
        except Exception as e:
            failed += 1
            print(f"FAIL {case.name}: {_err(e)}", flush=True)
            continue
        line = f"max err {err:.3g}" + "".join(f", {k} {recorded[k]}" for k in ("workspace_bytes", "workspace_error")
                                              if k in recorded)
        good = err <= report.MISMATCH
        plain = matrix_mod.without_features(case)
        if plain != case:
            twin = copy.copy(x)
            twin.case, twin.sinks, twin.mask = plain, None, None
            blind = impls.spot_check(twin, output())
            line += f", {blind:.3g} against the reference without its features"
            good = good and blind > report.MISMATCH
        failed += not good
        shape = dataclasses.astuple(case)[2:8]
        print(f"{'ok  ' if good else 'FAIL'} {case.name} (shrunk to B, qo, kv, Hq, Hk, D = {shape}): {line}",
              flush=True)
    print(f"run.py: dry run, {failed} failed", flush=True)
    return 1 if failed else 0


def _err(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:400] if text else ''}"


def _auto(flashband, case) -> str:
    try:
        return flashband.select_backend(case.op, dtype="bfloat16", device="cuda",
                                        head_dim=case.head_dim, num_qo_heads=case.num_qo_heads,
                                        num_kv_heads=case.num_kv_heads, causal=case.causal,
                                        window_left=case.window_left, page_size=case.page_size,
                                        logits_soft_cap=case.logits_soft_cap or None,
                                        **case.feature_args)
    except Exception as e:
        return "none (" + _err(e)[:60] + ")"


def _cuda_alive(torch) -> bool:
    """A sticky CUDA error (e.g. an illegal address) poisons the context: stop measuring."""
    try:
        torch.cuda.synchronize()
        return torch.ones(1, device="cuda").add_(1).item() == 2.0
    except Exception:
        return False


def main(argv=None) -> int:
    args = parse_args(argv)
    json_path, md_path, img_dir = output_paths(args.out)
    if args.selftest:
        results = report.fake_results(args.quick)
        write_json(json_path, results)
        written = report.render(results, md_path, img_dir)
        print("run.py: selftest wrote " + ", ".join(str(p) for p in [json_path] + written))
        return 0
    if args.dry_run:
        return dry_run(args)
    if args.report_only:
        results = json.loads(args.report_only.read_text())
        written = report.render(results, md_path, img_dir)
        print("run.py: wrote " + ", ".join(str(p) for p in written))
        return 0
    return run_benchmark(args)


if __name__ == "__main__":
    sys.exit(main())
