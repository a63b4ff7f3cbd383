// fp8 (e4m3, e5m2) -> fp16 / bf16 bit placement, two values per 32-bit word, host and device.
// The kernels run it on every K and V fragment (fp8_fragments.h); the host unit test runs the
// same code on all 256 codes (tests/unit/sm80_fp8_bits_test.cpp), so what is verified is what
// the GPU executes. Integer operations only: no CUDA header, no intrinsic.
//
// Moving exponent and mantissa into place gives the value times 2^-(bias gap); the caller
// multiplies that back (bf16) or folds it into the scales (fp16). Moving bits alone would turn
// the codes without a value into finite numbers (e4m3 NaN -> 480, e5m2 Inf/NaN -> 65536 ..
// 114688 in bf16), so place() also writes them as NaN / Inf of the target format.
#pragma once
#include <cstdint>

#include "core/hd.h"
#include "flashband/tensor.h"

namespace flashband::sm80 {

// Exponent bits and bias of the formats, by DType (the device types map onto these).
template <DType F>
struct FloatBits;
template <>
struct FloatBits<DType::kE4M3> {
  static constexpr int kExpBits = 4, kBias = 7;
};
template <>
struct FloatBits<DType::kE5M2> {
  static constexpr int kExpBits = 5, kBias = 15;
};
template <>
struct FloatBits<DType::kF16> {
  static constexpr int kExpBits = 5, kBias = 15;
};
template <>
struct FloatBits<DType::kBF16> {
  static constexpr int kExpBits = 8, kBias = 127;
};

constexpr float pow2(int e) { return e == 0 ? 1.0f : e > 0 ? 2.0f * pow2(e - 1) : 0.5f * pow2(e + 1); }

// Per 16-bit half of x: 0x7FFF (every bit but the sign) where (half & field) == field, else 0.
// field: contiguous bits ending at bit 14 (0x7F00, 0x7C00). Adding its lowest bit carries into
// bit 15 exactly when every bit of it is set, and never into the other half; bit 15 minus
// bit 0 is 0x7FFF.
FB_HD constexpr uint32_t halves_with_all_bits(uint32_t x, uint32_t field) {
  const uint32_t field2 = field * 0x10001u;
  const uint32_t low_bit = (field & (~field + 1u)) * 0x10001u;
  const uint32_t top = ((x & field2) + low_bit) & 0x80008000u;
  return top - (top >> 15);
}

// fp8 format KV -> 16-bit format Q.
template <DType Q, DType KV>
struct Fp8Bits {
  static constexpr int kShift = FloatBits<Q>::kExpBits - FloatBits<KV>::kExpBits;
  static constexpr int kBiasGap = FloatBits<Q>::kBias - FloatBits<KV>::kBias;  // the bits give value * 2^-gap
  static constexpr bool kFoldIntoScales = Q == DType::kF16;
  // What the kernel multiplies k_scale and v_scale by: 2^gap where the loop leaves it out.
  static constexpr float kScaleFold = kFoldIntoScales ? pow2(kBiasGap) : 1.0f;
  // What place()'s output is multiplied by in the loop (bf16: HMUL2, exact).
  static constexpr float kUnfold = kFoldIntoScales ? 1.0f : pow2(kBiasGap);

  // r: two fp8 values in the high bytes of its 16-bit halves (the low bytes are ignored) ->
  // two Q values, times 2^-gap where finite.
  FB_HD static constexpr uint32_t place(uint32_t r) {
    constexpr uint32_t kSign = 0x80008000u;
    constexpr uint32_t kMagnitude = (0x7F00u >> kShift) * 0x10001u;
    const uint32_t out = (r & kSign) | ((r >> kShift) & kMagnitude);
    if constexpr (KV == DType::kE4M3) {
      // S.1111.111 is NaN (e4m3 has no Inf): every magnitude bit set is NaN in fp16 and bf16,
      // and stays NaN through the bf16 multiply and the float32 scales.
      return out | halves_with_all_bits(r, 0x7F00u);
    } else if constexpr (Q == DType::kBF16) {
      // S.11111.mm is Inf (mm = 0) or NaN: bf16's exponent all ones over the moved mantissa
      // keeps the distinction, and Inf times the unfold factor is Inf.
      return out | (halves_with_all_bits(r, 0x7C00u) & 0x7F807F80u);
    } else {
      return out;  // e5m2 -> fp16: same exponent width and bias, Inf and NaN land as such
    }
  }
};

}  // namespace flashband::sm80
