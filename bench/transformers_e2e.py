#!/usr/bin/env python3
"""End-to-end model steps of a transformers model with flashband's attention against the
peers in the same process: "sdpa" (cuDNN / FlashAttention-2 through torch) and
"flex_attention" (compiled Triton). A Llama-shaped model of ~1.2B parameters (Llama 3.2 1B's
shape) built from its config with random weights, bf16, no download.

  prefill   one prompt of 2k and 8k tokens (a fresh DynamicCache)
  decode    one step of batch 1, 16 and 64 at 4k context (the DynamicCache cropped back
            after each step, so every step sees the same context)

Each reading is the median wall time of a full model step (CUDA-synchronised), and, from the
torch profiler over a few more steps, the GPU time inside the attention calls (each
implementation is wrapped in a record_function range) and its share of the step's GPU time.
The goal (issue 59): flashband's step never slower than the best peer, and faster where
attention is a measurable share.

  PYTHONPATH=build/python python bench/transformers_e2e.py --out out/   # GPU
  python bench/transformers_e2e.py --backend sm90 --impls flashband,sdpa
  python bench/transformers_e2e.py --selftest                   # tiny model on the CPU
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys
import time

import torch
import transformers
from transformers import AttentionInterface

from flashband.integrations.transformers import register

LLAMA_1B = dict(vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                num_attention_heads=32, num_key_value_heads=8, head_dim=64,
                max_position_embeddings=16384, tie_word_embeddings=True)
TINY = dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=512)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--impls", default="flashband,sdpa,flex_attention")
    p.add_argument("--backend", default="auto", help="flashband backend (auto, sm80, sm90, cudnn, cpu)")
    p.add_argument("--prefill", default="2048,8192", help="prompt lengths")
    p.add_argument("--decode-batches", default="1,16,64")
    p.add_argument("--context", type=int, default=4096, help="decode context length")
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--profile-steps", type=int, default=3)
    p.add_argument("--out", type=pathlib.Path, help="folder for transformers_e2e.json and .md")
    p.add_argument("--selftest", action="store_true",
                   help="tiny model on the CPU, cpu backend, eager/sdpa/flashband, short lengths")
    return p.parse_args(argv)


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def wrap_with_range(names):
    """Every implementation under a record_function range named 'attention', so the profiler
    attributes the GPU time of its kernels (flashband's own launches included)."""
    for name in names:
        if name == "eager":
            continue  # eager is the models' built-in fallback, not in the interface
        fn = AttentionInterface()[name]
        if getattr(fn, "_bench_wrapped", False):
            continue

        def wrapped(*args, _fn=fn, **kwargs):
            with torch.profiler.record_function("attention"):
                return _fn(*args, **kwargs)
        wrapped._bench_wrapped = True
        AttentionInterface.register(name, wrapped)


def build_model(cfg_kwargs, device, dtype):
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(**cfg_kwargs)
    with torch.device(device):
        model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=dtype, attn_implementation="sdpa")
    return model.eval()


def make_prefill(model, length, device):
    ids = torch.randint(3, model.config.vocab_size, (1, length), device=device)

    def step():
        cache = transformers.DynamicCache(config=model.config)
        return model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1).logits
    return step


def make_decode(model, batch, context, device):
    """A cache of `context` tokens per row (filled once with sdpa), and one decode step that
    crops the cache back after running."""
    ids = torch.randint(3, model.config.vocab_size, (batch, context), device=device)
    cache = transformers.DynamicCache(config=model.config)
    model.set_attn_implementation("sdpa")
    with torch.no_grad():
        for start in range(0, context, 1024):  # chunks keep the MLP activations small
            model(input_ids=ids[:, start:start + 1024], past_key_values=cache, use_cache=True,
                  logits_to_keep=1)
    token = torch.randint(3, model.config.vocab_size, (batch, 1), device=device)
    position = torch.full((batch, 1), context, device=device)

    def step():
        out = model(input_ids=token, position_ids=position, past_key_values=cache, use_cache=True).logits
        cache.crop(-1)
        return out
    return step


def measure(step, repeats, profile_steps, device):
    with torch.no_grad():
        for _ in range(2):
            out = step()  # warm-up (flex_attention compiles here)
        sync(device)
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            step()
            sync(device)
            times.append((time.perf_counter() - t0) * 1e3)
        attn_ms = total_ms = None
        if profile_steps > 0:
            acts = [torch.profiler.ProfilerActivity.CPU]
            if device.type == "cuda":
                acts.append(torch.profiler.ProfilerActivity.CUDA)
            with torch.profiler.profile(activities=acts) as prof:
                for _ in range(profile_steps):
                    step()
                sync(device)
            attn_ms, total_ms = attention_time(prof, device, profile_steps)
    return dict(ms=statistics.median(times), ms_min=min(times), attn_ms=attn_ms,
                gpu_ms=total_ms, attn_share=(attn_ms / total_ms) if attn_ms and total_ms else None), out


