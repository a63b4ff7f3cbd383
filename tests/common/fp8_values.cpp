#include "fp8_values.h"

#include <cmath>
#include <limits>

namespace flashband::testing {

double fp8_value(DType fmt, uint8_t b) {
  const double sign = (b & 0x80) ? -1.0 : 1.0;
  const bool e4m3 = fmt == DType::kE4M3;
  const int mant_bits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
  const int e = (b & 0x7F) >> mant_bits, m = b & ((1 << mant_bits) - 1);
  const double frac = static_cast<double>(m) / (1 << mant_bits);
  if (e4m3 && e == 15 && m == 7) return std::numeric_limits<double>::quiet_NaN();
  if (!e4m3 && e == 31) return m ? std::numeric_limits<double>::quiet_NaN() : sign * INFINITY;
  if (e == 0) return sign * std::ldexp(frac, 1 - bias);
  return sign * std::ldexp(1.0 + frac, e - bias);
}

}  // namespace flashband::testing
