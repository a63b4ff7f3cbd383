"""Smoke test of an installed flashband (scripts/new_user_check.sh runs it in a fresh venv):
the package imports from site-packages, and one windowed non-causal call on the cpu backend
matches the float64 NumPy oracle of python/tests/_reference.py."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "tests"))
from _reference import attention_np  # noqa: E402

import flashband  # noqa: E402

assert "site-packages" in flashband.__file__, f"not the installed package: {flashband.__file__}"
rng = np.random.default_rng(58)
q = rng.standard_normal((7, 4, 64)).astype(np.float32)
k = rng.standard_normal((11, 2, 64)).astype(np.float32)
v = rng.standard_normal((11, 2, 64)).astype(np.float32)
out, lse = flashband.single_prefill_with_kv_cache(q, k, v, causal=False, window_left=3,
                                                  backend="cpu", return_lse=True)
ref, ref_lse = attention_np(q.astype(np.float64), k.astype(np.float64), v.astype(np.float64),
                            causal=False, window_left=3)
err = float(np.max(np.abs(out - ref)))
lse_err = float(np.max(np.abs(lse - ref_lse)))
assert err < 1e-4 and lse_err < 1e-4, (err, lse_err)
print(f"pip smoke: flashband {flashband.__version__} from {os.path.dirname(flashband.__file__)}, "
      f"backends {flashband.built_backends()}, windowed non-causal max error {err:.1e}")
