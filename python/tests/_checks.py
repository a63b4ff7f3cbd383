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


# fp8 attention (SPEC.md "fp8 attention"): approximate by design, so its own bound.
FP8_ATTENTION_FROBENIUS = 3e-2


def assert_fp8_attention(out, exact, emulated, dtype, what="out"):
    """SPEC.md's fp8-attention bound: against the exact oracle on the dequantized inputs,
    relative Frobenius error <= 3e-2, and max |out - exact| <= 2 max |emulated - exact| + the
    output dtype's atol, where `emulated` is the oracle that quantizes P as SPEC.md states."""
    out = np.asarray(out, dtype=np.float64)
    assert out.shape == exact.shape, f"{what}: shape {out.shape} != reference {exact.shape}"
    assert np.isfinite(out).all(), f"{what}: not finite at {np.argwhere(~np.isfinite(out))[:3].tolist()}"
    rel = np.linalg.norm(out - exact) / np.linalg.norm(exact)
    assert rel <= FP8_ATTENTION_FROBENIUS, f"{what}: relative Frobenius error {rel:.3g} > {FP8_ATTENTION_FROBENIUS}"
    bound = 2.0 * np.max(np.abs(emulated - exact), initial=0.0) + TOLERANCES[dtype][0]
    worst = np.max(np.abs(out - exact), initial=0.0)
    assert worst <= bound, f"{what}: max |out - exact| = {worst:.3g} > 2 x the emulating oracle's + atol = {bound:.3g}"
