// fp8 K/V on every GPU backend against the fp64 oracle: the grid of tests/common/fp8_grid.h
// at head dims 64, 128, 256, and each scale shown to be applied. A backend whose capability
// row lacks the K/V dtype is skipped by supports() (its reason printed), never by name, so
// flipping a row in the capability table is all it takes to run its cells here.
#include <gtest/gtest.h>

#include <tuple>
#include <utility>

#include "fp8_grid.h"
#include "gpu_backends.h"

namespace flashband::testing {
namespace {

class GpuFp8Grid : public ::testing::TestWithParam<std::tuple<Backend, Case>> {};

TEST_P(GpuFp8Grid, MatchesOracle) {
  FB_SKIP_WITHOUT_CUDA();
  const Case c = on_backend(std::get<1>(GetParam()), std::get<0>(GetParam()));
  FB_SKIP_UNSUPPORTED(c, false);
  const CaseResult r = run_case(c);
  EXPECT_TRUE(r.passed) << r.failure << " (max_abs_err " << r.max_abs_err << ", frob " << r.frob_rel_err << ", lse "
                        << r.lse_max_err << ", variant " << r.info.variant << ")";
  EXPECT_EQ(r.info.backend, c.backend);
}

INSTANTIATE_TEST_SUITE_P(Grid, GpuFp8Grid,
                         ::testing::Combine(::testing::ValuesIn(gpu_test_backends()),
                                            ::testing::ValuesIn(fp8_grid_cases({64, 128, 256}))),
                         [](const auto& info) { return param_name(std::get<0>(info.param), std::get<1>(info.param)); });

class GpuFp8Scales : public ::testing::TestWithParam<Backend> {};

TEST_P(GpuFp8Scales, EachScaleIsApplied) {
  FB_SKIP_WITHOUT_CUDA();
  int ran = 0;
  for (EntryPoint e : {EntryPoint::kSingle, EntryPoint::kRagged, EntryPoint::kPaged, EntryPoint::kDecode})
    for (DType kv : {DType::kE4M3, DType::kE5M2})
      for (bool tensors : {false, true}) {
        Case c = on_backend(fp8_scaled_case(e, kv, tensors), GetParam());
        c.head_dim = 128;
        if (!supports(problem_of(c), c.backend).supported) continue;
        ++ran;
        for (auto [k, v] : {std::pair{1.0f, c.v_scale}, std::pair{c.k_scale, 1.0f}, std::pair{c.v_scale, c.k_scale}}) {
          const ScaleJudgement j = judge_with_scales(c, k, v);
          EXPECT_TRUE(j.passes_own) << c.name() << ": " << j.own_failure;
          EXPECT_FALSE(j.passes_judged) << c.name() << " also passes judged with k_scale " << k << ", v_scale " << v;
        }
      }
  if (ran == 0) GTEST_SKIP() << backend_name(GetParam()) << " claims no fp8 K/V case here (capability table)";
}

INSTANTIATE_TEST_SUITE_P(Backends, GpuFp8Scales, ::testing::ValuesIn(gpu_test_backends()),
                         [](const auto& info) { return std::string(backend_name(info.param)); });

}  // namespace
}  // namespace flashband::testing
