// core/float_convert.h against independent definitions: every fp16 / bf16 bit pattern, the
// midpoints between neighbours (ties to even), overflow, underflow and NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "core/float_convert.h"
#include "random.h"

namespace flashband::core {
namespace {

// The value of a binary16 pattern from its definition.
double half_value(uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double mag;
  if (exp == 0x1f) mag = mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else if (exp == 0) mag = std::ldexp(mant, -24);
  else mag = std::ldexp(1024 + mant, exp - 25);
  return sign ? -mag : mag;
}

TEST(FloatConvert, HalfToFloatEveryPattern) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const double expect = half_value(static_cast<uint16_t>(h));
    const float got = half_bits_to_float(static_cast<uint16_t>(h));
    if (std::isnan(expect)) {
      EXPECT_TRUE(std::isnan(got)) << std::hex << h;
    } else {
      EXPECT_EQ(static_cast<double>(got), expect) << std::hex << h;
      EXPECT_EQ(std::signbit(got), (h & 0x8000) != 0) << std::hex << h;
    }
  }
}

TEST(FloatConvert, HalfRoundTripsAndTiesToEven) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const uint16_t b = static_cast<uint16_t>(h);
    const float f = half_bits_to_float(b);
    if (std::isnan(f)) {
      const uint16_t r = float_to_half_bits(f);
      EXPECT_EQ(r & 0x7c00, 0x7c00) << std::hex << h;
      EXPECT_NE(r & 0x3ff, 0) << std::hex << h;  // still NaN
      continue;
    }
    EXPECT_EQ(float_to_half_bits(f), b) << std::hex << h;
    // Midpoint to the next pattern of larger magnitude (finite, below the largest half):
    // ties go to the even mantissa.
    if ((h & 0x7fff) < 0x7bff) {
      const double mid = 0.5 * (half_value(b) + half_value(static_cast<uint16_t>(h + 1)));
      const uint16_t even = (h & 1) ? static_cast<uint16_t>(h + 1) : b;
      EXPECT_EQ(float_to_half_bits(static_cast<float>(mid)), even) << std::hex << h;
      // Just off the midpoint rounds to the nearer side.
      const float above = std::nextafter(static_cast<float>(mid), std::copysign(INFINITY, static_cast<float>(mid)));
      EXPECT_EQ(float_to_half_bits(above), static_cast<uint16_t>(h + 1)) << std::hex << h;
    }
  }
}

TEST(FloatConvert, HalfOverflowUnderflow) {
  EXPECT_EQ(float_to_half_bits(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half_bits(65519.99f), 0x7bff);
  EXPECT_EQ(float_to_half_bits(65520.0f), 0x7c00);  // the midpoint ties to even: infinity
  EXPECT_EQ(float_to_half_bits(-1e30f), 0xfc00);
  EXPECT_EQ(float_to_half_bits(INFINITY), 0x7c00);
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -25)), 0x0000);          // tie with 0 -> 0
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.5f, -25)), 0x0001);          // above the tie
  EXPECT_EQ(float_to_half_bits(-std::ldexp(1.0f, -26)), 0x8000);         // keeps the sign
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -14)), 0x0400);          // smallest normal
  EXPECT_EQ(float_to_half_bits(std::ldexp(1023.5f, -24)), 0x0400);       // carries into it
  EXPECT_EQ(float_to_half_bits(std::numeric_limits<float>::denorm_min()), 0x0000);
}

TEST(FloatConvert, HalfNearestOnRandomFloats) {
  testing::Rng rng(7);
  for (int i = 0; i < 200000; ++i) {
    const float f = static_cast<float>(rng.normal() * std::ldexp(1.0, rng.uniform_int(-30, 17)));
    const uint16_t h = float_to_half_bits(f);
    const double got = half_value(h);
    if (std::isinf(got)) {
      EXPECT_GE(std::fabs(f), 65520.0f);
      continue;
    }
    // No neighbour of the result is strictly nearer.
    const double err = std::fabs(got - f);
    for (int step : {-1, 1}) {
      const uint16_t n = static_cast<uint16_t>(h + step);
      if (((n ^ h) & 0x8000) || (n & 0x7c00) == 0x7c00) continue;
      EXPECT_LE(err, std::fabs(half_value(n) - f)) << f;
    }
  }
}

TEST(FloatConvert, Bf16EveryPatternAndTies) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const float f = bf16_bits_to_float(static_cast<uint16_t>(b));
    uint32_t u;
    std::memcpy(&u, &f, 4);
    EXPECT_EQ(u, b << 16);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(bf16_bits_to_float(float_to_bf16_bits(f)))) << std::hex << b;
      continue;
    }
    EXPECT_EQ(float_to_bf16_bits(f), b) << std::hex << b;
    if ((b & 0x7fff) < 0x7f7f) {
      // The midpoint between b and b + 1 is b's pattern with 0x8000 in the low half.
      const float mid = core::bits_float((b << 16) | 0x8000u);
      const uint16_t even = (b & 1) ? static_cast<uint16_t>(b + 1) : static_cast<uint16_t>(b);
      EXPECT_EQ(float_to_bf16_bits(mid), even) << std::hex << b;
      EXPECT_EQ(float_to_bf16_bits(core::bits_float((b << 16) | 0x8001u)), b + 1) << std::hex << b;
      EXPECT_EQ(float_to_bf16_bits(core::bits_float((b << 16) | 0x7fffu)), b) << std::hex << b;
    }
  }
  EXPECT_EQ(float_to_bf16_bits(std::numeric_limits<float>::max()), 0x7f80);  // rounds to inf
  EXPECT_EQ(float_to_bf16_bits(-INFINITY), 0xff80);
  // A NaN whose payload sits only in the low half must not become infinity.
  EXPECT_TRUE(std::isnan(bf16_bits_to_float(float_to_bf16_bits(core::bits_float(0x7f800001u)))));
}

}  // namespace
}  // namespace flashband::core
