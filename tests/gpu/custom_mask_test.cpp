// Packed custom masks on the GPU backends. sm80 serves them on every prefill entry point:
// its grid runs the shared mask grids (tests/common/mask_grid.h: random densities with
// windows, soft cap, GQA, sinks, fp8 K/V, ragged batches with empty requests; densities 0
// and 1; tree-verify masks over prefixes; long requests cut into KV splits) against the fp64
// oracle, and every case's mask guard fails a kernel that ignores the bits. sm90 and cudnn
// have no mask kernels (issue 66): a plan with a mask is refused by name before anything
// runs.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "case.h"
#include "flashband/error.h"
#include "gpu_backends.h"
#include "mask_grid.h"

namespace flashband::testing {
namespace {

const std::vector<DType> kDtypes = {DType::kF16, DType::kBF16};

std::string case_name(const ::testing::TestParamInfo<Case>& info) { return info.param.name(); }

class Sm80CustomMask : public ::testing::TestWithParam<Case> {};

// Judged against the oracle with the mask; the guard (case.cpp) also checks that the
// references with and without the mask differ by > 0.1, so ignoring the bits fails.
void expect_matches_oracle(const Case& given, bool must_split) {
  const Case c = on_backend(given, Backend::kSM80);
  FB_SKIP_UNSUPPORTED(c, true);
  const CaseResult r = run_case(c);
  EXPECT_TRUE(r.passed) << r.failure << " (max_abs_err " << r.max_abs_err << ", frob " << r.frob_rel_err << ", lse "
                        << r.lse_max_err << ", variant " << r.info.variant << ", splits " << r.info.num_kv_splits
                        << ")";
  EXPECT_TRUE(r.mask_guard_ok);
  EXPECT_EQ(r.info.backend, Backend::kSM80);
  EXPECT_NE(r.info.variant.find("mask+custom"), std::string::npos) << r.info.variant;
  if (must_split) EXPECT_GT(r.info.num_kv_splits, 1) << "the planner did not split this case; lengthen its kv_len";
}

TEST_P(Sm80CustomMask, MatchesOracle) {
  FB_SKIP_WITHOUT_CUDA();
  expect_matches_oracle(GetParam(), false);
}

INSTANTIATE_TEST_SUITE_P(Grid, Sm80CustomMask, ::testing::ValuesIn(custom_mask_cases(kDtypes)), case_name);
INSTANTIATE_TEST_SUITE_P(Extreme, Sm80CustomMask, ::testing::ValuesIn(mask_extreme_cases(kDtypes)), case_name);
INSTANTIATE_TEST_SUITE_P(TreeVerify, Sm80CustomMask, ::testing::ValuesIn(tree_verify_cases(kDtypes)), case_name);

class Sm80CustomMaskSplits : public ::testing::TestWithParam<Case> {};

// Each split masks its own keys and writes its partial state; the merge is unchanged.
TEST_P(Sm80CustomMaskSplits, SplitKVMergesMaskedPartials) {
  FB_SKIP_WITHOUT_CUDA();
  expect_matches_oracle(GetParam(), true);
}

INSTANTIATE_TEST_SUITE_P(Split, Sm80CustomMaskSplits, ::testing::ValuesIn(mask_split_cases(kDtypes)), case_name);

// sm90 and cudnn: refused by name.
class GpuCustomMaskRefused : public ::testing::TestWithParam<std::tuple<Backend, Case>> {};

TEST_P(GpuCustomMaskRefused, RefusedByName) {
  FB_SKIP_WITHOUT_CUDA();
  const Case c = on_backend(std::get<1>(GetParam()), std::get<0>(GetParam()));
  if (c.backend == Backend::kSM90) GTEST_SKIP() << "sm90 serves custom masks: custom_mask_sm90_test.cpp";
  try {
    run_case(c);
    ADD_FAILURE() << backend_name(c.backend) << " ran a custom mask it has no kernel for";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("does not support custom_mask"), std::string::npos) << e.what();
  }
}

// One case per entry point is enough to show the refusal; head dim 64, no soft cap, sinks
// or fp8, so that no other limit of any backend refuses it first.
std::vector<Case> one_per_entry() {
  std::vector<Case> picked;
  for (EntryPoint e : {EntryPoint::kSingle, EntryPoint::kRagged, EntryPoint::kPaged})
    for (Case c : custom_mask_cases({DType::kF16}))
      if (c.entry == e && !c.kv_dtype && c.sinks.empty() && c.logits_soft_cap == 0.0f) {
        c.head_dim = 64;
        picked.push_back(c);
        break;
      }
  return picked;
}

std::vector<Backend> backends_without_masks() {
  std::vector<Backend> out;
  for (Backend b : gpu_test_backends())
    if (b != Backend::kSM80) out.push_back(b);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Refused, GpuCustomMaskRefused,
                         ::testing::Combine(::testing::ValuesIn(backends_without_masks()),
                                            ::testing::ValuesIn(one_per_entry())),
                         [](const auto& info) { return param_name(std::get<0>(info.param), std::get<1>(info.param)); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(GpuCustomMaskRefused);  // a build with sm80 only

}  // namespace
}  // namespace flashband::testing
