// SPEC.md's NaN rule on every GPU backend (tests/common/non_finite.h): a NaN in a key makes
// the rows that see it NaN (output and LSE), a NaN in a value element that element, and no
// other output changes; over every entry point, fp16 / bf16 q, 16-bit and fp8 K/V, causal or
// not. sm90 once took a NaN softmax denominator for an empty row (output 0, LSE -inf), which
// made a split's corrupt key vanish in the merge.
#include <gtest/gtest.h>

#include "gpu_backends.h"
#include "non_finite.h"

namespace flashband::testing {
namespace {

class GpuNonFinite : public ::testing::TestWithParam<Backend> {};

TEST_P(GpuNonFinite, NaNReachesTheRowsThatSeeItAndNoOther) {
  FB_SKIP_WITHOUT_CUDA();
  int checked = 0;
  for (const Case& base : non_finite_cases({DType::kF16, DType::kBF16})) {
    const Case c = on_backend(base, GetParam());
    const SupportAnswer a = supports(problem_of(c), c.backend);
    if (!a.supported) continue;  // each backend's refusals are tested where it states them
    for (bool in_k : {true, false}) {
      const NonFiniteCheck r = check_one_nan(c, in_k, kNanKey, kNanDim);
      EXPECT_EQ(r.wrong, 0) << c.name() << (in_k ? " K" : " V") << r.first;
      ++checked;
    }
  }
  // sm80 serves all 4 x 3 x 2 x 2 cells, sm90 the prefill ones it claims; none is a skip.
  EXPECT_GT(checked, 0) << backend_name(GetParam()) << " ran no case";
}

INSTANTIATE_TEST_SUITE_P(Backends, GpuNonFinite, ::testing::ValuesIn(gpu_test_backends()),
                         [](const auto& info) { return std::string(backend_name(info.param)); });

}  // namespace
}  // namespace flashband::testing
