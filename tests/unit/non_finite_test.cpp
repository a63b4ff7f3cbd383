// The cpu backend against SPEC.md's NaN rule over every entry point, q dtype and K/V storage
// (tests/common/non_finite.h): the reference the GPU kernels are held to by
// tests/gpu/non_finite_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "case_steps.h"
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

// SPEC.md: a logit of -inf (an infinite element of K against a same-signed q) weighs 0, as a
// masked key does, and the row stays finite, even when a whole first block of keys is -inf
// (the running maximum is then still -inf: (-inf) - (-inf) must not become a NaN weight).
TEST(NonFinite, CpuMinusInfLogitsWeighZero) {
  Case c;
  c.entry = EntryPoint::kSingle;
  c.qo_lens = {3};
  c.kv_lens = {130};
  c.head_dim = 64;
  c.dtype = DType::kF32;
  c.seed = 4500;
  std::vector<RequestData> data = make_case_data(c);
  for (int i = 0; i < 3; ++i) data[0].q[static_cast<size_t>(i) * 64] = 1.0;  // element 0 of every q row
  for (int j = 0; j < 129; ++j)
    data[0].k[static_cast<size_t>(j) * 64] = -std::numeric_limits<double>::infinity();  // all keys but the last
  const ApiOutputs got = run_api(c, data);
  // Only key 129 weighs: every row's output is v_129.
  for (int i = 0; i < 3; ++i)
    for (int d = 0; d < 64; ++d)
      EXPECT_NEAR(got.out[static_cast<size_t>(i) * 64 + d], data[0].v[129 * 64 + d], 1e-6) << "row " << i << " dim " << d;
  for (double l : got.lse) EXPECT_TRUE(std::isfinite(l)) << l;
}

}  // namespace
}  // namespace flashband::testing
