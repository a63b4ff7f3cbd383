"""Runs one benchmark case a few times with one flashband backend, for a profiler to attach to
(Nsight Compute: profile the last launch). No report; --time prints a do_bench median.

  python bench/probe.py --backend sm90|sm80|cudnn|sdpa-cudnn|sdpa-fa2 --seq 16384 --page 16 [--causal] [--window 4096] [--head-dim 128]
      [--batch B] [--heads H] [--kv-heads HK] [--decode] [--softcap CAP] [--mixed SEED] [--check]
"""
import argparse
import sys
import pathlib

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import torch  # noqa: E402

from cases import Case, HIDDEN, TOKENS  # noqa: E402
from impls import Flashband, Inputs, Sdpa, spot_check  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--backend", default="sm90")
    p.add_argument("--seq", type=int, default=16384)
    p.add_argument("--page", type=int, default=0, help="0: ragged")
    p.add_argument("--head-dim", type=int, default=128)
    p.add_argument("--causal", action="store_true")
    p.add_argument("--window", type=int, default=-1,
                   help="window_left (-1: none; >= seq - 1 is normalised to none, which "
                        "selects the unmasked kernel)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--time", action="store_true",
                   help="also print the do_bench median in us (every launch of the call: the "
                        "merge of split-KV states too, which ncu's kernel filter leaves out)")
    # The same units another way: e.g. "--seq 512 --batch 1 --heads 512" gives the units of
    # the default 512 case (32 requests x 16 heads) without a work list (one request).
    p.add_argument("--batch", type=int, default=0, help="requests (0: 16k tokens / seq)")
    p.add_argument("--heads", type=int, default=0, help="query = KV heads (0: 2048 / head dim)")
    p.add_argument("--softcap", type=float, default=0.0, help="logits_soft_cap (0: none)")
    # Decode: one query per request over --seq keys of a paged cache, --heads query heads
    # over --kv-heads KV heads (the benchmark's decode rows: --heads 32 --kv-heads 8 --page 16).
    p.add_argument("--decode", action="store_true", help="paged decode (needs --page)")
    p.add_argument("--kv-heads", type=int, default=0, help="KV heads (0: as --heads)")
    # A serving batch is ragged: the same requests and tokens cut at random points instead of
    # into equal requests (what the sm90 unit order, cta_schedule.h, is for).
    p.add_argument("--mixed", type=int, default=-1,
                   help="ragged flashband only: requests of random lengths from this seed, the "
                        "same count and total tokens (kv_len = qo_len per request)")
    p.add_argument("--check", action="store_true",
                   help="also compare the output with bench's float32 reference on sampled rows "
                        "(exit 1 above the benchmark's 0.05): a variant's probes then show it is right")
    a = p.parse_args()
    # A peer too, for its grid and occupancy: "sdpa-cudnn" / "sdpa-fa2" (ragged only).
    peers = {"sdpa-cudnn": "CUDNN_ATTENTION", "sdpa-fa2": "FLASH_ATTENTION"}
    if a.mixed >= 0 and (a.page or a.backend in peers):
        p.error("--mixed: ragged K/V and a flashband backend only")
    h = a.heads or HIDDEN // a.head_dim
    batch = a.batch or TOKENS // a.seq
    if a.mixed >= 0 and batch < 2:
        p.error("--mixed: needs at least two requests (--batch, or --seq below 16k)")
    if a.check and (a.mixed >= 0 or a.backend in peers):
        p.error("--check: equal requests and a flashband backend only")
    if a.decode and (not a.page or a.backend in peers or a.mixed >= 0 or a.causal or a.window >= 0):
        p.error("--decode: a paged cache (--page) and a flashband backend, no mask (as the "
                "benchmark's decode rows)")
    hk = a.kv_heads or h
    case = Case("decode" if a.decode else "paged", "probe", batch, 1 if a.decode else a.seq, a.seq,
                h, hk, a.head_dim, a.causal, a.window, a.page, logits_soft_cap=a.softcap)
    if a.backend in peers:
        fn, _, info = Sdpa(a.backend, peers[a.backend]).prepare(Inputs(case))
    else:
        x = Inputs(case)
        if a.mixed >= 0:
            total = batch * a.seq
            g = torch.Generator().manual_seed(a.mixed)
            cuts = (torch.randperm(total - 1, generator=g)[:batch - 1] + 1).sort().values
            bounds = torch.cat([torch.tensor([0]), cuts, torch.tensor([total])]).to(torch.int32)
            x.qo_indptr, x.kv_indptr = bounds, bounds.clone()
            print("probe lengths", (bounds[1:] - bounds[:-1]).tolist(), flush=True)
        fn, out, info = Flashband(a.backend).prepare(x)
    for _ in range(a.repeats):
        fn()
    torch.cuda.synchronize()
    print("probe done", info(), flush=True)
    if a.check:
        err = spot_check(x, out())
        print(f"probe check max_abs_err {err:.4g}", "ok" if err <= 0.05 else "FAILED", flush=True)
        if not err <= 0.05:
            sys.exit(1)
    if a.time:
        import triton.testing
        ms = triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")
        print(f"probe time {ms * 1000:.1f} us", flush=True)


if __name__ == "__main__":
    main()
