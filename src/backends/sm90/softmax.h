// Online softmax over the rows a consumer thread holds, in base 2 (SPEC.md, core/state.h).
// Logits arrive raw (after the soft cap, before scaling): the row's reference max is kept raw,
// and exp2(s * scale_log2 - max * scale_log2) is one FFMA and one ex2 per element. Rows that
// have seen only -inf keep max = -inf (a (-inf) - (-inf) in the move test is NaN, which
// compares false, so it keeps the reference), so fully masked rows end with sum 0, output 0
// and LSE -inf.
#pragma once
#include <cute/tensor.hpp>

#include "backends/sm90/ptx.h"
#include "core/state.h"

namespace flashband::sm90 {

// tanh x = 1 - 2 / (2^(2x log2 e) + 1). tanh.approx.f32 is faster but its 2^-11 relative
// error, times a soft cap of 30..50, exceeds the fp16 LSE tolerance; this form stays near
// 1e-7 absolute and saturates correctly (2^large = inf -> 1, 2^-large = 0 -> -1).
__device__ __forceinline__ float tanh_accurate(float x) {
  const float e = ptx::ex2(x * 2.8853900817779268f);
  return 1.0f - __fdividef(2.0f, e + 1.0f);
}

// Each row of a 64-row wgmma accumulator is spread over the 4 lanes of a quad.
__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

struct RowFinal {
  float scale;  // multiplies the accumulator; 0 for a row that saw no key
  float lse;    // base 2; -inf for a row that saw no key
};

// kLazy: the reference moves only on jumps beyond core::kMaxSlack and update() reports
// whether any row of the warp moved; otherwise it follows every new maximum (always "moved").
template <int kRows, bool kLazy>
struct RowSoftmax {
  float row_max[kRows];  // raw logits; -inf until a visible key is seen
  float row_sum[kRows];  // this thread's share of the sum of weights

  __device__ __forceinline__ void reset() {
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      row_max[r] = core::neg_inf();
      row_sum[r] = 0.0f;
    }
  }

  // s: (rows, cols) view of one S tile, capped and masked; replaced by the weights
  // exp2(s * scale_log2 - max * scale_log2), where max is the row's reference, which (kLazy)
  // moves only when the tile's maximum exceeds it by more than core::kMaxSlack (base 2). Returns
  // in `correction` the factor each row of the output accumulator must be multiplied by to
  // move to the new references (rescale()), and whether any row of the warp moved: when
  // none did, every factor is 1 and the rescale can be skipped (a warp-uniform answer).
  template <class TensorS>
  __device__ __forceinline__ bool update(TensorS& s, float scale_log2, float (&correction)[kRows]) {
    static_assert(decltype(cute::size<0>(s))::value == kRows);
    constexpr int kCols = decltype(cute::size<1>(s))::value;
    static_assert(kCols >= 4);
    // Max and sum as kLanes independent chains per row (then a short tree): one sequential
    // chain of kCols dependent FMNMX / FADD is latency-bound and sits on the critical path
    // between the Q K^T wait and the exponentials.
    constexpr int kLanes = kCols % 4 == 0 ? 4 : (kCols % 2 == 0 ? 2 : 1);
    float m_part[kRows][kLanes];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
#pragma unroll
      for (int l = 0; l < kLanes; ++l) m_part[r][l] = s(r, l);
#pragma unroll
      for (int c = kLanes; c < kCols; ++c) m_part[r][c % kLanes] = fmaxf(m_part[r][c % kLanes], s(r, c));
    }
    bool moved = false;
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      float m = kLazy ? m_part[r][0] : row_max[r];
#pragma unroll
      for (int l = kLazy ? 1 : 0; l < kLanes; ++l) m = fmaxf(m, m_part[r][l]);
      m = quad_max(m);
      if constexpr (kLazy) {
        // Reference -inf with a finite tile max: +inf > slack, so it moves and the factor is
        // exp2(-inf) = 0 (the accumulator is 0 anyway). Tile max -inf (nothing visible): -inf
        // or NaN, never > slack (IEEE comparison; no fast-math flags), so the reference stays.
        correction[r] = 1.0f;
        if ((m - row_max[r]) * scale_log2 > core::kMaxSlack) {
          correction[r] = ptx::ex2((row_max[r] - m) * scale_log2);
          row_max[r] = m;
          moved = true;
        }
        m = row_max[r];
      } else {
        // Previous max -inf (nothing seen yet): exp2(-inf) = 0, and the accumulator is 0.
        correction[r] = m == row_max[r] ? 1.0f : ptx::ex2((row_max[r] - m) * scale_log2);
        row_max[r] = m;
      }
      const float m_scaled = m == core::neg_inf() ? 0.0f : m * scale_log2;
      float sum[kLanes];
#pragma unroll
      for (int l = 0; l < kLanes; ++l) sum[l] = 0.0f;
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        const float p = ptx::ex2(fmaf(s(r, c), scale_log2, -m_scaled));
        s(r, c) = p;
        sum[c % kLanes] += p;
      }
#pragma unroll
      for (int l = 1; l < kLanes; ++l) sum[0] += sum[l];
      row_sum[r] = row_sum[r] * correction[r] + sum[0];
    }
    if constexpr (kLazy) return __any_sync(0xffffffffu, moved);
    return true;
  }

  // o: (rows, cols) view of the output accumulator.
  template <class TensorO>
  __device__ __forceinline__ static void rescale(TensorO& o, const float (&correction)[kRows]) {
    static_assert(decltype(cute::size<0>(o))::value == kRows);
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
#pragma unroll
      for (int c = 0; c < cute::size<1>(o); ++c) o(r, c) *= correction[r];
    }
  }

  using Final = RowFinal;
  // Reduces the row sums over the quad; every lane must call it. A row that saw a key has a
  // sum of about 1 or more (its reference's own weight is ex2 of a rounding remainder), far
  // from the denormals the approximate forms flush; they run at every unit boundary, where
  // both warpgroups issue at once.
  __device__ __forceinline__ Final finish(int r, float scale_log2) const {
    const float total = quad_sum(row_sum[r]);
    // Only a zero sum is the empty row: a NaN one (NaN or +inf in K) stays NaN in O and the
    // LSE, as core/state.h's (rcp and lg2 return NaN for NaN), so a split never hides it.
    if (total == 0.0f) return {0.0f, core::neg_inf()};
    return {ptx::rcp(total), row_max[r] * scale_log2 + ptx::lg2(total)};
  }
};

}  // namespace flashband::sm90
