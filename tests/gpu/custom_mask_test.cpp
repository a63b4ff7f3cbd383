// Custom masks on the GPU backends: sm80, sm90 and cudnn have no mask kernels yet (issue 66),
// so a plan with a custom mask on each of them is refused by name before anything runs, and
// auto on a GPU finds no backend for it; the cpu backend serves masks (tests/unit/
// custom_mask_test.cpp). When the kernels come, these cases become the mask grid's GPU run.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "case.h"
#include "flashband/error.h"
#include "gpu_backends.h"
#include "mask_grid.h"

namespace flashband::testing {
namespace {

class GpuCustomMask : public ::testing::TestWithParam<std::tuple<Backend, Case>> {};

TEST_P(GpuCustomMask, RefusedByName) {
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

INSTANTIATE_TEST_SUITE_P(Refused, GpuCustomMask,
                         ::testing::Combine(::testing::ValuesIn(gpu_test_backends()), ::testing::ValuesIn(one_per_entry())),
                         [](const auto& info) { return param_name(std::get<0>(info.param), std::get<1>(info.param)); });

}  // namespace
}  // namespace flashband::testing
