// core/state.h: the online-softmax state against a direct double computation, its empty-state
// rules, and merge_weights (SPEC.md "Merging partial states").
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/state.h"
#include "random.h"

namespace flashband::core {
namespace {

const float kNegInf = -std::numeric_limits<float>::infinity();

// Direct: softmax-weighted sum of values and base-2 LSE of natural-log logits, in double.
struct Direct {
  double out;
  double lse2;
};
Direct direct(const std::vector<double>& logits, const std::vector<double>& values, int begin, int end) {
  double m = -INFINITY;
  for (int j = begin; j < end; ++j) m = std::max(m, logits[j]);
  if (m == -INFINITY) return {0.0, -INFINITY};
  double sum = 0.0, acc = 0.0;
  for (int j = begin; j < end; ++j) {
    sum += std::exp(logits[j] - m);
    acc += std::exp(logits[j] - m) * values[j];
  }
  return {acc / sum, (m + std::log(sum)) / std::log(2.0)};
}

// Runs SoftmaxState over [begin, end) in blocks of `block`, the way a kernel does.
struct Online {
  float out;
  float lse;
};
Online online(const std::vector<double>& logits, const std::vector<double>& values, int begin, int end, int block) {
  SoftmaxState st;
  float acc = 0.0f;
  for (int b = begin; b < end; b += block) {
    const int e = std::min(end, b + block);
    float bmax = kNegInf;
    for (int j = b; j < e; ++j) bmax = std::max(bmax, static_cast<float>(logits[j]) * kLog2e);
    acc *= st.rescale_to(bmax);
    float sum = 0.0f;
    for (int j = b; j < e; ++j) {
      const float w = st.weight(static_cast<float>(logits[j]) * kLog2e);
      sum += w;
      acc += w * static_cast<float>(values[j]);
    }
    st.add(sum);
  }
  return {acc * st.output_scale(), st.lse()};
}

TEST(SoftmaxState, EmptyStateIsZeroAndMinusInf) {
  SoftmaxState st;
  EXPECT_TRUE(st.empty());
  EXPECT_EQ(st.lse(), kNegInf);
  EXPECT_EQ(st.output_scale(), 0.0f);
  // A block of only masked logits leaves it empty and never produces NaN.
  const float scale = st.rescale_to(kNegInf);
  EXPECT_FALSE(std::isnan(scale));
  EXPECT_EQ(st.weight(kNegInf), 0.0f);
  st.add(0.0f);
  EXPECT_TRUE(st.empty());
  EXPECT_EQ(st.lse(), kNegInf);
  EXPECT_EQ(0.0f * st.output_scale(), 0.0f);
}

// A NaN logit (NaN in K) or a +inf one (Inf in K) makes the row NaN, LSE included: an LSE of
// -inf would read as an empty state, which a merge weighs 0, so split-KV would drop the key.
TEST(SoftmaxState, NonFiniteLogitsGiveNaNNotEmpty) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (float bad : {nan, inf}) {
    SoftmaxState st;
    st.rescale_to(std::max(2.0f, bad));  // a kernel's fmax skips NaN; +inf becomes the max
    st.add(st.weight(2.0f) + st.weight(bad));
    EXPECT_FALSE(st.empty()) << bad;
    EXPECT_TRUE(std::isnan(st.lse())) << bad;
    EXPECT_TRUE(std::isnan(st.output_scale())) << bad;
    // Merged with a healthy state, in either order, it stays NaN.
    EXPECT_TRUE(std::isnan(merge_weights(st.lse(), 1.5f).lse)) << bad;
    EXPECT_TRUE(std::isnan(merge_weights(1.5f, st.lse()).lse)) << bad;
    EXPECT_NE(merge_weights(1.5f, st.lse()).w_b, 0.0f) << bad;
    EXPECT_NE(merge_weights(st.lse(), 1.5f).w_a, 0.0f) << bad;
    // Beside an empty state (an empty split, or the absent sink every epilogue folds in),
    // in either order: NaN, not the empty state's weight 0 and LSE -inf.
    EXPECT_TRUE(std::isnan(merge_weights(st.lse(), kNegInf).lse)) << bad;
    EXPECT_TRUE(std::isnan(merge_weights(kNegInf, st.lse()).lse)) << bad;
    EXPECT_TRUE(std::isnan(merge_weights(st.lse(), kNegInf).w_a)) << bad;
    float scale = st.output_scale(), lse = st.lse();
    fold_sink(kNegInf, scale, lse);
    EXPECT_TRUE(std::isnan(scale) && std::isnan(lse)) << bad;
  }
  // Two empty states stay empty.
  EXPECT_EQ(merge_weights(kNegInf, kNegInf).lse, kNegInf);
  EXPECT_EQ(merge_weights(kNegInf, kNegInf).w_a, 0.0f);
}

TEST(SoftmaxState, MaskedLogitsWeighZeroOnceStarted) {
  SoftmaxState st;
  st.rescale_to(3.0f);
  EXPECT_EQ(st.weight(kNegInf), 0.0f);
  EXPECT_FLOAT_EQ(st.weight(3.0f), 1.0f);
  // The first real block after -inf rescales the (zero) accumulator by 0, not NaN.
  SoftmaxState fresh;
  EXPECT_EQ(fresh.rescale_to(5.0f), 0.0f);
}

TEST(SoftmaxState, MatchesDirectComputationForAnyBlocking) {
  testing::Rng rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = rng.uniform_int(1, 300);
    std::vector<double> logits(n), values(n);
    const double spread = 0.1 + 4.0 * rng.uniform();
    for (int j = 0; j < n; ++j) {
      logits[j] = spread * rng.normal() + 20.0 * (trial % 3 - 1);  // also far from 0
      values[j] = rng.normal();
    }
    const Direct d = direct(logits, values, 0, n);
    for (int block : {1, 3, 16, 64, 1000}) {
      const Online o = online(logits, values, 0, n, block);
      EXPECT_NEAR(o.out, d.out, 1e-5 + 1e-5 * std::fabs(d.out)) << "n " << n << " block " << block;
      EXPECT_NEAR(o.lse, d.lse2, 1e-5 * std::max(1.0, std::fabs(d.lse2))) << "n " << n << " block " << block;
    }
  }
}

