// The cpu backend against SPEC.md's NaN rule over every entry point, q dtype and K/V storage
// (tests/common/non_finite.h): the reference the GPU kernels are held to by
// tests/gpu/non_finite_test.cpp.
#include <gtest/gtest.h>

#include "non_finite.h"

namespace flashband::testing {
namespace {

TEST(NonFinite, CpuNaNReachesTheRowsThatSeeItAndNoOther) {
  int checked = 0;
  for (const Case& c : non_finite_cases({DType::kF32, DType::kF16, DType::kBF16}))
    for (bool in_k : {true, false}) {
      const NonFiniteCheck r = check_one_nan(c, in_k, kNanKey, kNanDim);
      EXPECT_EQ(r.wrong, 0) << c.name() << (in_k ? " K" : " V") << r.first;
      ++checked;
    }
  EXPECT_EQ(checked, 4 * (1 + 3 + 3) * 2 * 2);
}

}  // namespace
}  // namespace flashband::testing
