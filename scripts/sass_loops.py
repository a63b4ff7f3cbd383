"""Per kernel of a `cuobjdump -sass` listing: where its main loop starts, how long it is, and
how many local-memory accesses (spill traffic) it has, in all and inside the loop. The main
loop is the backward branch range that holds the most MMAs (HMMA / HGMMA), the narrowest
of those. Compare two builds' listings to see whether a change outside the loop moved the
loop's code: at 255 registers ptxas may rematerialise values inside the loop when a
prologue change shifts its register allocation (twelfth session: a Q-load change grew the
sm80 loop by 36 instructions).

With --ldsm, also how far ahead of its first MMA each ldmatrix result comes: per
mma.sync (HMMA) in the loop, the instructions since the LDSM that wrote its B operand
(median, and how many sit within 4 and 8): an MMA right behind its load waits on it (short
scoreboard stalls).

  cuobjdump -sass kernel.o > a.sass   # or an executable / .so built for sm_90a
  python3 scripts/sass_loops.py [--ldsm] a.sass [b.sass]
"""
import re
import statistics
import sys

INSTRUCTION = re.compile(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?);")
BRANCH = re.compile(r"\bBRA\s+(0x[0-9a-f]+)")


def kernels(path):
    """(name, [(address, text)]) per function of the listing."""
    for block in open(path).read().split("Function : ")[1:]:
        name, _, body = block.partition("\n")
        code = [(int(m.group(1), 16), m.group(2)) for m in map(INSTRUCTION.match, body.split("\n")) if m]
        yield name.strip(), code


def main_loop(code):
    """(first, last) address of the backward branch range with the most MMAs (narrowest
    first among equals)."""
    best = None
    for address, text in code:
        m = BRANCH.search(text)
        if not m or ".DIV" in text:
            continue
        target = int(m.group(1), 16)
        if target >= address:
            continue
        mmas = sum(target <= a <= address and "MMA" in t for a, t in code)
        if not mmas:
            continue
        # Most MMAs first, then the narrowest: out-of-line blocks (a rare rescale) that
        # branch back into the loop from past its end span more code but fewer MMAs.
        key = (mmas, target - address)
        if best is None or key > best[0]:
            best = (key, (target, address))
    return best[1] if best else None


def ldsm_distances(code, loop):
    """Per HMMA of the loop: instructions since the LDSM that wrote its B operand's first
    register (HMMAs whose B operand no LDSM in the loop wrote are left out)."""
    body = [t for a, t in code if loop[0] <= a <= loop[1]]
    written = {}
    out = []
    for i, text in enumerate(body):
        m = re.search(r"\bLDSM\S*\s+R(\d+)", text)
        if m:
            for k in range(4):  # x4: four consecutive registers
                written[int(m.group(1)) + k] = i
            continue
        m = re.search(r"\bHMMA\.\S+\s+R\d+,\s*R\d+,\s*R(\d+)", text)
        if m and int(m.group(1)) in written:
            out.append(i - written[int(m.group(1))])
    return out


def summary(path):
    rows = []
    for name, code in kernels(path):
        step = (code[1][0] - code[0][0]) if len(code) > 1 else 16
        loop = main_loop(code)
        local = [a for a, t in code if re.search(r"\b(LDL|STL)\b", t)]
        if loop:
            in_loop = sum(loop[0] <= a <= loop[1] for a in local)
            rows.append((name, loop[0] // step, (loop[1] - loop[0]) // step + 1, len(local), in_loop,
                         ldsm_distances(code, loop)))
        else:
            rows.append((name, None, None, len(local), 0, []))
    return rows


def main():
    args = sys.argv[1:]
    ldsm = "--ldsm" in args
    for path in (a for a in args if a != "--ldsm"):
        print(f"== {path}")
        extra = f" {'mma':>5} {'median':>6} {'<=4':>4} {'<=8':>4}" if ldsm else ""
        print(f"{'prologue':>8} {'loop':>6} {'local':>6} {'in loop':>7}{extra}  kernel")
        for name, start, length, local, in_loop, dist in summary(path):
            line = (f"{start if start is not None else '-':>8} {length if length is not None else '-':>6} "
                    f"{local:>6} {in_loop:>7}")
            if ldsm:
                med = f"{statistics.median(dist):.0f}" if dist else "-"
                line += f" {len(dist):>5} {med:>6} {sum(d <= 4 for d in dist):>4} {sum(d <= 8 for d in dist):>4}"
            print(f"{line}  {name[:110]}")


if __name__ == "__main__":
    main()
