// Shared-memory tiles of rows of kRowBytes bytes (16-bit rows of D elements, or fp8 K/V rows
// of D bytes), in 16-byte chunks XOR-swizzled within each 128-byte line. Eight consecutive
// rows of one logical chunk then land in eight different 16-byte bank groups, so ldmatrix
// (8 row addresses per phase) and the cp.async writes (8 chunks per phase) are
// conflict-free without padding.
#pragma once
#include <cstdint>

namespace flashband::sm80 {

template <int kRowBytes_>
struct SwizzledBytes {
  static constexpr int kRowBytes = kRowBytes_;
  static constexpr int kChunks = kRowBytes / 16;  // 16-byte chunks per row
  static_assert(kRowBytes == 64 || kRowBytes % 128 == 0, "rows must pair up into, or span whole, 128-byte lines");
  // step_offset's XOR must stay clear of the row part (D = 192 would break it).
  static_assert((kRowBytes & (kRowBytes - 1)) == 0, "row bytes must be a power of two");

  // Rows of 128 bytes or more: chunk c of row r lives at c ^ (r % 8). 64-byte rows (fp8,
  // D = 64) share a line two by two: line L = r / 2 holds slots 4 (r % 2) + c, swizzled by
  // L % 8, so rows r .. r + 7 of one chunk still cover all eight bank groups.
  __device__ __forceinline__ static uint32_t offset(int row, int chunk) {
    if constexpr (kRowBytes >= 128) {
      return static_cast<uint32_t>(row * kRowBytes + ((chunk ^ (row & 7)) << 4));
    } else {
      const int line = row >> 1;
      return static_cast<uint32_t>(line * 128 + (((((row & 1) << 2) | chunk) ^ (line & 7)) << 4));
    }
  }

  // offset(row, 2 * step + h) for h in {0, 1}, from off0 = offset(row, h): the chunk is
  // (2 step) ^ h, so its swizzled index is (2 step) ^ (h ^ swizzle), and the XOR with
  // step << 5 stays inside the row (64-byte rows: step < 2, clear of the row-parity bit).
  // One LOP3 per use instead of a register per step held through the loop.
  __device__ __forceinline__ static uint32_t step_offset(uint32_t off0, int step) {
    return off0 ^ static_cast<uint32_t>(step << 5);
  }
  // offset(row, chunk) from offset(row, 0), by the same argument.
  __device__ __forceinline__ static uint32_t chunk_offset(uint32_t off0, int chunk) {
    return off0 ^ static_cast<uint32_t>(chunk << 4);
  }
};

// Rows of D 16-bit elements (Q, O staging, 16-bit K and V).
template <int kHeadDim>
using SwizzledRows = SwizzledBytes<kHeadDim * 2>;

}  // namespace flashband::sm80
