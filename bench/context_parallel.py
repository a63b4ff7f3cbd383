"""Context-parallel decode across GPUs (issue 62): decode at batch B over requests of
--tokens keys each, the cache split evenly over W GPUs, one process per GPU over NCCL
(flashband.distributed.ContextParallelDecodeWrapper on sm80). Per (W, B) it times, as the
slowest rank sees them:

  step       the whole run(): this rank's shard kernel, the all-gather of the states, the merge
  kernel     one shard's kernel alone (ShardDecode.run)
  gather     the two all-gathers alone (outputs and LSEs)
  ratio      step / (kernel + gather); issue 62's goal is <= 1.2
  GB/s/GPU   one shard's K and V bytes over its kernel time (the per-GPU bandwidth share)

  python bench/context_parallel.py [--gpus 2 4 8] [--batch 1 4 16] [--tokens 1048576]
                                   [--iters 20] [--transport nccl|gloo]

--transport gloo runs the same on CPU processes with the cpu backend (use small --tokens):
a check that the script works, not a measurement.
"""
import argparse
import json
import os
import statistics
import tempfile
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from flashband.distributed import ContextParallelDecodeWrapper

HQ, HK, D, PAGE = 32, 8, 128, 16


def timed(fn, iters, device):
    """Median seconds of fn() over iters calls, after two warm-up calls; every rank starts
    each call together."""
    for _ in range(2):
        fn()
    times = []
    for _ in range(iters):
        dist.barrier()
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        else:
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def shard_of(rank, world, batch, tokens, device, dtype):
    """This rank's pages: keys [rank * n, (rank + 1) * n) of every request, n = tokens / world."""
    n = tokens // world
    pages = (n + PAGE - 1) // PAGE
    last = n - (pages - 1) * PAGE if pages else 0
    indptr = np.arange(batch + 1, dtype=np.int32) * pages
    indices = np.arange(batch * pages, dtype=np.int32)
    last_page_len = np.full(batch, last, dtype=np.int32)
    cache = tuple(torch.randn((max(batch * pages, 1), PAGE, HK, D), dtype=dtype, device=device)
                  for _ in range(2))
    args = (indptr, indices, last_page_len, [rank * n] * batch, [tokens] * batch, HQ, HK, D, PAGE)
    return args, cache, 2 * batch * n * HK * D * cache[0].element_size()


def worker(rank, world, store, opts, results):
    if opts.transport == "nccl":
        torch.cuda.set_device(rank)
        device, backend = torch.device("cuda", rank), "sm80"
        dist.init_process_group("nccl", init_method=f"file://{store}", rank=rank, world_size=world,
                                device_id=device)
    else:
        torch.set_num_threads(1)
        device, backend = torch.device("cpu"), "cpu"
        dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    dtype = torch.bfloat16
    try:
        for batch in opts.batch:
            args, cache, shard_bytes = shard_of(rank, world, batch, opts.tokens, device, dtype)
            cp = ContextParallelDecodeWrapper(device=device, backend=backend)
            cp.plan(*args, q_data_type="bfloat16")
            q = torch.randn((batch, HQ, D), dtype=dtype, device=device)
            out, lse = cp._shard.run(q, cache)
            all_out, all_lse = cp._gathered

            def gather():
                dist.all_gather_into_tensor(all_out, out)
                dist.all_gather_into_tensor(all_lse, lse)

            t = torch.tensor([timed(lambda: cp.run(q, cache), opts.iters, device),
                              timed(lambda: cp._shard.run(q, cache), opts.iters, device),
                              timed(gather, opts.iters, device)], dtype=torch.float64, device=device)
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            step, kernel, gathered = t.tolist()
            if rank == 0:
                with open(results, "a") as f:
                    f.write(json.dumps(dict(gpus=world, batch=batch, step_ms=step * 1e3,
                                            kernel_ms=kernel * 1e3, gather_ms=gathered * 1e3,
                                            ratio=step / (kernel + gathered),
                                            gbps_per_gpu=shard_bytes / kernel / 1e9)) + "\n")
            del cache, cp
            if device.type == "cuda":
                torch.cuda.empty_cache()
    finally:
        dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gpus", type=int, nargs="+", default=[2, 4, 8])
    p.add_argument("--batch", type=int, nargs="+", default=[1, 4, 16])
    p.add_argument("--tokens", type=int, default=1 << 20)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--transport", choices=["nccl", "gloo"], default="nccl")
    opts = p.parse_args()
    available = torch.cuda.device_count() if opts.transport == "nccl" else max(opts.gpus)
    if opts.transport == "nccl":
        print(f"{torch.cuda.get_device_name(0) if available else 'no GPU'}, {available} GPUs, "
              f"Hq {HQ} / Hk {HK}, D {D}, page {PAGE}, bf16, {opts.tokens} keys a request")
    print(f"{'GPUs':>4} {'B':>3} {'step ms':>9} {'kernel ms':>9} {'gather ms':>9} {'ratio':>6} {'GB/s/GPU':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        results = os.path.join(tmp, "results.jsonl")
        for world in opts.gpus:
            if world > available:
                print(f"{world:>4}   - skipped: this machine has {available} GPUs")
                continue
            mp.spawn(worker, args=(world, os.path.join(tmp, f"store{world}"), opts, results), nprocs=world)
        if os.path.exists(results):
            for line in open(results):
                r = json.loads(line)
                print(f"{r['gpus']:>4} {r['batch']:>3} {r['step_ms']:>9.3f} {r['kernel_ms']:>9.3f} "
                      f"{r['gather_ms']:>9.3f} {r['ratio']:>6.2f} {r['gbps_per_gpu']:>9.0f}")


if __name__ == "__main__":
    main()
