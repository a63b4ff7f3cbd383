"""Smoke test of the Python package on the GPU machine: one call per framework/backend,
printing each step, so a crash shows where it happened (run under faulthandler)."""
import faulthandler
import sys

faulthandler.enable()
import numpy as np  # noqa: E402

import flashband  # noqa: E402

print("imported", flashband.__file__, flush=True)
rng = np.random.default_rng(0)
q = rng.standard_normal((6, 4, 64)).astype(np.float32)
k = rng.standard_normal((9, 2, 64)).astype(np.float32)
v = rng.standard_normal((9, 2, 64)).astype(np.float32)
out = flashband.single_prefill_with_kv_cache(q, k, v, backend="cpu")
print("numpy cpu ok", out.shape, flush=True)
import torch  # noqa: E402

for backend in sys.argv[1:] or ["sm80", "sm90", "cudnn", "auto"]:
    tq, tk, tv = (torch.from_numpy(x).to("cuda", torch.bfloat16) for x in (q, k, v))
    print("calling", backend, flush=True)
    o, lse = flashband.single_prefill_with_kv_cache(tq, tk, tv, backend=backend, return_lse=True)
    torch.cuda.synchronize()
    print(backend, "ok", o.shape, lse.shape, float(o.float().abs().sum()), flush=True)
