// fp8 decoding (core/float_convert.h) against the formats' definitions (tests/common/
// fp8_values.h, the tests' one fp8 decoder), every bit pattern;
// and the tests' own fp8 rounding (tests/common/dtype_values.h), which builds the grids'
// inputs: nearest value, ties to the even code, the largest values and subnormals.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "core/float_convert.h"
#include "dtype_values.h"
#include "fp8_values.h"

namespace flashband {
namespace {

TEST(Fp8Convert, E4M3EveryPattern) {
  for (int b = 0; b < 256; ++b) {
    const float got = core::e4m3_bits_to_float(static_cast<uint8_t>(b));
    if ((b & 0x7f) == 0x7f) {  // e4m3fn: S.1111.111 is NaN, and there is no infinity
      EXPECT_TRUE(std::isnan(got)) << b;
      continue;
    }
    EXPECT_EQ(static_cast<double>(got), testing::fp8_value(DType::kE4M3, static_cast<uint8_t>(b))) << b;
    EXPECT_EQ(std::signbit(got), (b & 0x80) != 0) << b;
  }
  EXPECT_EQ(core::e4m3_bits_to_float(0x7e), 448.0f);
  EXPECT_EQ(core::e4m3_bits_to_float(0x01), std::ldexp(1.0f, -9));
}

TEST(Fp8Convert, E5M2EveryPattern) {
  for (int b = 0; b < 256; ++b) {
    const float got = core::e5m2_bits_to_float(static_cast<uint8_t>(b));
    const int exp = (b >> 2) & 0x1f, mant = b & 3;
    if (exp == 0x1f) {  // IEEE-like: infinity and NaN
      if (mant) EXPECT_TRUE(std::isnan(got)) << b;
      else EXPECT_EQ(got, (b & 0x80) ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity());
      continue;
    }
    EXPECT_EQ(static_cast<double>(got), testing::fp8_value(DType::kE5M2, static_cast<uint8_t>(b))) << b;
    EXPECT_EQ(std::signbit(got), (b & 0x80) != 0) << b;
  }
  EXPECT_EQ(core::e5m2_bits_to_float(0x7b), 57344.0f);
  EXPECT_EQ(core::e5m2_bits_to_float(0x01), std::ldexp(1.0f, -16));
}

TEST(Fp8Convert, TestRoundingIsNearestTiesToEven) {
  using testing::round_to_dtype;
  for (DType d : {DType::kE4M3, DType::kE5M2}) {
    const int max_code = d == DType::kE4M3 ? 0x7e : 0x7b;
    auto value = [&](int code) {
      return d == DType::kE4M3 ? core::e4m3_bits_to_float(static_cast<uint8_t>(code))
                               : core::e5m2_bits_to_float(static_cast<uint8_t>(code));
    };
    for (int code = 0; code <= max_code; ++code) {
      const double x = value(code);
      EXPECT_EQ(round_to_dtype(d, x), x) << code;
      EXPECT_EQ(round_to_dtype(d, -x), -x) << code;
      if (code == max_code) continue;
      const double next = value(code + 1), mid = (x + next) / 2;
      EXPECT_EQ(round_to_dtype(d, mid), code % 2 == 0 ? x : next) << "tie above code " << code;
      EXPECT_EQ(round_to_dtype(d, std::nextafter(mid, 0.0)), x) << code;
      EXPECT_EQ(round_to_dtype(d, std::nextafter(mid, 1e9)), next) << code;
    }
  }
  EXPECT_TRUE(std::isnan(testing::round_to_dtype(DType::kE4M3, 1000.0)));  // no infinity in e4m3fn
  EXPECT_TRUE(std::isinf(testing::round_to_dtype(DType::kE5M2, 1e6)));
}

}  // namespace
}  // namespace flashband
