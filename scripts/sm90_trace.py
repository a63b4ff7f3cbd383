"""The sm90 kernel's event timeline (src/backends/sm90/trace.h), recorded and read.

Needs a build with -DFLASHBAND_SM90_TRACE=ON, e.g. on the GPU machine

  FB_CMAKE_EXTRA="-DFLASHBAND_SM90_TRACE=ON -DFLASHBAND_BUILD_TESTS=OFF" scripts/device_check.sh build

(CMake keeps the setting in build/: a later ordinary build in the same folder must pass
-DFLASHBAND_SM90_TRACE=OFF -DFLASHBAND_BUILD_TESTS=ON). Then, with PYTHONPATH as
device_check.sh sets it:

  python scripts/sm90_trace.py record OUTDIR name "probe args" [name "probe args"]...

runs each case with bench/probe.py --time (the last launch is the one kept; the trace file
is written at exit, trace.cpp), writes OUTDIR/<name>.trace.gz (its events, compact) and
prints the report. Anywhere:

  python scripts/sm90_trace.py report FILE.trace.gz...

What the report shows, per case:
- per consumer warpgroup, the time between consecutive events, by (event -> event), as mean
  cycles and share of the warpgroup's time: where it waits and for how long. A clock read
  orders the code around it: in the ping-pong kernels (D = 64, 128) a loop step records no
  `scored`, since one between the softmax and the P V wait kept the softmax ahead of that wait
  and so changed the kernel (ptxas puts the wait first there); their loop steps show
  s_done -> pv_done, the P V wait and the softmax together;
- "tensor idle": the share of each CTA's time in which no consumer warpgroup has a GEMM in
  flight (issued and not yet waited for), and what the warpgroups were doing then. A GEMM in
  flight may still be queued behind another, so this is a lower bound on the tensor cores'
  idle time;
- the producer's time between its events (its waits for free stages end in them).
"""
import collections
import gzip
import json
import struct
import sys

EVENTS = {1: "unit", 2: "q_ready", 3: "kv_ready", 4: "turn", 5: "issued", 6: "s_done", 7: "scored",
          8: "pv_done", 9: "stored", 10: "p_unit", 11: "p_q", 12: "p_k", 13: "p_v"}
HEADER_WORDS = 8
CLOCK_BITS = 28


def parse_dump(path):
    """The raw dump -> {"lanes": [[cta, lane, sm, ns_start, [(code, cycles)...]]...]} for the
    last launch. Cycles are the SM's clock, unwrapped from the lane's first reading on, so
    the lanes of one CTA share a time axis."""
    with open(path, "rb") as f:
        lanes_per_cta, ctas, words, launch = struct.unpack("<4q", f.read(32))
        data = f.read()
    out = []
    mask = (1 << CLOCK_BITS) - 1
    for cta in range(ctas):
        for lane in range(lanes_per_cta):
            base = (cta * lanes_per_cta + lane) * words * 4
            hdr = struct.unpack_from("<8I", data, base)
            count, ns_lo, ns_hi, clk0, sm, lane_launch = hdr[:6]
            if count == 0 or lane_launch != launch:
                continue
            raw = struct.unpack_from(f"<{count}I", data, base + HEADER_WORDS * 4)
            prev, t, evs = clk0 & mask, clk0, []
            for w in raw:
                c = w & mask
                t += (c - prev) & mask
                prev = c
                evs.append((w >> CLOCK_BITS, t))
            out.append([cta, lane, sm, ns_lo | (ns_hi << 32), evs])
    return {"launch": launch, "lanes": out}


def gemm_intervals(evs):
    """[start, end) of each stretch in which this warpgroup has a GEMM in flight: from an
    `issued` to the event of its wait for zero outstanding groups (see consumer.h)."""
    out = []
    names = [EVENTS.get(c, "?") for c, _ in evs]
    for i, name in enumerate(names):
        if name != "issued":
            continue
        nxt = names[i + 1:i + 4]
        end = None
        if nxt[:1] == ["s_done"]:
            # a loop step (S, softmax, then P V), a ping-pong loop step (no `scored`: its
            # P V ends somewhere before `pv_done`, so the interval may be too long and the
            # idle share stays a lower bound) or a unit's first, unfused Q K^T
            if nxt[1:3] == ["scored", "pv_done"]:
                end = i + 3
            elif nxt[1:2] == ["pv_done"]:
                end = i + 2
            else:
                end = i + 1
        elif nxt[:1] == ["pv_done"]:
            # fused boundary: P V, store, then the next unit's first Q K^T; else a last P V
            end = i + 3 if nxt[1:3] == ["stored", "s_done"] else i + 1
        if end is not None and end < len(evs):
            out.append((evs[i][1], evs[end][1]))
    return out


def state_at(evs, t):
    """The (previous event -> next event) stretch a lane is in at cycle t."""
    lo, hi = 0, len(evs)
    while lo < hi:
        mid = (lo + hi) // 2
        if evs[mid][1] <= t:
            lo = mid + 1
        else:
            hi = mid
    a = EVENTS.get(evs[lo - 1][0], "?") if lo > 0 else "start"
    b = EVENTS.get(evs[lo][0], "?") if lo < len(evs) else "end"
    return f"{a}->{b}"


