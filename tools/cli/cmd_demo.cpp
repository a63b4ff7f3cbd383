// `flashband demo`: the main job. A small Llama-like step -- a ragged batch of 4 requests
// (fresh prompts and chunks continuing a cache), GQA 32/8, D=128, causal -- through one
// sliding-window layer and one full layer on the best available backend, each checked
// against the fp64 oracle.
#include <chrono>
#include <cstdio>
#include <utility>

#include "cli/commands.h"

namespace flashband::cli {

int cmd_demo(Args& a) {
  const Backend backend = parse_backend(a.str("backend", "auto").c_str());
  a.finish();

  testing::Case layer;
  layer.entry = testing::EntryPoint::kRagged;
  layer.qo_lens = {512, 301, 256, 128};
  layer.kv_lens = {512, 301, 777, 1024};
  layer.num_qo_heads = 32;
  layer.num_kv_heads = 8;
  layer.head_dim = 128;
  layer.dtype = DType::kBF16;
  layer.causal = true;
  layer.backend = backend;
  layer.device = device_for(backend);

  testing::Case windowed = layer;
  windowed.window_left = 255;
  windowed.seed = 2;

  std::printf("flashband demo: ragged batch of 4 (qo 512/301/256/128, kv 512/301/777/1024), GQA 32/8, D=128, bf16, causal\n");
  std::printf("device: %s\n\n", layer.device == Device::kCUDA ? "cuda:0" : "host");
  print_result_header();
  bool ok = true;
  const std::pair<const testing::Case*, const char*> layers[] = {{&windowed, "layer 0: sliding window 255"},
                                                                 {&layer, "layer 1: full causal"}};
  for (const auto& [c, label] : layers) {
    testing::RunConfig cfg;
    cfg.check = true;
    cfg.warmup_iters = 1;
    cfg.timed_iters = 3;
    const auto r = testing::run_case(*c, cfg);
    print_result(*c, r, false, /*checked=*/true, label);
    ok = ok && r.passed;
  }
  std::printf("\noracle check: %s\n", ok ? "passed" : "FAILED");
  return ok ? 0 : 1;
}

}  // namespace flashband::cli
