#!/usr/bin/env python3
"""generate() of a small model of a real architecture, built from its config with random
weights (no download), with transformers' "eager" and "sdpa" attention and flashband's:
a table of tokens/s and time per output token, and each implementation's largest logit
difference from eager over the generated steps (teacher-forced: every implementation scores
eager's tokens). issue 59's example.

  PYTHONPATH=build/python python bench/transformers_generate.py                 # GPU if any
  PYTHONPATH=build/python python bench/transformers_generate.py --arch gemma2 --device cpu
"""

from __future__ import annotations

import argparse
import time

import torch
import transformers
from tqdm import tqdm

from flashband.integrations.transformers import register

SMALL = dict(vocab_size=32000, hidden_size=512, intermediate_size=1536, num_hidden_layers=8,
             num_attention_heads=8, num_key_value_heads=2, head_dim=64)
CONFIGS = {
    "llama": lambda: transformers.LlamaConfig(**SMALL),
    "mistral": lambda: transformers.MistralConfig(sliding_window=256, **SMALL),
    "qwen2": lambda: transformers.Qwen2Config(use_sliding_window=True, sliding_window=256,
                                              max_window_layers=4, **SMALL),
    "gemma2": lambda: transformers.Gemma2Config(sliding_window=256, query_pre_attn_scalar=64, **SMALL),
}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--arch", choices=sorted(CONFIGS), default="llama")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--prompt", type=int, default=512)
    p.add_argument("--new-tokens", type=int, default=128)
    p.add_argument("--backend", default="auto", help="flashband backend")
    args = p.parse_args()

    device = torch.device(args.device)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    name = register(backend=args.backend if device.type == "cuda" else "cpu")
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(CONFIGS[args.arch](), attn_implementation="eager")
    model = model.to(device=device, dtype=dtype).eval()
    ids = torch.randint(3, model.config.vocab_size, (args.batch, args.prompt), device=device)
    mask = torch.ones_like(ids)
    print(f"{args.arch}: {sum(p.numel() for p in model.parameters()) / 1e6:.0f}M parameters, "
          f"{dtype}, {device}, batch {args.batch}, prompt {args.prompt}, {args.new_tokens} new tokens; "
          f"transformers {transformers.__version__}, flashband as {name!r}")

    rows, reference, forced = [], None, None
    impls = ["eager", "sdpa", name]
    for impl in tqdm(impls, desc="implementations"):
        model.set_attn_implementation(impl)
        with torch.no_grad():
            model.generate(ids[:, :16], attention_mask=mask[:, :16], max_new_tokens=2, do_sample=False)  # warm-up
            if device.type == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
            out = model.generate(ids, attention_mask=mask, max_new_tokens=args.new_tokens, do_sample=False,
                                 min_new_tokens=args.new_tokens)
            if device.type == "cuda":
                torch.cuda.synchronize()
            seconds = time.perf_counter() - start
            forced = out if forced is None else forced  # eager's tokens, scored by everyone
            logits = model(forced, attention_mask=torch.ones_like(forced)).logits[:, args.prompt - 1:-1].float()
        reference = logits if reference is None else reference
        tokens = args.batch * args.new_tokens
        rows.append((impl, tokens / seconds, 1e3 * seconds / args.new_tokens,
                     (logits - reference).abs().max().item()))

    print(f"\n| implementation | tokens/s | ms per output token | max logit diff vs eager |")
    print("|---|---|---|---|")
    for impl, rate, ms, diff in rows:
        print(f"| {impl} | {rate:.1f} | {ms:.2f} | {diff:.3g} |")


if __name__ == "__main__":
    main()
