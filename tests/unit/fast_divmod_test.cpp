// core::FastDivmod against the / and % operators: every divisor up to 300 over dense and
// edge dividends, large divisors, and random pairs over the whole non-negative int range.
#include <gtest/gtest.h>

#include <climits>
#include <random>
#include <vector>

#include "core/fast_divmod.h"

namespace flashband::core {
namespace {

// Whether divmod agrees with / and %; callers assert it, so the first mismatch ends a test.
::testing::AssertionResult exact(const FastDivmod& f, int n) {
  int q = -1, r = -1;
  f.divmod(n, q, r);
  if (q == n / f.divisor && r == n % f.divisor) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << n << " / " << f.divisor << ": got " << q << " rem " << r << ", want "
                                       << n / f.divisor << " rem " << n % f.divisor;
}

TEST(FastDivmod, SmallDivisorsOverDenseAndEdgeDividends) {
  for (int d = 1; d <= 300; ++d) {
    const FastDivmod f = FastDivmod::make(d);
    for (int n = 0; n < 5000; ++n) ASSERT_TRUE(exact(f, n));
    // Multiples of d near 2^20, 2^24, 2^30 and INT_MAX, two divisors either side: the top of
    // the range is where a multiplier or shift one bit short first goes wrong.
    for (int k : {1 << 20, 1 << 24, 1 << 30, INT_MAX})
      for (int dn = -2 * d; dn <= 2 * d; ++dn) {
        const int64_t n = static_cast<int64_t>(k / d) * d + dn;
        if (n >= 0 && n <= INT_MAX) ASSERT_TRUE(exact(f, static_cast<int>(n)));
      }
  }
}

TEST(FastDivmod, LargeAndRandomDivisors) {
  std::mt19937 rng(7);
  std::vector<int> divisors = {INT_MAX, INT_MAX - 1, 1 << 30, (1 << 30) + 1, (1 << 30) - 1, 65535, 65536, 65537};
  for (int i = 0; i < 2000; ++i) divisors.push_back(1 + static_cast<int>(rng() % INT_MAX));
  for (int d : divisors) {
    const FastDivmod f = FastDivmod::make(d);
    for (int n : {0, 1, d - 1, d, INT_MAX, INT_MAX - 1}) ASSERT_TRUE(exact(f, n));
    for (int i = 0; i < 200; ++i) ASSERT_TRUE(exact(f, static_cast<int>(rng() % (static_cast<uint32_t>(INT_MAX) + 1))));
  }
}

}  // namespace
}  // namespace flashband::core
