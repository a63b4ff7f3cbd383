"""scripts/sm90_trace.py without a GPU: the dump format of src/backends/sm90/trace.cpp
written by hand, read back, and the report's numbers on a timeline whose answers are known."""

import gzip
import io
import json
import pathlib
import struct
import subprocess
import sys

SCRIPTS = pathlib.Path(__file__).resolve().parents[2] / "scripts"
sys.path.insert(0, str(SCRIPTS))
import sm90_trace as T  # noqa: E402

CODE = {v: k for k, v in T.EVENTS.items()}
LANES, WORDS = 4, T.HEADER_WORDS + 32
MASK = (1 << T.CLOCK_BITS) - 1


def write_dump(path, ctas, launch, lanes):
    """lanes: {(cta, lane): (lane_launch, clk0, [(event name, cycles after the previous)])}."""
    data = bytearray(ctas * LANES * WORDS * 4)
    for (cta, lane), (lane_launch, clk0, seq) in lanes.items():
        base = (cta * LANES + lane) * WORDS * 4
        words, t = [], clk0
        for name, dt in seq:
            t += dt
            words.append((CODE[name] << T.CLOCK_BITS) | (t & MASK))
        struct.pack_into("<8I", data, base, len(words), 0, 0, clk0 & 0xffffffff, 3, lane_launch, 0, 0)
        struct.pack_into(f"<{len(words)}I", data, base + T.HEADER_WORDS * 4, *words)
    path.write_bytes(struct.pack("<4q", LANES, ctas, WORDS, launch) + bytes(data))


def test_parse_unwraps_the_clock_and_keeps_the_last_launch(tmp_path):
    dump = tmp_path / "t.raw"
    # clk0 just below a 28-bit wrap: the events' low bits wrap, the cycles must not.
    start = (1 << T.CLOCK_BITS) - 10
    write_dump(dump, 2, 7, {
        (0, 1): (7, start, [("unit", 4), ("q_ready", 100), ("kv_ready", 2000)]),
        (1, 1): (6, start, [("unit", 4)]),  # an older launch's lane: left out
    })
    trace = T.parse_dump(str(dump))
    assert trace["launch"] == 7
    assert len(trace["lanes"]) == 1
    cta, lane, sm, _, evs = trace["lanes"][0]
    assert (cta, lane, sm) == (0, 1, 3)
    assert [T.EVENTS[c] for c, _ in evs] == ["unit", "q_ready", "kv_ready"]
    assert [t - start for _, t in evs] == [4, 104, 2104]


def test_gemm_intervals_follow_each_step_shape():
    seq = [("unit", 0), ("q_ready", 10), ("kv_ready", 10), ("issued", 10), ("s_done", 100),  # first Q K^T
           ("scored", 300), ("kv_ready", 10), ("turn", 10), ("issued", 10), ("s_done", 50),  # loop step
           ("scored", 300), ("pv_done", 20), ("kv_ready", 10), ("turn", 10), ("issued", 10),  # fused turn
           ("pv_done", 80), ("stored", 200), ("s_done", 5), ("unit", 1), ("scored", 300),
           ("kv_ready", 10), ("issued", 10), ("pv_done", 90), ("stored", 100),  # last, unfused
           ("kv_ready", 10), ("turn", 10), ("issued", 10), ("s_done", 50), ("pv_done", 400)]  # ping-pong step
    evs, t = [], 0
    for name, dt in seq:
        t += dt
        evs.append((CODE[name], t))
    got = T.gemm_intervals(evs)
    times = {i: t for i, (_, t) in enumerate(evs)}
    assert got == [(times[3], times[4]),    # first Q K^T: issued -> s_done
                   (times[8], times[11]),   # loop step: issued -> P V done
                   (times[14], times[17]),  # fused: issued -> the next unit's S done
                   (times[21], times[22]),  # last P V: issued -> P V done
                   (times[26], times[28])]  # ping-pong loop step (no `scored`): issued -> P V done


def test_report_idle_share_and_states(tmp_path):
    # One CTA, two consumer warpgroups: GEMMs in flight [0, 100) and [150, 200) in lane 1 and
    # [50, 120) in lane 2, so no GEMM runs in [120, 150) and [200, 300): 130 of 300 cycles.
    def lane(seq):
        return (1, 0, seq)
    dump = tmp_path / "t.raw"
    write_dump(dump, 1, 1, {
        (0, 1): lane([("issued", 0), ("s_done", 100), ("scored", 20), ("kv_ready", 20), ("turn", 5),
                      ("issued", 5), ("s_done", 50), ("scored", 50), ("stored", 50)]),
        (0, 2): lane([("unit", 0), ("issued", 50), ("s_done", 70), ("scored", 180)]),
        (0, 0): lane([("p_unit", 0), ("p_q", 10), ("p_k", 30)]),
    })
    out = io.StringIO()
    T.report(T.parse_dump(str(dump)), "synthetic", out=out)
    text = out.getvalue()
    assert "tensor idle (no GEMM in flight): 43.3% of CTA time" in text
    assert "p_q->p_k" in text and "75.0%" in text  # 30 of the producer's 40 cycles


def test_report_reads_a_recorded_file(tmp_path):
    trace = {"launch": 1, "name": "x", "lanes": [[0, 1, 0, 0, [[5, 0], [6, 100]]],
                                                 [0, 2, 0, 0, [[5, 10], [6, 90]]]]}
    path = tmp_path / "x.trace.gz"
    with gzip.open(path, "wt") as f:
        json.dump(trace, f)
    out = subprocess.run([sys.executable, str(SCRIPTS / "sm90_trace.py"), "report", str(path)],
                         capture_output=True, text=True, check=True).stdout
    assert "== x: 1 CTAs, 2 consumer lanes" in out
    assert "tensor idle (no GEMM in flight): 0.0%" in out
