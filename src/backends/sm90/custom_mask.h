// Packed custom masks (SPEC.md "Custom masks") in the narrow tiles' runtime-mask kernels
// (compiles_custom_mask): a consumer thread reads the bits of its two rows over the S
// tile's keys straight from global memory (a request's mask is small and stays in L2),
// shifted so that bit c of its words is the row's bit at the thread's column 0 plus c,
// before the soft cap (whose work hides the loads). Each warp then classifies the tile:
// all visible (no per-element work), all hidden (every logit -inf) or mixed (a select per
// logit). The window, the causal bound and j < kv_len stay with apply_mask (consumer.h), which
// runs first, so a tile is full only where both agree.
#pragma once
#include <cstdint>

#include <cute/tensor.hpp>

#include "backends/sm90/fragment.h"
#include "backends/sm90/kernel_params.h"
#include "core/state.h"

namespace flashband::sm90 {

// A thread's columns reach acc_col_offset(kBlockN / 4 - 1) = kBlockN - 7 past its first one.
template <int kBlockN>
constexpr int kMaskWords = (kBlockN - 7) / 32 + 1;

// Bit c is set where the thread holds column 32 k + c past its first one: two adjacent
// columns per group of 8 (fragment.h acc_col_offset), up to the tile's end.
template <int kBlockN>
__host__ __device__ constexpr uint32_t thread_columns_word(int k) {
  const int left = kBlockN - 32 * k;  // >= 7 for k < kMaskWords
  return left >= 32 ? 0x03030303u : 0x03030303u & ((1u << left) - 1u);
}
// thread_columns_word against acc_col_offset, column by column.
template <int kBlockN>
constexpr bool thread_columns_match_layout() {
  for (int k = 0; k < kMaskWords<kBlockN>; ++k) {
    uint32_t m = 0;
    for (int j = 0; j < kBlockN / 4; ++j)
      if (acc_col_offset(j) / 32 == k) m |= 1u << (acc_col_offset(j) % 32);
    if (m != thread_columns_word<kBlockN>(k)) return false;
  }
  return true;
}

// Bit of a request's (row 0, key 0), counted from the 4-byte word at or below the tensor's
// start (mask_words), for the unit whose item is `item` (p.mask_offsets: one request
// without a list has offset 0).
__device__ __forceinline__ int64_t mask_row0_bit(const KernelParams& p, int item) {
  const int64_t lead = static_cast<int64_t>(reinterpret_cast<uintptr_t>(p.custom_mask) & 3);
  return (lead + (p.mask_offsets ? p.mask_offsets[item] : 0)) * 8;
}

__device__ __forceinline__ const uint32_t* mask_words(const KernelParams& p) {
  return reinterpret_cast<const uint32_t*>(reinterpret_cast<uintptr_t>(p.custom_mask) & ~uintptr_t{3});
}

// Words w0 .. w0 + kLoad - 1 of mask_words. Words that straddle the tensor's first or last
// byte are put together from its own bytes (the rest read as 0), so no load leaves it.
template <int kLoad>
__device__ __forceinline__ void load_mask_words(const KernelParams& p, int64_t w0, uint32_t (&raw)[kLoad]) {
  const uint32_t* words = mask_words(p);
  const int64_t begin = static_cast<int64_t>(reinterpret_cast<uintptr_t>(p.custom_mask) & 3);
  const int64_t end = begin + p.mask_bytes;
  if (w0 * 4 >= begin && (w0 + kLoad) * 4 <= end) {
#pragma unroll
    for (int k = 0; k < kLoad; ++k) raw[k] = __ldg(words + w0 + k);
    return;
  }
  const unsigned char* bytes = reinterpret_cast<const unsigned char*>(words);
#pragma unroll
  for (int k = 0; k < kLoad; ++k) {
    raw[k] = 0;
    for (int i = 0; i < 4; ++i) {
      const int64_t b = (w0 + k) * 4 + i;
      if (b >= begin && b < end) raw[k] |= static_cast<uint32_t>(__ldg(bytes + b)) << (8 * i);
    }
  }
}

// One S tile's bits for a thread's rows: bits[r][k] bit c = mask bit of (row r, the thread's
// first key + 32 k + c). Rows past qo_len read nothing and count as all visible (their
// output is never written).
template <int kRows, int kBlockN>
struct TileMaskBits {
  uint32_t bits[kRows][kMaskWords<kBlockN>];
};

// c: the (rows, cols) coordinate view of S; row0_bit: mask_row0_bit of the unit; tile_row0 /
// key0: request row and key of the tile's origin.
template <int kRows, int kBlockN, class TensorC>
__device__ __forceinline__ TileMaskBits<kRows, kBlockN> tile_mask_bits(const KernelParams& p, const TensorC& c,
                                                                       int64_t row0_bit, int qo_len, int kv_len,
                                                                       int tile_row0, int key0) {
  constexpr int kWords = kMaskWords<kBlockN>;
  TileMaskBits<kRows, kBlockN> t;
  const int col0 = cute::get<1>(c(0, 0));
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const int row = tile_row0 + cute::get<0>(c(r, 0));
    if (row >= qo_len) {
#pragma unroll
      for (int k = 0; k < kWords; ++k) t.bits[r][k] = ~0u;
      continue;
    }
    // Row i's bits start at bit i * kv_len: any alignment, so shift the words into place.
    const int64_t bit = row0_bit + static_cast<int64_t>(row) * kv_len + key0 + col0;
    uint32_t raw[kWords + 1];
    load_mask_words(p, bit >> 5, raw);
    const int shift = static_cast<int>(bit & 31);
#pragma unroll
    for (int k = 0; k < kWords; ++k) t.bits[r][k] = __funnelshift_r(raw[k], raw[k + 1], shift);
  }
  return t;
}

// Sets to -inf the logits of s (rows, cols) whose mask bit is 0. Warp-uniform shortcuts: a
// warp whose pairs are all visible does nothing, one whose pairs are all hidden writes -inf
// without reading its bits.
template <int kRows, int kBlockN, class TensorS>
__device__ __forceinline__ void apply_mask_bits(TensorS& s, const TileMaskBits<kRows, kBlockN>& t) {
  static_assert(thread_columns_match_layout<kBlockN>());
  static_assert(decltype(cute::size<1>(s))::value == kBlockN / 4, "a thread holds kBlockN / 4 columns of a row");
  bool all = true, none = true;
#pragma unroll
  for (int r = 0; r < kRows; ++r)
#pragma unroll
    for (int k = 0; k < kMaskWords<kBlockN>; ++k) {
      const uint32_t mine = thread_columns_word<kBlockN>(k);
      all = all && (t.bits[r][k] & mine) == mine;
      none = none && (t.bits[r][k] & mine) == 0;
    }
  if (__all_sync(0xffffffffu, all)) return;
  const bool warp_none = __all_sync(0xffffffffu, none);
#pragma unroll
  for (int r = 0; r < cute::size<0>(s); ++r)
#pragma unroll
    for (int j = 0; j < cute::size<1>(s); ++j) {
      const int off = acc_col_offset(j);  // a constant once unrolled
      if (warp_none || !((t.bits[r][off / 32] >> (off % 32)) & 1u)) s(r, j) = core::neg_inf();
    }
}

}  // namespace flashband::sm90
