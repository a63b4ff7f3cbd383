// Shared-memory tiles of [rows][D] 16-bit elements with 16-byte chunks XOR-swizzled by the
// row (chunk c of row r lives at c ^ (r % 8)). Eight consecutive rows of one logical chunk
// then land in eight different 16-byte bank groups, so ldmatrix (8 row addresses per
// phase) and the cp.async writes (8 chunks of a row per phase) are conflict-free without
// padding.
#pragma once
#include <cstdint>

namespace flashband::sm80 {

template <int kHeadDim>
struct SwizzledRows {
  static constexpr int kChunks = kHeadDim / 8;  // 16-byte chunks per row
  static constexpr int kRowBytes = kHeadDim * 2;
  static_assert(kChunks % 8 == 0, "rows must span whole 128-byte groups");
  // step_offset's XOR must stay clear of row * kRowBytes (D = 192 would break it).
  static_assert((kRowBytes & (kRowBytes - 1)) == 0, "row bytes must be a power of two");

  __device__ __forceinline__ static uint32_t offset(int row, int chunk) {
    return static_cast<uint32_t>(row * kRowBytes + ((chunk ^ (row & 7)) << 4));
  }

  // offset(row, 2 * step + h) for h in {0, 1}, from off0 = offset(row, h): the chunk is
  // (2 step) ^ h, so its swizzled index is (2 step) ^ (h ^ (row & 7)), and the XOR with
  // step << 5 stays below kRowBytes, clear of the row part. One LOP3 per use instead of a
  // register per step held through the loop.
  __device__ __forceinline__ static uint32_t step_offset(uint32_t off0, int step) {
    return off0 ^ static_cast<uint32_t>(step << 5);
  }
};

}  // namespace flashband::sm80
