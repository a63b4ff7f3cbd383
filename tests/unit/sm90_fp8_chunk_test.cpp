// sm90's fp8 chunk conversion (backends/sm90/fp8_chunk.h place_chunk), the integer code its
// paged producer runs on 8 gathered codes: element i of the 16-byte chunk must be code i,
// placed as sm80's conversion places one code (whose values sm80_fp8_bits_test.cpp checks
// against the formats for all 256 codes). Every code in every one of the 8 positions, beside
// neighbours that vary, for both formats and both q dtypes; so a chunk that swaps, drops or
// mixes codes fails here.
#include <gtest/gtest.h>

#include <cstdint>

#include "backends/sm80/fp8_bits.h"
#include "backends/sm90/fp8_chunk.h"

namespace flashband::sm90 {
namespace {

// The 16-bit placement of one code, alone in its word.
template <DType Q, DType KV>
uint16_t placed_alone(uint8_t code) {
  return static_cast<uint16_t>(sm80::Fp8Bits<Q, KV>::place(uint32_t{code} << 8));
}

template <DType Q, DType KV>
int mismatches_over_every_code() {
  int bad = 0;
  for (int pos = 0; pos < 8; ++pos)
    for (int code = 0; code < 256; ++code)
      for (int salt = 0; salt < 4; ++salt) {
        uint8_t codes[8];
        for (int i = 0; i < 8; ++i) codes[i] = static_cast<uint8_t>(code * (i + 3) + salt * 71 + i * 29);
        codes[pos] = static_cast<uint8_t>(code);
        uint32_t lo = 0, hi = 0;
        for (int i = 0; i < 4; ++i) {
          lo |= uint32_t{codes[i]} << (8 * i);
          hi |= uint32_t{codes[4 + i]} << (8 * i);
        }
        uint32_t out[4];
        place_chunk<Q, KV>(lo, hi, out);
        for (int i = 0; i < 8; ++i) {
          const uint16_t got = static_cast<uint16_t>(out[i / 2] >> (16 * (i % 2)));
          if (got != placed_alone<Q, KV>(codes[i])) ++bad;
        }
      }
  return bad;
}

TEST(Sm90Fp8Chunk, ElementIIsCodeIPlacedAsAlone) {
  EXPECT_EQ((mismatches_over_every_code<DType::kF16, DType::kE4M3>()), 0);
  EXPECT_EQ((mismatches_over_every_code<DType::kF16, DType::kE5M2>()), 0);
  EXPECT_EQ((mismatches_over_every_code<DType::kBF16, DType::kE4M3>()), 0);
  EXPECT_EQ((mismatches_over_every_code<DType::kBF16, DType::kE5M2>()), 0);
}

// Landmarks in the chunk's own words: e4m3 1.0 (0x38) -> fp16 1.0 * 2^-8 = 0x1C00 at element 0,
// e4m3 NaN (0x7F) -> an fp16 NaN at element 7, e5m2 -1.0 (0xBC) -> fp16 -1.0 (0xBC00).
TEST(Sm90Fp8Chunk, Landmarks) {
  uint32_t out[4];
  place_chunk<DType::kF16, DType::kE4M3>(0x00000038u, 0x7F000000u, out);
  EXPECT_EQ(out[0] & 0xFFFFu, 0x1C00u);
  EXPECT_EQ(out[3] >> 16 & 0x7C00u, 0x7C00u);  // exponent all ones
  EXPECT_NE(out[3] >> 16 & 0x03FFu, 0u);       // and a mantissa: NaN
  place_chunk<DType::kF16, DType::kE5M2>(0x0000BC00u, 0u, out);
  EXPECT_EQ(out[0] >> 16, 0xBC00u);
  EXPECT_EQ(out[0] & 0xFFFFu, 0u);
}

}  // namespace
}  // namespace flashband::sm90
