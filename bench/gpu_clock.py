"""The GPU's SM clock and power draw during each reading of the benchmark.

A kernel that draws more power can run at a lower clock than its peer in the same run (the
H200 throttles at its power limit), and the same problem read twice in one run has differed
by up to 13% for sm90 while sm80 read the same (docs/notes.md, fiftieth session): TFLOP/s
alone cannot tell a slower kernel from a slower clock. nvidia-smi samples the clock and
power in a separate process (no cost on the GPU), each reading keeps the wall-clock window
of its do_bench call (warm-up included), and attach() gives each reading the median of the
samples inside its window. Without nvidia-smi the readings simply carry no clock.
"""

from __future__ import annotations

import ctypes
import datetime
import os
import pathlib
import shutil
import signal
import statistics
import subprocess
import tempfile
from typing import Dict, List, Optional, Sequence, Tuple

PERIOD_MS = 20
QUERY = "timestamp,clocks.sm,power.draw"

Sample = Tuple[float, float, float]  # (epoch seconds, SM MHz, watts)


_libc = None  # loaded in the parent: the child between fork and exec only calls it


def _die_with_parent() -> None:
    """In the child: SIGTERM when the parent dies (prctl PR_SET_PDEATHSIG = 1), so that a
    run killed by its time limit leaves no sampler behind."""
    if _libc is not None:
        _libc.prctl(1, signal.SIGTERM)


class Sampler:
    """nvidia-smi writing one CSV line per PERIOD_MS to a temporary file until stop() (not
    beside the results: the GPU machine returns at most 8 files)."""

    def __init__(self, exe: Optional[str] = None):
        self.proc: Optional[subprocess.Popen] = None
        exe = exe or shutil.which("nvidia-smi")
        if not exe:
            return
        global _libc
        if _libc is None:
            try:
                _libc = ctypes.CDLL(None)
            except OSError:
                pass
        fd, name = tempfile.mkstemp(prefix="gpu_clock_", suffix=".csv")
        os.close(fd)
        self.path = pathlib.Path(name)
        cmd = [exe, f"--query-gpu={QUERY}", "--format=csv,noheader,nounits", "-lms", str(PERIOD_MS)]
        # Line-buffered, so that the lines written before stop() are in the file.
        stdbuf = shutil.which("stdbuf")
        if stdbuf:
            cmd = [stdbuf, "-oL"] + cmd
        try:
            with open(self.path, "w") as out:
                self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL,
                                             preexec_fn=_die_with_parent)
        except OSError:
            self.proc = None
            self.path.unlink(missing_ok=True)

    def stop(self) -> List[Sample]:
        if self.proc is None:
            return []
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # its loop's own exit, which flushes
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        try:
            return parse(self.path.read_text())
        except OSError:
            return []
        finally:
            self.path.unlink(missing_ok=True)


def parse(text: str) -> List[Sample]:
    """nvidia-smi's CSV lines -> samples; lines it could not fill ([N/A]) are dropped."""
    samples = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 3:
            continue
        try:
            # nvidia-smi prints local time, as naive datetimes' timestamp() reads it.
            t = datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            samples.append((t, float(parts[1]), float(parts[2])))
        except ValueError:
            continue
    return samples


def window_stats(samples: Sequence[Sample], window: Sequence[float]) -> Dict[str, float]:
    """The median SM clock and power of the samples inside [start, end]; {} for none."""
    inside = [s for s in samples if window[0] <= s[0] <= window[1]]
    if not inside:
        return {}
    return {"sm_mhz": statistics.median(s[1] for s in inside),
            "power_w": statistics.median(s[2] for s in inside), "clock_samples": len(inside)}


def attach(results: dict, samples: Sequence[Sample]) -> None:
    """Adds window_stats to every reading (and the GEMM ceiling) that kept a window."""
    if not samples:
        return
    ceil = results.get("ceilings", {})
    if isinstance(ceil, dict) and ceil.get("gemm_window"):
        ceil.update({"gemm_" + k: v for k, v in window_stats(samples, ceil["gemm_window"]).items()})
    for case in results.get("cases", []):
        for r in case.get("results", {}).values():
            if isinstance(r, dict) and r.get("window"):
                r.update(window_stats(samples, r["window"]))


def summary(results: dict) -> Optional[str]:
    """One line for the report: each implementation's SM clock over its readings (the median
    of the readings' medians, and their range), and the GEMM ceiling's; None without clocks."""
    clocks: Dict[str, List[float]] = {}
    for case in results.get("cases", []):
        for name, r in case.get("results", {}).items():
            if isinstance(r, dict) and "sm_mhz" in r:
                clocks.setdefault(name, []).append(r["sm_mhz"])
    if not clocks:
        return None
    parts = [f"{name} {statistics.median(v):.0f} MHz ({min(v):.0f}–{max(v):.0f})"
             for name, v in sorted(clocks.items())]
    gemm = results.get("ceilings", {}).get("gemm_sm_mhz") if isinstance(results.get("ceilings"), dict) else None
    tail = f"; the GEMM ceiling's reading {gemm:.0f} MHz" if gemm else ""
    return (f"- SM clock during the readings (nvidia-smi every {PERIOD_MS} ms; per reading the median of "
            f"its samples, here their median and range per implementation): " + ", ".join(parts) + tail)
