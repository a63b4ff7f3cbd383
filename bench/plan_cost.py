"""Host time of plan() over a serving-like run of decode steps, per backend: the batch size
drifts, every request grows by one token a step, new pages come from a shuffled pool. A
plan() that builds a cuDNN graph (a new batch size, a new power-of-two bucket of the longest
request, a new num_pages) shows as a slow step; the others are host work and one copy.

  python bench/plan_cost.py [--steps 200] [--backends cudnn,sm80,auto] [--pool-pages 65536]
                           [--repeats 200]

--backends cpu measures the Python layer and the cpu backend's plan on a machine without a
GPU (host tensors; the GPU wait check does not apply there).

Prints, per backend and with / without num_pages given to plan(): the median, 99th
percentile and largest plan() time, the steps over 5 ms, and cuDNN graphs built (if known).
Then, per backend, for fixed batch sizes (--batches) of 2k-key requests: the median host
time of a repeated plan() (eager and use_cuda_graph), and whether plan() waited for the GPU
(planned while a sleep kernel held the stream: it must return before the sleep ends).
"""
import argparse
import statistics
import time

import numpy as np
import torch

import flashband

HQ, HK, D, PAGE = 32, 8, 128, 16


def serving_steps(steps, pool_pages, seed):
    """(indptr, indices, last_page_len) per step, as an engine's scheduler would pass them."""
    rng = np.random.default_rng(seed)
    pool = rng.permutation(pool_pages).astype(np.int32)
    free = list(pool)
    requests = []  # [kv_len, pages]
    for _ in range(steps):
        while len(requests) < 1 or (len(requests) < 64 and rng.random() < 0.3):
            kv = int(rng.integers(100, 4000))
            requests.append([kv, [free.pop() for _ in range((kv + PAGE - 1) // PAGE)]])
        if len(requests) > 1 and rng.random() < 0.2:
            free.extend(requests.pop(int(rng.integers(len(requests))))[1])
        for r in requests:
            r[0] += 1
            if (r[0] - 1) % PAGE == 0:
                r[1].append(free.pop())
        indptr = np.cumsum([0] + [len(r[1]) for r in requests]).astype(np.int32)
        indices = np.concatenate([np.array(r[1], np.int32) for r in requests])
        last = np.array([(r[0] - 1) % PAGE + 1 for r in requests], np.int32)
        yield indptr, indices, last


def _device(backend):
    return "cpu" if backend == "cpu" else "cuda"


def _sync(backend):
    if backend != "cpu":
        torch.cuda.synchronize()


def measure(backend, steps, pool_pages, give_num_pages, seed):
    ws = torch.empty(256 << 20, dtype=torch.uint8, device=_device(backend))
    w = flashband.BatchDecodeWithPagedKVCacheWrapper(ws, backend=backend)
    times = []
    for indptr, indices, last in serving_steps(steps, pool_pages, seed):
        extra = dict(num_pages=pool_pages) if give_num_pages else {}
        t0 = time.perf_counter()
        w.plan(indptr, indices, last, HQ, HK, D, PAGE, q_data_type="bfloat16", **extra)
        times.append((time.perf_counter() - t0) * 1e3)
    _sync(backend)
    return times


def fixed_batch(backend, batch, graph, repeats=200):
    """(median plan() ms, plan() waited for the GPU, None on the host) for `batch` requests
    of 2048 keys."""
    pages = 2048 // PAGE
    indptr = np.arange(batch + 1, dtype=np.int32) * pages
    indices = np.random.default_rng(batch).permutation(batch * pages).astype(np.int32)
    last = np.full(batch, PAGE, np.int32)
    ws = torch.empty(256 << 20, dtype=torch.uint8, device=_device(backend))
    w = flashband.BatchDecodeWithPagedKVCacheWrapper(ws, use_cuda_graph=graph, backend=backend)
    plan = lambda: w.plan(indptr, indices, last, HQ, HK, D, PAGE, q_data_type="bfloat16",
                          num_pages=batch * pages)
    for _ in range(10):
        plan()
    _sync(backend)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        plan()
        times.append((time.perf_counter() - t0) * 1e3)
    _sync(backend)
    if backend == "cpu":
        return statistics.median(times), None
    busy = torch.cuda.Event()
    torch.cuda._sleep(1 << 30)
    busy.record()
    plan()
    waited = busy.query()
    torch.cuda.synchronize()
    return statistics.median(times), waited


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--backends", default="cudnn,sm80,auto")
    p.add_argument("--pool-pages", type=int, default=65536)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batches", default="1,128,1024")
    p.add_argument("--repeats", type=int, default=200)
    a = p.parse_args()
    rows = []
    for backend in a.backends.split(","):
        for give in (True, False):
            try:
                t = measure(backend, a.steps, a.pool_pages, give, a.seed)
            except flashband.FlashbandError as e:
                rows.append(f"{backend:6} num_pages={'given' if give else 'unset':5}  refused: {e}")
                continue
            q = statistics.quantiles(t, n=100)
            rows.append(f"{backend:6} num_pages={'given' if give else 'unset':5}  median {statistics.median(t):8.3f} ms"
                        f"  p99 {q[98]:8.3f}  max {max(t):8.1f}  steps > 5 ms: {sum(x > 5 for x in t)} of {len(t)}")
    for backend in a.backends.split(","):
        for graph in (False, True):
            for batch in (int(b) for b in a.batches.split(",")):
                mode = "use_cuda_graph" if graph else "eager"
                try:
                    ms, waited = fixed_batch(backend, batch, graph, a.repeats)
                except flashband.FlashbandError as e:
                    rows.append(f"{backend:6} {mode:14} B={batch:<5} refused: {e}")
                    continue
                rows.append(f"{backend:6} {mode:14} B={batch:<5} plan() median {ms * 1e3:8.1f} us"
                            f"  waited for the GPU: {'n/a' if waited is None else 'yes' if waited else 'no'}")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