def attention_time(prof, device, steps):
    """(attention ms, all kernels ms) per step: device time of the 'attention' ranges and of
    every kernel (CPU time on the CPU)."""
    events = prof.key_averages()
    attr = "device_time_total" if device.type == "cuda" else "cpu_time_total"
    attn = sum(getattr(e, attr, 0.0) for e in events if e.key == "attention")
    if device.type == "cuda":
        total = sum(e.self_device_time_total for e in events if e.device_type == torch.autograd.DeviceType.CUDA)
    else:
        total = sum(e.self_cpu_time_total for e in events)
    return attn / 1e3 / steps, total / 1e3 / steps


def run(args):
    device = torch.device("cpu" if args.selftest else "cuda")
    dtype = torch.float32 if args.selftest else torch.bfloat16
    backend = "cpu" if args.selftest else args.backend
    name = register(backend=backend)
    impls = ["eager", "sdpa", "flashband"] if args.selftest else args.impls.split(",")
    impls = [name if i == "flashband" else i for i in impls]
    wrap_with_range(impls)
    cfg = TINY if args.selftest else LLAMA_1B
    prefill = [32, 64] if args.selftest else [int(x) for x in args.prefill.split(",")]
    batches = [1, 4] if args.selftest else [int(x) for x in args.decode_batches.split(",")]
    context = 64 if args.selftest else args.context
    repeats = 3 if args.selftest else args.repeats
    model = build_model(cfg, device, dtype)
    params = sum(p.numel() for p in model.parameters())
    header = dict(transformers=transformers.__version__, torch=torch.__version__,
                  device=torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
                  backend=backend, params=params, dtype=str(dtype), flashband_name=name)
    print(json.dumps(header))
    cases = [("prefill", 1, n, lambda n=n: make_prefill(model, n, device)) for n in prefill]
    cases += [("decode", b, context, lambda b=b: make_decode(model, b, context, device)) for b in batches]
    rows = []
    for phase, batch, length, make in cases:
        try:
            step = make()
        except Exception as e:  # noqa: BLE001  (e.g. out of memory: recorded, the run goes on)
            rows.append(dict(phase=phase, batch=batch, len=length, impl="setup", error=repr(e)[:300]))
            continue
        reference = None
        for impl in impls:
            row = dict(phase=phase, batch=batch, len=length, impl=impl)
            try:
                model.set_attn_implementation(impl)
                result, logits = measure(step, repeats, args.profile_steps, device)
                row.update(result)
                if reference is None:
                    reference = logits.float()
                row["max_logit_diff_vs_first"] = (logits.float() - reference).abs().max().item()
            except Exception as e:  # noqa: BLE001
                row["error"] = repr(e)[:300]
            rows.append(row)
            print(json.dumps(row), flush=True)
        del step
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return header, rows


def table(header, rows, name):
    lines = [f"# transformers end to end ({header['device']}, {header['params'] / 1e9:.2f}B params, "
             f"{header['dtype']}, flashband backend {header['backend']}, transformers "
             f"{header['transformers']}, torch {header['torch']})", "",
             "| phase | batch | tokens | impl | step ms | attention ms | attention share | vs best peer |",
             "|---|---|---|---|---|---|---|---|"]
    for key in sorted({(r["phase"], r["batch"], r["len"]) for r in rows}, key=lambda k: (k[0] != "prefill", k[1], k[2])):
        group = [r for r in rows if (r["phase"], r["batch"], r["len"]) == key]
        peers = [r["ms"] for r in group if r["impl"] != name and "ms" in r]
        for r in group:
            if "error" in r:
                lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {r['impl']} | error: {r['error'][:80]} | | | |")
                continue
            share = f"{100 * r['attn_share']:.0f}%" if r.get("attn_share") is not None else "-"
            attn = f"{r['attn_ms']:.2f}" if r.get("attn_ms") is not None else "-"
            ratio = f"{min(peers) / r['ms']:.2f}x" if r["impl"] == name and peers else ""
            lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {r['impl']} | {r['ms']:.2f} | {attn} | {share} | {ratio} |")
    lines += ["", "vs best peer: the best peer's step time / flashband's (> 1: flashband faster)."]
    return "\n".join(lines)


def main(argv=None):
    args = parse_args(argv)
    header, rows = run(args)
    text = table(header, rows, header["flashband_name"])
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "transformers_e2e.json").write_text(json.dumps(dict(header=header, rows=rows), indent=1))
        (args.out / "transformers_e2e.md").write_text(text + "\n")
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
