// sm90's fp8 K/V kernels (issue 65: the paged producer converts gathered e4m3 / e5m2 rows to
// q's type on their way into the wgmma stage buffers, producer.h gather_tile_fp8) against the
// fp64 oracle, in full over what the shared grid (fp8_kv_grid_test.cpp) rotates through:
// page sizes {1, 5, 16, 128} x head dims {64, 128, 256} x e4m3 / e5m2, each with fp16 and
// bf16 q, float and device-tensor scales, and no mask / causal / causal + window / window +
// soft cap. Requests span several KV tiles with kv_len's end inside a tile (the zero-filled
// tail rows) beside an empty request; paged caches hold NaN in every unused slot and spare
// page (kv_layout.h), so a gather that reads past a request's last key fails. Then: a wrong
// k_scale or v_scale fails the oracle (each scale is applied), a long request whose keys the
// planner splits (v_scale in the partial states before the merge), and a NaN code in K or V
// shows in the rows that see it and in no other (SPEC.md "Quantized KV").
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "case.h"
#include "case_steps.h"
#include "fp8_grid.h"
#include "gpu_backends.h"
#include "non_finite.h"

namespace flashband::testing {
namespace {

const char* kv_name(DType kv) { return kv == DType::kE4M3 ? "e4m3" : "e5m2"; }

// The masks of each cell: none, causal, causal with a window, a non-causal window with a cap.
struct Masking {
  bool causal;
  int window_left;
  float soft_cap;
};
constexpr Masking kMasks[] = {{false, -1, 0.0f}, {true, -1, 0.0f}, {true, 31, 0.0f}, {false, 127, 2.0f}};

Case paged_fp8_case(int page_size, int head_dim, DType kv, DType q, const Masking& m, bool tensors, int seed) {
  Case c;
  c.entry = EntryPoint::kPaged;
  // 300 keys: three 128-key tiles (five 64-key ones at D = 256) with kv_len's end inside the
  // last; 0 rows over 5 keys: a request with pages and no work; 201 keys: tiles of one page
  // each at page 128 and a tail that crosses pages at 5.
  c.qo_lens = {37, 0, 150};
  c.kv_lens = {300, 5, 201};
  c.num_qo_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = head_dim;
  c.dtype = q;
  c.kv_dtype = kv;
  c.causal = m.causal;
  c.window_left = m.window_left;
  c.logits_soft_cap = m.soft_cap;
  c.k_scale = seed % 2 ? 0.37f : 3.1f;
  c.v_scale = seed % 2 ? 3.1f : 0.37f;
  c.scale_tensors = tensors;
  c.page_size = page_size;
  c.layout = seed % 3 == 0 ? KVLayout::kHND : KVLayout::kNHD;
  c.seed = 9000 + static_cast<uint64_t>(seed);
  return on_backend(c, Backend::kSM90);
}

class Sm90Fp8KV : public ::testing::TestWithParam<std::tuple<int, int, DType>> {};

TEST_P(Sm90Fp8KV, MatchesOracle) {
  FB_SKIP_WITHOUT_CUDA();
  const auto [page_size, head_dim, kv] = GetParam();
  int seed = page_size * 7 + head_dim;
  for (DType q : {DType::kF16, DType::kBF16})
    for (const Masking& m : kMasks) {
      const Case c = paged_fp8_case(page_size, head_dim, kv, q, m, (seed / 2) % 2 == 0, seed);  // scales: seed % 2
      ++seed;
      FB_SKIP_UNSUPPORTED(c, true);  // sm90 claims fp8 K/V on paged prefill
      const CaseResult r = run_case(c);
      EXPECT_TRUE(r.passed) << c.name() << ": " << r.failure << " (max_abs_err " << r.max_abs_err << ", lse "
                            << r.lse_max_err << ", variant " << r.info.variant << ")";
      EXPECT_TRUE(r.window_guard_ok) << c.name();
      EXPECT_EQ(r.info.backend, Backend::kSM90) << c.name();
      EXPECT_NE(r.info.variant.find("/fp8kv"), std::string::npos) << c.name() << " ran " << r.info.variant;
    }
}

INSTANTIATE_TEST_SUITE_P(Pages, Sm90Fp8KV,
                         ::testing::Combine(::testing::Values(1, 5, 16, 128), ::testing::Values(64, 128, 256),
                                            ::testing::Values(DType::kE4M3, DType::kE5M2)),
                         [](const auto& info) {
                           return "page" + std::to_string(std::get<0>(info.param)) + "_d" +
                                  std::to_string(std::get<1>(info.param)) + "_" + kv_name(std::get<2>(info.param));
                         });

// Judged with the other scale (or both swapped), the same output fails: neither scale is
// dropped, nor applied to the wrong tensor. Float and device-tensor scales, gathered and
// power-of-two pages (gathered too: fp8 never takes the TMA page path).
TEST(Sm90Fp8KVWrongScale, FailsTheOracle) {
  FB_SKIP_WITHOUT_CUDA();
  int seed = 0;
  for (int head_dim : {64, 128, 256})
    for (DType kv : {DType::kE4M3, DType::kE5M2})
      for (int page_size : {16, 128})
        for (bool tensors : {false, true}) {
          const Case c = paged_fp8_case(page_size, head_dim, kv, DType::kBF16, kMasks[1], tensors, ++seed);
          FB_SKIP_UNSUPPORTED(c, true);
          for (auto [k, v] :
               {std::pair{1.0f, c.v_scale}, std::pair{c.k_scale, 1.0f}, std::pair{c.v_scale, c.k_scale}}) {
            const ScaleJudgement j = judge_with_scales(c, k, v);
            EXPECT_TRUE(j.passes_own) << c.name() << ": " << j.own_failure;
            EXPECT_FALSE(j.passes_judged) << c.name() << " also passes judged with k_scale " << k << ", v_scale " << v;
          }
        }
}

// One long request over two query heads: fewer units than multiprocessors, so the planner
// cuts the keys, and the split partial states carry v_scale into the merge.
TEST(Sm90Fp8KVSplit, MatchesOracle) {
  FB_SKIP_WITHOUT_CUDA();
  int seed = 100;
  for (int head_dim : {64, 128, 256})
    for (bool tensors : {false, true}) {
      Case c = paged_fp8_case(16, head_dim, DType::kE4M3, DType::kF16, kMasks[1], tensors, ++seed);
      c.qo_lens = {64};
      c.kv_lens = {6000};
      c.num_qo_heads = 2;
      c.num_kv_heads = 1;
      FB_SKIP_UNSUPPORTED(c, true);
      const CaseResult r = run_case(c);
      EXPECT_TRUE(r.passed) << c.name() << ": " << r.failure << " (variant " << r.info.variant << ")";
      EXPECT_GT(r.info.num_kv_splits, 1) << c.name() << ": the plan did not split, so no merge was tested";
    }
}

// One request (37 rows over 300 keys, causal: row i sees keys up to i + 263), GQA 4:2. A NaN
// code in K at key 280 of KV head 0 makes rows 17.. of query heads 0 and 1 NaN; rows 0..16
// mask that logit to -inf in the same tile. A NaN code in V at key 0, dim 5, reaches every
// row of heads 0 and 1 in dim 5 only. Everything else equals the run without the NaN, bit
// for bit (same kernel, same order).
TEST(Sm90Fp8KVNonFinite, RowsThatSeeItAndOnlyThose) {
  FB_SKIP_WITHOUT_CUDA();
  constexpr int kQo = 37, kKv = 300, kHq = 4, kHk = 2, kD = 128, kKey = 280, kDim = 5;
  int seed = 300;
  for (DType kv : {DType::kE4M3, DType::kE5M2})
    for (DType q : {DType::kF16, DType::kBF16})
      for (bool in_k : {true, false}) {
        Case c = paged_fp8_case(16, kD, kv, q, kMasks[1], false, ++seed);
        c.qo_lens = {kQo};
        c.kv_lens = {kKv};
        c.num_qo_heads = kHq;
        c.num_kv_heads = kHk;
        c.layout = KVLayout::kNHD;
        FB_SKIP_UNSUPPORTED(c, true);
        const NonFiniteCheck r = check_one_nan(c, in_k, in_k ? kKey : 0, kDim);
        EXPECT_EQ(r.wrong, 0) << c.name() << (in_k ? " K" : " V") << " NaN:" << r.first;
      }
}

}  // namespace
}  // namespace flashband::testing