TEST(MergeWeights, EmptyStates) {
  const MergeWeights both = merge_weights(kNegInf, kNegInf);
  EXPECT_EQ(both.w_a, 0.0f);
  EXPECT_EQ(both.w_b, 0.0f);
  EXPECT_EQ(both.lse, kNegInf);
  const MergeWeights a_only = merge_weights(2.5f, kNegInf);
  EXPECT_EQ(a_only.w_a, 1.0f);
  EXPECT_EQ(a_only.w_b, 0.0f);
  EXPECT_EQ(a_only.lse, 2.5f);
  const MergeWeights b_only = merge_weights(kNegInf, -7.0f);
  EXPECT_EQ(b_only.w_a, 0.0f);
  EXPECT_EQ(b_only.w_b, 1.0f);
  EXPECT_EQ(b_only.lse, -7.0f);
}

TEST(MergeWeights, EqualStatesAndLargeGaps) {
  const MergeWeights eq = merge_weights(4.0f, 4.0f);
  EXPECT_FLOAT_EQ(eq.w_a, 0.5f);
  EXPECT_FLOAT_EQ(eq.w_b, 0.5f);
  EXPECT_FLOAT_EQ(eq.lse, 5.0f);  // log2(2 * 2^4)
  const MergeWeights gap = merge_weights(1000.0f, -1000.0f);
  EXPECT_EQ(gap.w_a, 1.0f);
  EXPECT_EQ(gap.w_b, 0.0f);
  EXPECT_FLOAT_EQ(gap.lse, 1000.0f);
}

TEST(MergeWeights, TwoHalvesEqualTheWhole) {
  testing::Rng rng(5);
  for (int trial = 0; trial < 300; ++trial) {
    const int n = rng.uniform_int(0, 200);
    const int split = n == 0 ? 0 : rng.uniform_int(0, n);  // halves may be empty
    std::vector<double> logits(n), values(n);
    for (int j = 0; j < n; ++j) {
      logits[j] = 2.0 * rng.normal();
      values[j] = rng.normal();
    }
    const Online a = online(logits, values, 0, split, 16);
    const Online b = online(logits, values, split, n, 16);
    const Direct whole = direct(logits, values, 0, n);
    const MergeWeights w = merge_weights(a.lse, b.lse);
    // Empty halves carry out = 0; a zero weight must make them vanish.
    const float out = w.w_a * a.out + w.w_b * b.out;
    if (n == 0) {
      EXPECT_EQ(out, 0.0f);
      EXPECT_EQ(w.lse, kNegInf);
      continue;
    }
    EXPECT_NEAR(out, whole.out, 1e-5 + 1e-5 * std::fabs(whole.out)) << "n " << n << " split " << split;
    EXPECT_NEAR(w.lse, whole.lse2, 1e-5 * std::max(1.0, std::fabs(whole.lse2))) << "n " << n << " split " << split;
    EXPECT_NEAR(w.w_a + w.w_b, 1.0f, 1e-6f);
  }
}

}  // namespace
}  // namespace flashband::core
