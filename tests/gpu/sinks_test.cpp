// Attention sinks on every GPU backend that claims them (sm80; sm90 and cudnn on prefill,
// cudnn where its other limits allow the case: supports() decides, its refusals skip) against
// the fp64 oracle: the shared sink grid (tests/common/sink_grid.h: entry point x causal x
// window x soft cap x GQA, rows with no key) and long single requests that the planners cut
// into KV splits, where the merge must count each row's sink once.
#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "case.h"
#include "gpu_backends.h"
#include "sink_grid.h"

namespace flashband::testing {
namespace {

class GpuSinks : public ::testing::TestWithParam<std::tuple<Backend, Case>> {};

// sm80 claims every entry point with sinks; sm90 every prefill (its decode row is refused).
bool claims_sinks(const Case& c) {
  return c.backend == Backend::kSM80 || (c.backend == Backend::kSM90 && c.entry != EntryPoint::kDecode);
}

TEST_P(GpuSinks, MatchesOracle) {
  FB_SKIP_WITHOUT_CUDA();
  const Case c = on_backend(std::get<1>(GetParam()), std::get<0>(GetParam()));
  FB_SKIP_UNSUPPORTED(c, claims_sinks(c));
  const CaseResult r = run_case(c);
  EXPECT_TRUE(r.passed) << r.failure << " (max_abs_err " << r.max_abs_err << ", lse " << r.lse_max_err
                        << ", variant " << r.info.variant << ", splits " << r.info.num_kv_splits << ")";
  EXPECT_TRUE(r.sink_guard_ok);
  EXPECT_EQ(r.info.backend, c.backend);
}

INSTANTIATE_TEST_SUITE_P(Grid, GpuSinks,
                         ::testing::Combine(::testing::ValuesIn(gpu_test_backends()),
                                            ::testing::ValuesIn(sink_cases({DType::kF16, DType::kBF16}))),
                         [](const auto& info) { return param_name(std::get<0>(info.param), std::get<1>(info.param)); });

class GpuSinkSplits : public ::testing::TestWithParam<std::tuple<Backend, Case>> {};

// The sink must enter once, in the merge after the splits: these cases must actually split
// (else they test nothing about the merge), and match the oracle.
TEST_P(GpuSinkSplits, SplitKVCountsTheSinkOnce) {
  FB_SKIP_WITHOUT_CUDA();
  const Case c = on_backend(std::get<1>(GetParam()), std::get<0>(GetParam()));
  FB_SKIP_UNSUPPORTED(c, claims_sinks(c));
  const CaseResult r = run_case(c);
  EXPECT_GT(r.info.num_kv_splits, 1) << "the planner did not split this case; lengthen its kv_len";
  EXPECT_TRUE(r.passed) << r.failure << " (max_abs_err " << r.max_abs_err << ", lse " << r.lse_max_err
                        << ", splits " << r.info.num_kv_splits << ")";
}

INSTANTIATE_TEST_SUITE_P(Split, GpuSinkSplits,
                         ::testing::Combine(::testing::ValuesIn(gpu_test_backends()),
                                            ::testing::ValuesIn(sink_split_cases({DType::kF16, DType::kBF16}))),
                         [](const auto& info) { return param_name(std::get<0>(info.param), std::get<1>(info.param)); });

}  // namespace
}  // namespace flashband::testing
