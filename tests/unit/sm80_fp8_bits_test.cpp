// sm80's fp8 -> fp16 / bf16 conversion (backends/sm80/fp8_bits.h), the code the kernels run,
// against the formats' definitions: every one of the 256 codes of e4m3 and e5m2, in each of
// the four byte positions of a fragment word, for fp16 and bf16 q. Then the power of two the
// loop leaves out (fp16: folded into k_scale and v_scale) and a scale, in float32 as the
// kernel applies them: finite codes give their exact value, NaN stays NaN, Inf stays Inf.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <sstream>

#include "backends/sm80/fp8_bits.h"
#include "core/float_convert.h"
#include "fp8_values.h"

namespace flashband::sm80 {
namespace {

using testing::fp8_value;

float half_value(DType q, uint16_t bits) {
  return q == DType::kF16 ? core::half_bits_to_float(bits) : core::bf16_bits_to_float(bits);
}

// The loop's 16-bit value of each half of place()'s output: bf16 multiplies by 2^gap (HMUL2:
// the float product rounded to bf16, exact for every finite code).
template <DType Q, DType KV>
uint16_t loop_half(uint32_t placed, int half) {
  const uint16_t h = static_cast<uint16_t>(placed >> (16 * half));
  if constexpr (Q == DType::kF16) {
    return h;
  } else {
    return core::float_to_bf16_bits(core::bf16_bits_to_float(h) * Fp8Bits<Q, KV>::kUnfold);
  }
}

// One code as the kernel carries it: the 16-bit value in the loop, then times the fold and
// `scale` in float32.
template <DType Q, DType KV>
::testing::AssertionResult converts(uint8_t code, uint16_t loop_bits, float scale) {
  using B = Fp8Bits<Q, KV>;
  const double want = fp8_value(KV, code);
  const float in_loop = half_value(Q, loop_bits);
  const float scaled = in_loop * (scale * B::kScaleFold);
  auto fail = [&] {
    std::ostringstream s;  // one stream: AssertionResult formats each << apart, dropping std::hex
    s << dtype_name(KV) << " -> " << dtype_name(Q) << " code 0x" << std::hex << int{code} << ": loop bits 0x"
      << loop_bits << std::dec << " (" << in_loop << "), scaled " << scaled << ", want " << want << " x " << scale;
    return ::testing::AssertionFailure() << s.str();
  };
  if (std::isnan(want)) {
    if (!std::isnan(in_loop) || !std::isnan(scaled)) return fail();
    return ::testing::AssertionSuccess();
  }
  // Finite and infinite codes: bit-exact in the loop (value x 2^-gap where the fold is left
  // out), sign of zero included, and exact after the float32 rescale.
  const float loop_want = static_cast<float>(want / B::kScaleFold);
  const uint16_t bits_want =
      Q == DType::kF16 ? core::float_to_half_bits(loop_want) : core::float_to_bf16_bits(loop_want);
  if (loop_bits != bits_want) return fail();
  if (scaled != static_cast<float>(want) * scale) return fail();
  return ::testing::AssertionSuccess();
}

template <DType Q, DType KV>
void check_every_code() {
  using B = Fp8Bits<Q, KV>;
  // Words of four codes as ldmatrix hands them; Fp8Convert::split places x << 8 (bytes 0, 2)
  // and x (bytes 1, 3), so each placement also sees a neighbour code in its low bytes.
  for (int b0 = 0; b0 < 256; ++b0)
    for (int b1 = 0; b1 < 256; ++b1) {
      const uint8_t b2 = static_cast<uint8_t>(b1 ^ 0x5A), b3 = static_cast<uint8_t>(b0 * 37 + 11);
      const uint32_t x = uint32_t{static_cast<uint8_t>(b0)} | uint32_t{static_cast<uint8_t>(b1)} << 8 |
                         uint32_t{b2} << 16 | uint32_t{b3} << 24;
      const uint32_t even = B::place(x << 8), odd = B::place(x);
      const uint8_t codes[4] = {static_cast<uint8_t>(b0), b2, static_cast<uint8_t>(b1), b3};
      const uint32_t words[2] = {even, odd};
      for (int w = 0; w < 2; ++w)
        for (int half = 0; half < 2; ++half)
          for (float scale : {1.0f, 0.37f, 3.1f})
            ASSERT_TRUE((converts<Q, KV>(codes[2 * w + half], loop_half<Q, KV>(words[w], half), scale)));
    }
}

TEST(Sm80Fp8Bits, E4M3ToF16EveryCode) { check_every_code<DType::kF16, DType::kE4M3>(); }
TEST(Sm80Fp8Bits, E4M3ToBF16EveryCode) { check_every_code<DType::kBF16, DType::kE4M3>(); }
TEST(Sm80Fp8Bits, E5M2ToF16EveryCode) { check_every_code<DType::kF16, DType::kE5M2>(); }
TEST(Sm80Fp8Bits, E5M2ToBF16EveryCode) { check_every_code<DType::kBF16, DType::kE5M2>(); }

// The codes the bit move alone got wrong (issue 65), by name: each must come out non-finite.
TEST(Sm80Fp8Bits, NaNAndInfLandmarks) {
  EXPECT_TRUE(std::isnan(half_value(DType::kF16, Fp8Bits<DType::kF16, DType::kE4M3>::place(0x7F00FF00u) & 0xFFFF)));
  EXPECT_TRUE(std::isnan(half_value(DType::kF16, Fp8Bits<DType::kF16, DType::kE4M3>::place(0x7F00FF00u) >> 16)));
  EXPECT_TRUE(std::isnan(half_value(DType::kBF16, Fp8Bits<DType::kBF16, DType::kE4M3>::place(0xFF00u) & 0xFFFF)));
  using E5M2ToBF16 = Fp8Bits<DType::kBF16, DType::kE5M2>;
  using E5M2ToF16 = Fp8Bits<DType::kF16, DType::kE5M2>;
  EXPECT_EQ(E5M2ToBF16::place(0xFC007C00u), 0xFF807F80u);  // -Inf, +Inf
  EXPECT_EQ(E5M2ToF16::place(0xFC007C00u), 0xFC007C00u);
  for (uint32_t nan : {0x7Du, 0x7Eu, 0x7Fu, 0xFDu})
    EXPECT_TRUE(std::isnan(half_value(DType::kBF16, Fp8Bits<DType::kBF16, DType::kE5M2>::place(nan << 8) & 0xFFFF)))
        << std::hex << nan;
}

// halves_with_all_bits against its definition, for every 16-bit half beside a fixed other.
TEST(Sm80Fp8Bits, HalvesWithAllBits) {
  for (uint32_t field : {0x7F00u, 0x7C00u})
    for (uint32_t h = 0; h < 0x10000; ++h)
      for (uint32_t other : {0x0000u, 0xFFFFu, 0x7F7Fu}) {
        const uint32_t want_h = (h & field) == field ? 0x7FFFu : 0u;
        const uint32_t want_o = (other & field) == field ? 0x7FFFu : 0u;
        ASSERT_EQ(halves_with_all_bits(h | other << 16, field), want_h | want_o << 16) << std::hex << h;
        ASSERT_EQ(halves_with_all_bits(other | h << 16, field), want_o | want_h << 16) << std::hex << h;
      }
}

}  // namespace
}  // namespace flashband::sm80
