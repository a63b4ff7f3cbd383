"""Counts of the property tests' cases, printed at the end of the session (conftest.py), so
that a run shows how many calls it made and how they ended."""

import collections

COUNTS = collections.Counter()  # (entry point, "refused" or "computed") -> calls


def record(entry: str, outcome: str) -> None:
    COUNTS[(entry, outcome)] += 1


def summary() -> str:
    if not COUNTS:
        return ""
    entries = sorted({e for e, _ in COUNTS})
    parts = [f"{e} {COUNTS[(e, 'refused')]} refused / {COUNTS[(e, 'computed')]} computed" for e in entries]
    return f"property tests: {sum(COUNTS.values())} cases executed ({'; '.join(parts)})"
