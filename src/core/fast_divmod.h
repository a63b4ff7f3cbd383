// Exact division of a non-negative int by a divisor fixed for a whole launch (the GQA group
// that packs query heads into rows): the host finds a multiplier once, and each division on
// the device is one 64-bit multiply and a shift instead of the ~20 instructions of an
// integer division by a runtime value.
//
// With l = ceil(log2 d), s = 31 + l and m = ceil(2^s / d), floor(n * m / 2^s) = floor(n / d)
// for 0 <= n < 2^31: m * d = 2^s + e with 0 <= e < d <= 2^l, so n * m / 2^s exceeds n / d by
// n * e / (d * 2^s) < 1 / d, which cannot reach the next multiple of 1 / d past n / d's
// floor. And m < 2^32 (2^31 for d = 1), so n * m < 2^63.
#pragma once
#include <cstdint>

#include "core/hd.h"

namespace flashband::core {

struct FastDivmod {
  int divisor = 1;
  int shift = 31;
  uint64_t multiplier = uint64_t{1} << 31;

  // d >= 1.
  static FastDivmod make(int d) {
    FastDivmod f;
    int l = 0;
    while ((int64_t{1} << l) < d) ++l;
    f.divisor = d;
    f.shift = 31 + l;
    f.multiplier = ((uint64_t{1} << f.shift) + static_cast<uint64_t>(d) - 1) / static_cast<uint64_t>(d);
    return f;
  }

  // n >= 0.
  FB_HD int div(int n) const {
    return static_cast<int>((static_cast<uint64_t>(static_cast<uint32_t>(n)) * multiplier) >> shift);
  }
  // n / divisor and n % divisor.
  FB_HD void divmod(int n, int& quotient, int& remainder) const {
    quotient = div(n);
    remainder = n - quotient * divisor;
  }
};

}  // namespace flashband::core
