// fp8 attention's quantization of P for P.V on the host (SPEC.md "fp8 attention"): the
// probability exp(s - m) in [0, 1] is scaled by 2^8, rounded to e4m3 (nearest even,
// saturating at 448) and scaled back. Scaling by a power of two changes no mantissa, so this
// equals what a kernel computes when it keeps the 2^8 in P and cancels it through the row
// sum; the cpu backend keeps its float sums and multiplies by the quantized value instead.
#pragma once
#include <algorithm>
#include <cmath>

namespace flashband::cpu {

// 2^8: the largest power of two below e4m3's largest finite value, 448.
constexpr int kPScaleLog2 = 8;

// x rounded to the nearest e4m3fn value (ties to even), +-448 past the range, NaN kept.
inline float round_to_e4m3(float x) {
  if (std::isnan(x) || x == 0.0f) return x;
  const float a = std::fabs(x);
  int e = 0;
  std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1): a's binade starts at 2^(e - 1)
  // 3 mantissa bits: the spacing is 2^(e - 1 - 3) in a normal binade; below 2^-6 (e4m3's
  // smallest normal) the subnormal spacing 2^-9 holds.
  const int spacing_log2 = std::max(e - 1, -6) - 3;
  float r = std::ldexp(std::nearbyint(std::ldexp(a, -spacing_log2)), spacing_log2);
  r = std::min(r, 448.0f);
  return std::copysign(r, x);
}

// The value P.V uses in place of the probability p (0 <= p <= 1).
inline float quantize_probability(float p) {
  return std::ldexp(round_to_e4m3(std::ldexp(p, kPScaleLog2)), -kPScaleLog2);
}

}  // namespace flashband::cpu
