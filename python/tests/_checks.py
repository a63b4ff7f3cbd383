"""Result checks with SPEC.md's bounds: element-wise atol + rtol * |ref|, relative Frobenius
error, LSE absolute error, and exact 0 / -inf for rows that see no key."""

import numpy as np

# dtype -> (atol = rtol, Frobenius bound, LSE absolute bound). float32 (cpu backend only)
# is held tighter than the half types, which SPEC.md fixes.
TOLERANCES = {
    "float32": (1e-4, 1e-4, 1e-4),
    "float16": (2e-3, 1e-3, 2e-3),
    "bfloat16": (1.6e-2, 8e-3, 1e-2),
}


def assert_out(out, ref, dtype, what="out"):
    out = np.asarray(out, dtype=np.float64)
    assert out.shape == ref.shape, f"{what}: shape {out.shape} != reference {ref.shape}"
    assert not np.isnan(out).any(), f"{what}: NaN at {np.argwhere(np.isnan(out))[:3].tolist()}"
    tol, frob, _ = TOLERANCES[dtype]
    err = np.abs(out - ref)
    excess = err - (tol + tol * np.abs(ref))
    if out.size:
        worst = np.unravel_index(np.argmax(excess), out.shape)
        assert excess[worst] <= 0, (
            f"{what}: |out - ref| = {err[worst]:.3g} at {worst} exceeds {tol} + {tol} * "
            f"|{ref[worst]:.3g}| (max abs err {err.max():.3g})")
    ref_norm = np.linalg.norm(ref)
    if ref_norm > 0:
        rel = np.linalg.norm(out - ref) / ref_norm
        assert rel < frob, f"{what}: relative Frobenius error {rel:.3g} >= {frob}"


def assert_lse(lse, ref, dtype, what="lse"):
    lse = np.asarray(lse, dtype=np.float64)
    assert lse.shape == ref.shape, f"{what}: shape {lse.shape} != reference {ref.shape}"
    empty = np.isneginf(ref)
    assert np.array_equal(np.isneginf(lse), empty), (
        f"{what}: -inf at {np.argwhere(np.isneginf(lse) != empty)[:3].tolist()} differs from "
        "the reference")
    if (~empty).any():
        err = np.abs(lse[~empty] - ref[~empty])
        assert np.isfinite(err).all(), f"{what}: non-finite where the reference is finite"
        bound = TOLERANCES[dtype][2]
        assert err.max() <= bound, f"{what}: max abs error {err.max():.3g} > {bound}"


def assert_empty_rows_exact(out, ref_lse, what="out"):
    """Rows that see no key are exactly 0 (SPEC.md), not merely close to it."""
    out = np.asarray(out, dtype=np.float64)
    rows = np.isneginf(ref_lse)  # [tokens, heads]
    if rows.any():
        assert (out[rows] == 0).all(), f"{what}: a fully masked row is not exactly 0"


def assert_differs(a, b, bound=0.1, what="window"):
    """The test would not notice a backend ignoring `what` unless the references differ."""
    diff = np.max(np.abs(a - b), initial=0.0)
    assert diff > bound, f"{what}: references differ by only {diff:.3g}; the test is vacuous"
