"""The GPU's SM clock and power draw during each reading of the benchmark.

A kernel that draws more power can run at a lower clock than its peer in the same run (the
H200 throttles at its power limit), and the same problem read twice in one run has differed
by up to 13% for sm90 while sm80 read the same (docs/journal/2026-12-04.md, s50): TFLOP/s
alone cannot tell a slower kernel from a slower clock. nvidia-smi samples the clock and
power in a separate process (a driver query every 20 ms; FB_BENCH_CLOCK=0 turns it off),
each reading keeps the wall-clock window of its do_bench call (warm-up included), and
attach() gives each reading the median of the samples inside its window. Without
nvidia-smi the readings simply carry no clock.
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
# power.draw is a one-second average on Hopper; readings are 50-300 ms, so the instant value
# where the driver has it (power_field picks).
FIELDS = ("timestamp", "uuid", "clocks.sm")
POWER_FIELDS = ("power.draw.instant", "power.draw")

Sample = Tuple[float, str, float, Optional[float]]  # (epoch seconds, GPU uuid, SM MHz, watts)


def enabled() -> bool:
    """FB_BENCH_CLOCK=0 turns the sampling off (to measure what it costs)."""
    return os.environ.get("FB_BENCH_CLOCK", "1") != "0"


_libc = None  # loaded in the parent: the child between fork and exec only calls it
_parent = 0


def _die_with_parent() -> None:
    """In the child: SIGTERM when the parent dies (prctl PR_SET_PDEATHSIG = 1), so that a
    run killed by its time limit leaves no sampler behind; and exit if it already has."""
    if _libc is not None:
        _libc.prctl(1, signal.SIGTERM)
    if os.getppid() != _parent:
        os._exit(1)


def power_field(exe: str) -> str:
    """The first of POWER_FIELDS that nvidia-smi answers with a number."""
    for field in POWER_FIELDS:
        try:
            out = subprocess.run([exe, f"--query-gpu={field}", "--format=csv,noheader,nounits"],
                                 capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL)
            float(out.stdout.splitlines()[0])
            return field
        except (OSError, subprocess.SubprocessError, ValueError, IndexError):
            continue
    return POWER_FIELDS[-1]


class Sampler:
    """nvidia-smi writing one CSV line per GPU every PERIOD_MS to a temporary file until stop()
    (not beside the results: the GPU machine returns at most 8 files). Never fails the run:
    anything that goes wrong leaves the readings without clocks."""

    def __init__(self, exe: Optional[str] = None):
        self.proc: Optional[subprocess.Popen] = None
        self.path: Optional[pathlib.Path] = None
        exe = exe or shutil.which("nvidia-smi")
        if not exe or not enabled():
            return
        global _libc, _parent
        try:
            if _libc is None:
                _libc = ctypes.CDLL(None)
            _parent = os.getpid()
            query = ",".join(FIELDS + (power_field(exe),))
            cmd = [exe, f"--query-gpu={query}", "--format=csv,noheader,nounits", "-lms", str(PERIOD_MS)]
            # Line-buffered, so that every line written before stop() is in the file.
            stdbuf = shutil.which("stdbuf")
            if stdbuf:
                cmd = [stdbuf, "-oL"] + cmd
            fd, name = tempfile.mkstemp(prefix="gpu_clock_", suffix=".csv")
            self.path = pathlib.Path(name)
            with os.fdopen(fd, "w") as out:
                self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL,
                                             stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        except Exception:  # noqa: BLE001 (an optional record: never the run's failure)
            self.proc = None
            self._remove()

    def _remove(self) -> None:
        if self.path is not None:
            self.path.unlink(missing_ok=True)
            self.path = None

    def stop(self) -> List[Sample]:
        """Ends the sampler (SIGTERM, then SIGKILL; never waits more than a few seconds) and
        returns its samples."""
        if self.proc is None:
            return []
        try:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=2)
        except Exception:  # noqa: BLE001 (a sampler stuck in the driver: leave it to the death signal)
            pass
        self.proc = None
        try:
            return parse(self.path.read_text(errors="replace")) if self.path else []
        except OSError:
            return []
        finally:
            self._remove()


def parse(text: str) -> List[Sample]:
    """nvidia-smi's CSV lines -> samples; a line without a time or clock is dropped, a power
    it could not read ([N/A]) is None."""
    samples: List[Sample] = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 4:
            continue
        try:
            # nvidia-smi prints local time, as naive datetimes' timestamp() reads it.
            t = datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            mhz = float(parts[2])
        except ValueError:
            continue
        try:
            watts: Optional[float] = float(parts[3])
        except ValueError:
            watts = None
        samples.append((t, parts[1], mhz, watts))
    return samples


def window_stats(samples: Sequence[Sample], window: Sequence[float]) -> Dict[str, float]:
    """The median SM clock and power of the samples inside [start, end]; {} for none."""
    inside = [s for s in samples if window[0] <= s[0] <= window[1]]
    if not inside:
        return {}
    stats = {"sm_mhz": statistics.median(s[2] for s in inside), "clock_samples": len(inside)}
    watts = [s[3] for s in inside if s[3] is not None]
    if watts:
        stats["power_w"] = statistics.median(watts)
    return stats


def attach(results: dict, samples: Sequence[Sample], uuid: Optional[str] = None) -> None:
    """Adds window_stats to every reading (and the GEMM ceiling) that kept a window, from the
    samples of the GPU `uuid` (nvidia-smi's "GPU-..." form); without one, only where a
    single GPU was sampled."""
    uuids = {s[1] for s in samples}
    if uuid is not None:
        samples = [s for s in samples if s[1] == uuid]
    elif len(uuids) != 1:
        return
    if not samples:
        return
    ceil = results.get("ceilings", {})
    if isinstance(ceil, dict) and ceil.get("gemm_window"):
        ceil.update({"gemm_" + k: v for k, v in window_stats(samples, ceil["gemm_window"]).items()})
    for case in results.get("cases", []):
        for r in case.get("results", {}).values():
            if isinstance(r, dict) and r.get("window"):
                r.update(window_stats(samples, r["window"]))


def device_uuid(torch) -> Optional[str]:
    """The benchmark's GPU (CUDA device 0) as nvidia-smi names it, or None."""
    try:
        return "GPU-" + str(torch.cuda.get_device_properties(0).uuid)
    except Exception:  # noqa: BLE001
        return None


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
            f"its samples, here their median and range per implementation): " + ", ".join(parts) + tail +
            ". A sample is the clock of an instant, and readings of one problem do not follow it "
            "(docs/findings.md F33): a record, not a correction")
