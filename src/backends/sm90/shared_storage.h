// Shared memory of one CTA: the Q tile, a ring of K and V stages, and the mbarriers that
// hand tiles between the producer warpgroup and the consumer warpgroups.
//
//   q_full[b]   producer -> consumers: Q of a work unit has landed in buffer b (units take
//               the kQStages buffers in turn)
//   q_empty[b]  consumers -> producer: every consumer warp has issued its last QK^T of the
//               unit in buffer b, so a later unit's Q may overwrite it
//   k_full[s]   producer -> consumers: stage s of K has landed (TMA bytes, or cp.async
//               arrivals of all 128 producer threads)
//   k_empty[s]  consumers -> producer: every consumer warp is done reading stage s of K
//   v_full[s], v_empty[s]: the same for V
// Named barrier 1 (128 threads) orders the paged producer's row table (producer.h); 2 and up
// (one per consumer warpgroup) are the consumers' ping-pong (consumer.h).
#pragma once
#include <cstdint>

#include "backends/sm90/tile_shapes.h"

namespace flashband::sm90 {

template <class Traits>
struct SharedStorage {
  using Element = typename Traits::Element;
  // 1024-byte alignment: the 128-byte swizzle pattern repeats every 8 rows of 128 bytes and
  // is computed from address bits, so every tile must start on such a boundary.
  alignas(1024) Element q[Traits::kQStages * Traits::kQElems];
  alignas(1024) Element k[Traits::kStages * Traits::kTileElems];
  alignas(1024) Element v[Traits::kStages * Traits::kTileElems];
  alignas(8) uint64_t q_full[Traits::kQStages];
  uint64_t q_empty[Traits::kQStages];
  uint64_t k_full[Traits::kStages];
  uint64_t k_empty[Traits::kStages];
  uint64_t v_full[Traits::kStages];
  uint64_t v_empty[Traits::kStages];
  // Paged K/V only: global addresses (K, V) of each row of a KV tile, 0 for rows past
  // kv_len (and tiles before the unit's first); the tables of three tiles rotate, or of
  // two where shared memory is short (producer.h: D = 256's 80-key tile, whose Q, K and V
  // take 224 KB). Wide kernels of head dims that never run paged K/V (kWidePaged: none
  // today) keep one row; the others' contiguous wide kernels carry the tables unused (one
  // CTA per SM either way: D = 128's 176-key kernel 214016 -> 222208 bytes).
  // fp8 K/V is gathered only: a TMA box would land fp8 bytes where wgmma reads 16-bit ones.
  static constexpr bool kGatherOnly = kPagedGatherOnly<Traits::kHeadDim, Traits::kWide> || Traits::kFp8KV;
  static constexpr int kTileBytes =
      (Traits::kQStages * Traits::kQElems + 2 * Traits::kStages * Traits::kTileElems) * sizeof(Element);
  // 1 KB for the barriers and the one-row page table of a gather-only kernel.
  static constexpr bool kThreeTablesFit = kTileBytes + 3 * Traits::kBlockN * sizeof(ulonglong2) + 1024 <= 227 * 1024;
  static constexpr int kRowTables = kGatherOnly && !kThreeTablesFit ? 2 : 3;
  static constexpr int kRowTableRows = Traits::kWide && !kWidePaged<Traits::kHeadDim> ? 1 : Traits::kBlockN;
  ulonglong2 kv_rows[kRowTables][kRowTableRows];
  // The page of each page block of a tile (TMA page loads; none in gather-only kernels).
  static constexpr int kPageTableRows = kGatherOnly ? 1 : kRowTableRows;
  int kv_pages[kRowTables][kPageTableRows];
};

// Dynamic shared memory requested at launch. The kernel declares its dynamic shared memory
// 1024-byte aligned and checks it (prefill_kernel.cuh): D = 256's paged 80-key tile fills
// the 227 KB exactly, with no room for slack to align the start by hand.
template <class Traits>
constexpr int shared_storage_bytes() {
  constexpr int bytes = static_cast<int>(sizeof(SharedStorage<Traits>));
  static_assert(bytes <= 227 * 1024, "more shared memory than one Hopper CTA may have");
  return bytes;
}

}  // namespace flashband::sm90
