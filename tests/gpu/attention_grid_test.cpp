// Every GPU backend against the fp64 oracle over the grid the cpu grid runs too
// (tests/common/oracle_grid.h), in f16 and bf16. The same test runs the
// two-sided window grid (tests/common/band_grid.h: entry point x causal x window_left x
// window_right, and FlashInfer's decode with q_len_per_req > 1), whose window guard fails a
// backend that ignores window_right.
#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "band_grid.h"
#include "case.h"
#include "gpu_backends.h"
#include "oracle_grid.h"

namespace flashband::testing {
namespace {

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
                                            ::testing::ValuesIn(oracle_grid({DType::kF16, DType::kBF16}))),
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
