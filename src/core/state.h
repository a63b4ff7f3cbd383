// Online-softmax state in base 2 and the one merge rule of SPEC.md ("Merging partial
// states"). Logits are kept pre-multiplied by log2(e) so exp2 is the only transcendental.
// The empty state is m = -inf, d = 0; every (-inf) - (-inf) is avoided explicitly.
#pragma once
#include <cmath>

#include "core/hd.h"

namespace flashband::core {

constexpr float kLog2e = 1.4426950408889634f;

#if defined(__CUDACC__)
FB_HD float fb_exp2(float x) { return exp2f(x); }
FB_HD float fb_log2(float x) { return log2f(x); }
#else
inline float fb_exp2(float x) { return std::exp2(x); }
inline float fb_log2(float x) { return std::log2(x); }
#endif
FB_HD constexpr float neg_inf() { return -__builtin_huge_valf(); }

// How far (base 2) a tile's maximum may exceed a kernel's running reference m before m
// moves. Weights are 2^(x * scale2 - m * scale2), so a stale m leaves them <= 2^8: exact in
// float32 and in P's 16-bit formats, and O and d stay relative to the same m, so the final
// O / d and m + log2 d are unchanged. In exchange m, and with it the O rescale, moves only
// when the maximum jumps, not whenever it creeps up.
constexpr float kMaxSlack = 8.0f;

// Running max `m` and denominator `d` of one query row over the keys seen so far.
struct SoftmaxState {
  float m = neg_inf();
  float d = 0.0f;

  FB_HD bool empty() const { return d == 0.0f; }

  // Folds in a block whose max logit is `block_max` (base-2 units). Returns the factor by
  // which the caller must rescale its output accumulator; the caller then adds
  // exp2(s - m) * v for each key and `sum` of those weights through add().
  FB_HD float rescale_to(float block_max) {
    const float m_new = block_max > m ? block_max : m;
    const float scale = (m == m_new) ? 1.0f : fb_exp2(m - m_new);  // m == -inf -> 0
    d *= scale;
    m = m_new;
    return scale;
  }
  FB_HD void add(float weight_sum) { d += weight_sum; }

  // exp2(s - m) with -inf logits giving exactly 0 even while m is still -inf.
  FB_HD float weight(float s) const { return s == neg_inf() ? 0.0f : fb_exp2(s - m); }

  // Base-2 log-sum-exp of the logits seen, -inf when none was visible. A NaN d (a NaN or
  // +inf logit: NaN or Inf in K) gives NaN, never the empty state's -inf, which a split-KV
  // merge would drop as weight 0 and so hide the corrupt key.
  FB_HD float lse() const { return d == 0.0f ? neg_inf() : m + fb_log2(d); }
  // Multiplier that turns the accumulated sum of weighted values into the output; 0 when
  // the row saw no key, so fully masked rows come out as exact zeros (NaN for a NaN d).
  FB_HD float output_scale() const { return d == 0.0f ? 0.0f : 1.0f / d; }
};

// The sink of query head h in base 2 (-inf without sinks).
FB_HD float sink_log2(const float* sinks, int h) { return sinks ? sinks[h] * kLog2e : neg_inf(); }

// Weights for merging two normalised partial results with base-2 LSEs s_a, s_b:
// o = w_a * o_a + w_b * o_b, lse = merged. Both empty -> weights 0 and lse -inf. A NaN LSE
// (a row that met NaN or +inf in K) merges to NaN weights and LSE, also beside an empty state
// (no sink, or an empty split): the empty test looks at both, as max(NaN, -inf) is -inf.
struct MergeWeights {
  float w_a;
  float w_b;
  float lse;
};
FB_HD MergeWeights merge_weights(float s_a, float s_b) {
  if (s_a == neg_inf() && s_b == neg_inf()) return {0.0f, 0.0f, neg_inf()};
  const float m = s_a > s_b ? s_a : s_b;
  const float e_a = fb_exp2(s_a - m);  // s_a == -inf -> 0
  const float e_b = fb_exp2(s_b - m);
  const float sum = e_a + e_b;
  return {e_a / sum, e_b / sum, m + fb_log2(sum)};
}

// Folds an attention sink sink2 (base 2; -inf: none) into a finished row whose output is
// out_scale * (accumulated weighted values) and whose LSE is lse (SPEC.md "Attention
// sinks"): the sink is the partial state (o = 0, lse = sink2), merged once. A row that saw
// no key (out_scale 0, lse -inf) keeps 0 and gets the sink's LSE; without a sink both stay.
FB_HD void fold_sink(float sink2, float& out_scale, float& lse) {
  const MergeWeights w = merge_weights(lse, sink2);
  out_scale *= w.w_a;
  lse = w.lse;
}

}  // namespace flashband::core
