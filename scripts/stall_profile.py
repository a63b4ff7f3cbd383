"""Reads the SASS source pages that scripts/ncu_source.sh saved (CSV) and prints where the
warps' stall samples fall: by opcode, and the instructions holding the most samples; with
--reasons LO HI, the stall reasons of instructions LO..HI-1 (e.g. a producer's range);
with --wavefronts, shared-memory wavefronts by opcode against ncu's ideal (bank conflicts,
e.g. of cp.async gathers); with --by-count, the samples grouped by how often each
instruction ran, which separates code run once per work unit from code run once per KV step
(--per N prints each count as a multiple of N, e.g. units x consumer warps).

  python3 scripts/stall_profile.py out/w16k_sass.csv [--top 25] [--around ADDR_INDEX]
      [--reasons LO HI] [--wavefronts] [--by-count [--per N]]
"""
import argparse
import collections
import csv


def number(text):
    return float((text or "0").replace(",", ""))


def load(path):
    """(source, stall samples, executed) per SASS line of the first kernel in the file."""
    rows = list(csv.reader(open(path)))
    at = next(i for i, r in enumerate(rows) if "Source" in r and "Address" in r)
    header = rows[at]
    col = {name: header.index(name) for name in
           ("Source", "Warp Stall Sampling (All Samples)", "Instructions Executed")}
    out = []
    for r in rows[at + 1:]:
        if len(r) <= max(col.values()) or r[0] == "Kernel Name":
            break  # the next kernel's section
        out.append((r[col["Source"]].strip(), number(r[col["Warp Stall Sampling (All Samples)"]]),
                    int(number(r[col["Instructions Executed"]]))))
    return out


def columns(path, names):
    """Per SASS line of the first kernel: {name: value} for the named numeric columns
    (names may be prefixes, e.g. "stall_"); the "(Not Issued)" variants are left out."""
    rows = list(csv.reader(open(path)))
    at = next(i for i, r in enumerate(rows) if "Source" in r and "Address" in r)
    header = rows[at]
    picked = [i for i, h in enumerate(header)
              if any(h == n or (n.endswith("_") and h.startswith(n)) for n in names) and "Not Issued" not in h]
    out = []
    for r in rows[at + 1:]:
        if len(r) < len(header) or r[0] == "Kernel Name":
            break
        out.append({header[i]: number(r[i]) for i in picked})
    return out


def opcode(src):
    words = src.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].split(".")[0] if words else ""


def main():
    p = argparse.ArgumentParser()
    p.add_argument("csv")
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--around", type=int, help="print the instructions around this index")
    p.add_argument("--reasons", type=int, nargs=2, metavar=("LO", "HI"),
                   help="stall reasons of the instructions LO..HI-1")
    p.add_argument("--wavefronts", action="store_true", help="shared-memory wavefronts by opcode")
    p.add_argument("--by-count", action="store_true", help="samples grouped by execution count")
    p.add_argument("--per", type=float, help="with --by-count: print counts as multiples of this")
    a = p.parse_args()
    rows = load(a.csv)
    if a.reasons:
        lo, hi = a.reasons
        reasons = collections.Counter()
        for c in columns(a.csv, ["stall_"])[lo:hi]:
            reasons.update(c)
        n = sum(reasons.values()) or 1.0
        print(f"stall reasons of instructions {lo}..{hi - 1} ({n:.0f} samples):",
              ", ".join(f"{k[6:]} {100 * v / n:.1f}%" for k, v in reasons.most_common(8)))
    if a.wavefronts:
        actual, ideal = collections.Counter(), collections.Counter()
        names = ["L1 Wavefronts Shared", "L1 Wavefronts Shared Ideal"]
        for (src, _, _), c in zip(rows, columns(a.csv, names)):
            actual[opcode(src)] += c.get(names[0], 0.0)
            ideal[opcode(src)] += c.get(names[1], 0.0)
        print("shared wavefronts by opcode (actual / ideal):",
              ", ".join(f"{op} {v:.3g} / {ideal[op]:.3g}" for op, v in actual.most_common(6) if v > 0))
    total = sum(s for _, s, _ in rows) or 1.0
    by_op = collections.Counter()
    for src, s, _ in rows:
        by_op[opcode(src)] += s
    print(f"{len(rows)} instructions, {total:.0f} samples")
    print("by opcode:", ", ".join(f"{op} {100 * s / total:.1f}%" for op, s in by_op.most_common(12)))
    if a.by_count:
        groups = collections.defaultdict(lambda: [0, 0.0, 1 << 62, -1])  # n, samples, first, last
        for i, (_, s, ex) in enumerate(rows):
            g = groups[ex]
            g[0] += 1
            g[1] += s
            g[2] = min(g[2], i)
            g[3] = max(g[3], i)
        print("samples by execution count (instructions, share, index range):")
        for ex, (n, s, lo, hi) in sorted(groups.items(), key=lambda kv: -kv[1][1])[:a.top]:
            per = f" = {ex / a.per:.3g} x {a.per:g}" if a.per else ""
            print(f"  executed {ex:>9d}{per}: {n:5d} instructions, {100 * s / total:5.1f}%, {lo}..{hi}")
    if a.around is not None:
        picked = range(max(0, a.around - 30), min(len(rows), a.around + 30))
    else:
        picked = sorted(sorted(range(len(rows)), key=lambda i: -rows[i][1])[:a.top])
    for i in picked:
        src, s, ex = rows[i]
        print(f"{i:6d} {100 * s / total:6.2f}%  executed {ex:>9d}  {src[:90]}")


if __name__ == "__main__":
    main()
