"""Problems that two sections of the matrix measure (the dense table's 8k-16k D = 128 shapes
are also the window table's unwindowed rows and the paged table's ragged ones): their
readings show the run's own noise, and the ratios of the window and paged sections divide
by one of them. Where an implementation's readings of one problem disagree, `settle`
measures each case again and keeps the median. No torch here: run.py passes the measuring."""

from __future__ import annotations

import statistics
from typing import Callable, Dict, List, Optional

SPREAD_FLAG = 0.05  # readings of one problem further apart than this are measured again


def ok(r: Optional[dict]) -> bool:
    """A timed result (report.ok without its error bound: an untrusted number is still a
    reading of the time)."""
    return bool(r) and "ms" in r


def repeated_problems(results: dict) -> List[List[dict]]:
    """Cases with equal params but for section and name, in groups of two or more, in
    first-seen order. Cases without params (hand-made results) are left out."""
    groups: Dict[tuple, List[dict]] = {}
    for c in results["cases"]:
        params = c.get("params")
        if params:
            problem = {k: v for k, v in params.items() if k not in ("section", "name")}
            if params.get("section") == "decode":
                problem["decode"] = True  # by its section there (cases.Case.op), by the flag elsewhere
            key = tuple(sorted(problem.items()))
            groups.setdefault(key, []).append(c)
    return [g for g in groups.values() if len(g) > 1]


def spread(values: List[float]) -> float:
    return max(values) / min(values) - 1.0


def settle(results: dict, remeasure: Callable[[dict, str], dict], rounds: int = 2,
           stop: Callable[[], bool] = lambda: False) -> List[str]:
    """For every repeated problem whose readings by one implementation differ by more than
    SPREAD_FLAG: `rounds` more readings of each of its cases (remeasure(case, impl) returns
    a result dict like the first; its error check is not used, the first one stands). A case
    whose re-measurements all succeed keeps the median of its readings (an odd count, so one
    of them), with every reading in "readings_ms"; one where any failed keeps its first
    reading. stop() is asked before each implementation and problem (run.py's time budget).
    Returns what it did, one line per implementation and problem."""
    assert rounds % 2 == 0, "an odd number of readings has a median that is one of them"
    done = []
    for group in repeated_problems(results):
        names = [n for n in group[0]["results"] if sum(ok(c["results"].get(n)) for c in group) > 1]
        for name in names:
            timed = [c for c in group if ok(c["results"].get(name))]
            if spread([c["results"][name]["ms"] for c in timed]) <= SPREAD_FLAG:
                continue
            if stop():
                done.append(f"{name}: {timed[0]['name']} and the rest not measured again (time budget)")
                return done
            parts = []
            for c in timed:
                r = c["results"][name]
                again = [remeasure(c, name) for _ in range(rounds)]
                if not all(ok(x) for x in again):
                    parts.append(f"{c['name']} kept {r['ms']:.3f} ms (a re-measurement failed)")
                    continue
                readings = [r["ms"]] + [x["ms"] for x in again]
                ms = statistics.median(readings)
                scale = r["ms"] / ms
                r["ms"] = ms
                for key in ("tflops", "tbps"):
                    if key in r:
                        r[key] *= scale
                r["readings_ms"] = readings
                # The kept reading's window (gpu_clock.attach gives it its clock).
                windows = [r.get("window")] + [x.get("window") for x in again]
                r["window"] = windows[readings.index(ms)]
                parts.append(f"{c['name']} {' / '.join(f'{v:.3f}' for v in readings)} ms")
            done.append(f"{name}: " + ", ".join(parts))
    return done
