// Every GPU backend against the fp64 oracle over the grid: entry point x causal x
// window_left {-1, 0, 1, 31, 127, >= kv_len} x dtype {f16, bf16} x head dim {64, 128, 256}
// in full, with layout, page size {1, 5, 16, 128}, GQA shape, lengths and soft cap rotated
// through it (different periods, so their combinations vary). Lengths cross the sm80 tile
// edges (64/128 rows, 64 keys) and batches include empty requests. The same test runs the
// two-sided window grid (tests/common/band_grid.h: entry point x causal x window_left x
// window_right, and FlashInfer's decode with q_len_per_req > 1), whose window guard fails a
// backend that ignores window_right.
#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "band_grid.h"
#include "case.h"
#include "gpu_backends.h"

namespace flashband::testing {
namespace {

constexpr int kNoOpWindow = 1000;  // >= every kv_len below

struct Lens {
  std::vector<int> qo, kv;
};

// Variant 0: qo_len < kv_len, 1: equal, 2: greater (causal rows with p < 0 see nothing).
// `wide` for windows >= 31, whose window guard needs keys well beyond the window.
Lens lens_for(EntryPoint e, int variant, bool wide) {
  if (e == EntryPoint::kSingle) {
    static const Lens narrow[] = {{{13}, {77}}, {{129}, {129}}, {{90}, {61}}};
    static const Lens broad[] = {{{61}, {263}}, {{200}, {200}}, {{300}, {229}}};
    return (wide ? broad : narrow)[variant];
  }
  if (e == EntryPoint::kDecode) {
    static const Lens narrow[] = {{{}, {77, 1, 0, 45, 16}}, {{}, {64, 33, 2}}, {{}, {5, 0, 90}}};
    static const Lens broad[] = {{{}, {300, 1, 0, 129, 200}}, {{}, {263, 170}}, {{}, {7, 0, 229}}};
    return (wide ? broad : narrow)[variant];
  }
  static const Lens narrow[] = {{{17, 0, 9, 5}, {70, 13, 45, 0}}, {{65, 1, 70}, {65, 1, 70}},
                                {{50, 3, 12}, {37, 0, 5}}};
  static const Lens broad[] = {{{40, 0, 20, 5}, {263, 13, 200, 0}}, {{150, 1, 229}, {150, 1, 229}},
                               {{260, 3, 40}, {229, 0, 11}}};
  return (wide ? broad : narrow)[variant];
}

std::vector<Case> grid_cases() {
  const EntryPoint entries[] = {EntryPoint::kSingle, EntryPoint::kRagged, EntryPoint::kPaged, EntryPoint::kDecode};
  const int windows[] = {-1, 0, 1, 31, 127, kNoOpWindow};
  const DType dtypes[] = {DType::kF16, DType::kBF16};
  const int dims[] = {64, 128, 256};
  const KVLayout layouts[] = {KVLayout::kNHD, KVLayout::kHND};
  const int page_sizes[] = {1, 5, 16, 128};
  const int heads[][2] = {{2, 2}, {4, 2}, {4, 1}, {3, 3}};

  std::vector<Case> cases;
  int k = 0;
  for (EntryPoint e : entries)
    for (bool causal : {false, true})
      for (int w : windows)
        for (DType dt : dtypes)
          for (int d : dims) {
            Case c;
            c.entry = e;
            const Lens l = lens_for(e, (k / 7) % 3, w >= 31 && w != kNoOpWindow);
            c.qo_lens = e == EntryPoint::kDecode ? std::vector<int>{} : l.qo;
            c.kv_lens = l.kv;
            if (e == EntryPoint::kDecode) c.qo_lens.assign(c.kv_lens.size(), 1);
            c.num_qo_heads = heads[(k / 5) % 4][0];
            c.num_kv_heads = heads[(k / 5) % 4][1];
            c.head_dim = d;
            c.dtype = dt;
            c.causal = causal;
            c.window_left = w;
            c.layout = layouts[k % 2];
            c.page_size = page_sizes[(k / 3) % 4];
            c.stacked_kv = e == EntryPoint::kPaged && (k / 11) % 2 == 1;
            if (k % 13 == 6) c.logits_soft_cap = 20.0f;
            c.seed = 1000 + k;
            cases.push_back(c);
            ++k;
          }
  return cases;
}

class GpuGrid : public ::testing::TestWithParam<std::tuple<Backend, Case>> {};

TEST_P(GpuGrid, MatchesOracle) {
  FB_SKIP_WITHOUT_CUDA();
  const Case c = on_backend(std::get<1>(GetParam()), std::get<0>(GetParam()));
  FB_SKIP_UNSUPPORTED(c, c.backend == Backend::kSM80);
  const CaseResult r = run_case(c);
  EXPECT_TRUE(r.passed) << r.failure << " (max_abs_err " << r.max_abs_err << ", frob " << r.frob_rel_err
                        << ", lse " << r.lse_max_err << ", variant " << r.info.variant << ", splits "
                        << r.info.num_kv_splits << ")";
  EXPECT_EQ(r.info.backend, c.backend);
}

INSTANTIATE_TEST_SUITE_P(Grid, GpuGrid,
                         ::testing::Combine(::testing::ValuesIn(gpu_test_backends()),
                                            ::testing::ValuesIn(grid_cases())),
                         [](const auto& info) {
                           return param_name(std::get<0>(info.param), std::get<1>(info.param));
                         });

INSTANTIATE_TEST_SUITE_P(Band, GpuGrid,
                         ::testing::Combine(::testing::ValuesIn(gpu_test_backends()),
                                            ::testing::ValuesIn(band_cases({DType::kF16, DType::kBF16}))),
                         [](const auto& info) {
                           return param_name(std::get<0>(info.param), std::get<1>(info.param));
                         });

}  // namespace
}  // namespace flashband::testing
