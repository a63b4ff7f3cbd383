// One gathered chunk of fp8 K/V (8 codes, 8 bytes) -> the 16 bytes of q's type that the
// 16-bit producer would have copied (8 elements in the same order), for the paged producer's
// fp8 path (producer.h gather_tile_fp8). The bits are placed by sm80's fp8_bits.h (NaN and Inf
// codes stay NaN and Inf), so both backends run one conversion, whose host test covers all
// 256 codes; place_chunk itself runs on the host in tests/unit/sm90_fp8_chunk_test.cpp.
#pragma once
#include <cstdint>

#include "backends/sm80/fp8_bits.h"
#include "core/hd.h"
#include "flashband/tensor.h"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#endif

namespace flashband::sm90 {

// Codes 0 and 1 (bytes 0 and 1 of x) into the high bytes of a word's halves, the input
// Fp8Bits::place reads (it ignores the low bytes); codes 2 and 3 likewise.
FB_HD constexpr uint32_t codes01_high(uint32_t x) { return ((x & 0xFFu) << 8) | ((x & 0xFF00u) << 16); }
FB_HD constexpr uint32_t codes23_high(uint32_t x) { return (x & 0xFF000000u) | ((x >> 8) & 0xFF00u); }

// The 8 codes of (lo, hi), first code in lo's low byte -> 4 words of Q pairs (element 2i in
// word i's low half), each value times 2^-gap where finite (Fp8Bits: fp16 folds the factor
// into the scales, bf16 multiplies it back in to_q_chunk).
template <DType Q, DType KV>
FB_HD constexpr void place_chunk(uint32_t lo, uint32_t hi, uint32_t (&out)[4]) {
  using Bits = sm80::Fp8Bits<Q, KV>;
  out[0] = Bits::place(codes01_high(lo));
  out[1] = Bits::place(codes23_high(lo));
  out[2] = Bits::place(codes01_high(hi));
  out[3] = Bits::place(codes23_high(hi));
}

#if defined(__CUDACC__)
// place_chunk, then bf16's power of two multiplied back (exact: HMUL2 by 2^gap).
template <DType Q, DType KV>
__device__ __forceinline__ uint4 to_q_chunk(uint2 codes) {
  using Bits = sm80::Fp8Bits<Q, KV>;
  uint32_t w[4];
  place_chunk<Q, KV>(codes.x, codes.y, w);
  if constexpr (!Bits::kFoldIntoScales) {
    const __nv_bfloat162 unfold = __float2bfloat162_rn(Bits::kUnfold);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const __nv_bfloat162 x = __hmul2(*reinterpret_cast<const __nv_bfloat162*>(&w[i]), unfold);
      w[i] = *reinterpret_cast<const uint32_t*>(&x);
    }
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}
#endif

}  // namespace flashband::sm90
