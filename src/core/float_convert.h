// Bit-level fp16 <-> float and bf16 <-> float conversions, and fp8 (e4m3fn, e5m2) -> float, with round-to-nearest-even and
// correct NaN / infinity / subnormal handling. Host code (the cpu backend, the tests, the
// CLI) uses these instead of CUDA's cuda_fp16.h / cuda_bf16.h so that no CUDA header is
// needed on the host; the functions are FB_HD so device code may use them too.
#pragma once
#include <cstdint>
#include <cstring>

#include "core/hd.h"

namespace flashband::core {

FB_HD uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
FB_HD float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// ---- IEEE binary16 ----

FB_HD float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0x1fu) return bits_float(sign | 0x7f800000u | (mant << 13));  // inf / NaN
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24 is exact in float.
    const float mag = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return bits_float(sign | float_bits(mag));
  }
  // Normal: rebias the exponent from 15 to 127.
  return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

FB_HD uint16_t float_to_half_bits(float f) {
  const uint32_t x = float_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) {
    // Infinity stays infinity; NaN keeps its top payload bits and is forced quiet.
    return static_cast<uint16_t>(ax == 0x7f800000u ? (sign | 0x7c00u)
                                                   : (sign | 0x7e00u | ((ax >> 13) & 0x3ffu)));
  }
  // 65520 is the midpoint between the largest half (65504) and 2^16: it and above round to inf.
  if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  if (ax >= 0x38800000u) {
    // Normal half: drop 13 mantissa bits with round-to-nearest-even; a carry out of the
    // mantissa correctly bumps the exponent.
    uint32_t h = (ax - (112u << 23)) >> 13;
    const uint32_t rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  // Subnormal half (or zero): value = m * 2^(e-150) with the implicit bit in m; the half
  // mantissa is value * 2^24 = m >> (126 - e). Below 2^-25 everything rounds to zero.
  const int e = static_cast<int>(ax >> 23);
  if (e < 102) return static_cast<uint16_t>(sign);
  const uint32_t m = (ax & 0x7fffffu) | 0x800000u;
  const int shift = 126 - e;  // 14 .. 24
  uint32_t h = m >> shift;
  const uint32_t rem = m & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1);
  if (rem > halfway || (rem == halfway && (h & 1u))) ++h;  // may carry into the smallest normal
  return static_cast<uint16_t>(sign | h);
}

// ---- bfloat16: the top half of a float ----

FB_HD float bf16_bits_to_float(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }

FB_HD uint16_t float_to_bf16_bits(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  // Round to nearest even on the dropped 16 bits; overflow correctly reaches infinity.
  const uint32_t rounded = x + 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(rounded >> 16);
}

// ---- fp8, decode only (an fp8 KV cache is read, never written, by flashband) ----

// e5m2 is binary16 with the low 8 mantissa bits cut off: its byte is the top byte of a half.
FB_HD float e5m2_bits_to_float(uint8_t b) { return half_bits_to_float(static_cast<uint16_t>(b) << 8); }

// e4m3fn: bias 7, 3 mantissa bits, no infinity; S.1111.111 is NaN, so 448 is the largest
// finite value. Every value is exact in float.
FB_HD float e4m3_bits_to_float(uint8_t b) {
  const uint32_t sign = static_cast<uint32_t>(b & 0x80u) << 24;
  const uint32_t exp = (b >> 3) & 0xfu;
  const uint32_t mant = b & 0x7u;
  if (exp == 0xfu && mant == 0x7u) return bits_float(sign | 0x7fc00000u);
  if (exp == 0) return bits_float(sign | float_bits(static_cast<float>(mant) * 0.001953125f));  // mant * 2^-9
  return bits_float(sign | ((exp + 120u) << 23) | (mant << 20));  // rebias 7 -> 127
}

}  // namespace flashband::core