def stretch_table(role, lanes, span, out, min_share=0.0, limit=None):
    """The time between consecutive events of these lanes, by (event -> event): count, mean
    cycles and share of `span`, largest first (at most `limit` rows, none under min_share)."""
    trans = collections.defaultdict(lambda: [0, 0])
    for evs in lanes:
        for (a, ta), (b, tb) in zip(evs, evs[1:]):
            k = f"{EVENTS.get(a, '?')}->{EVENTS.get(b, '?')}"
            trans[k][0] += 1
            trans[k][1] += tb - ta
    print(f"  {role + ' stretch':<22} {'count':>8} {'mean cyc':>9} {'share':>6}", file=out)
    rows = [kv for kv in sorted(trans.items(), key=lambda kv: -kv[1][1]) if kv[1][1] / max(1, span) >= min_share]
    for k, (n, tot) in rows[:limit]:
        print(f"  {k:<22} {n:>8} {tot / n:>9.0f} {100 * tot / max(1, span):>5.1f}%", file=out)


def report(trace, name, out=sys.stdout):
    lanes = trace["lanes"]
    by_cta = collections.defaultdict(dict)
    for cta, lane, sm, ns, evs in lanes:
        by_cta[cta][lane] = evs
    consumers = [(cta, lane, evs) for cta, lane, _, _, evs in lanes if lane > 0 and evs]
    producers = [evs for _, lane, _, _, evs in lanes if lane == 0 and evs]
    span = sum(evs[-1][1] - evs[0][1] for _, _, evs in consumers)
    units = sum(sum(1 for c, _ in evs if c == 1) for _, _, evs in consumers)
    print(f"== {name}: {len(by_cta)} CTAs, {len(consumers)} consumer lanes, {units} unit starts, "
          f"mean lane span {span / max(1, len(consumers)):.0f} cycles", file=out)

    stretch_table("consumer", [evs for _, _, evs in consumers], span, out, min_share=0.002)

    idle_total, cta_total = 0, 0
    idle_states = collections.Counter()
    for cta, lanes_of in by_cta.items():
        cons = [evs for lane, evs in lanes_of.items() if lane > 0 and evs]
        if not cons:
            continue
        t0 = min(evs[0][1] for evs in cons)
        t1 = max(evs[-1][1] for evs in cons)
        cta_total += t1 - t0
        iv = sorted(x for evs in cons for x in gemm_intervals(evs))
        t = t0
        gaps = []
        for s, e in iv:
            if s > t:
                gaps.append((t, s))
            t = max(t, e)
        if t1 > t:
            gaps.append((t, t1))
        for s, e in gaps:
            idle_total += e - s
            mid = (s + e) // 2
            idle_states[" | ".join(state_at(evs, mid) for evs in cons)] += e - s
    print(f"  tensor idle (no GEMM in flight): {100 * idle_total / max(1, cta_total):.1f}% of CTA time; "
          f"warpgroup states then:", file=out)
    for k, v in idle_states.most_common(8):
        print(f"    {100 * v / max(1, cta_total):5.1f}%  {k}", file=out)

    pspan = sum(evs[-1][1] - evs[0][1] for evs in producers)
    stretch_table("producer", producers, pspan, out, limit=8)


def record(outdir, cases):
    """Each case twice through bench/probe.py --time: without recording (the trace build's
    own speed) and recording; the second run's last launch is the one kept."""
    import os
    import pathlib
    import re
    import subprocess
    probe = pathlib.Path(__file__).resolve().parent.parent / "bench" / "probe.py"
    os.makedirs(outdir, exist_ok=True)  # the kernel's dump is written there at exit
    for name, args in cases:
        dump = os.path.join(outdir, f"{name}.raw")
        times = []
        for events in ("0", os.environ.get("FLASHBAND_SM90_TRACE_EVENTS", "16384")):
            env = dict(os.environ, FLASHBAND_SM90_TRACE_EVENTS=events, FLASHBAND_SM90_TRACE_FILE=dump)
            r = subprocess.run([sys.executable, str(probe), *args.split(), "--time"], capture_output=True, text=True,
                               env=env)
            m = re.search(r"probe time ([0-9.]+) us", r.stdout)
            times.append(m.group(1) if m else "?")
            if r.returncode:
                print(f"{name}: probe failed: {r.stderr[-600:]}")
        print(f"{name} ({args}): {times[0]} us without recording, {times[1]} us recording")
        if not os.path.exists(dump):
            print(f"{name}: no trace written (is this a -DFLASHBAND_SM90_TRACE=ON build?)")
            continue
        trace = parse_dump(dump)
        os.remove(dump)
        trace["name"], trace["args"], trace["times_us"] = name, args, times
        with gzip.open(os.path.join(outdir, f"{name}.trace.gz"), "wt") as f:
            json.dump(trace, f)
        report(trace, name)


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "record":
        rest = sys.argv[3:]
        record(sys.argv[2], list(zip(rest[0::2], rest[1::2])))
    elif len(sys.argv) >= 3 and sys.argv[1] == "report":
        for path in sys.argv[2:]:
            with gzip.open(path, "rt") as f:
                trace = json.load(f)
            report(trace, trace.get("name", path))
    else:
        print(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()
