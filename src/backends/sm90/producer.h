// The producer warpgroup: loads Q once per work unit and streams the unit's K/V tiles, last
// tile first, into the shared-memory ring. Two flavours:
// - produce_tma: contiguous K/V; one thread issues TMA box loads (64 columns each).
// - produce_paged: paged K/V; all 128 threads gather rows through the page table with
//   16-byte cp.async (any page size), zero-filling rows at and past kv_len. Q still uses TMA.
#pragma once
#include "backends/sm90/kernel_params.h"
#include "backends/sm90/kernel_traits.h"
#include "backends/sm90/ptx.h"
#include "backends/sm90/schedule.h"
#include "backends/sm90/shared_storage.h"

namespace flashband::sm90 {

// Position in the K/V ring: stage index and the parity of its current round.
template <int kStages>
struct RingPosition {
  int stage = 0;
  uint32_t phase = 0;
  __device__ __forceinline__ void advance() {
    if (++stage == kStages) {
      stage = 0;
      phase ^= 1u;
    }
  }
};

// Q buffer and barrier parity of the q_round-th non-empty unit (producer and consumers count
// the same units).
template <class Traits>
struct QSlot {
  int buffer;
  uint32_t parity;
  __device__ __forceinline__ explicit QSlot(uint32_t q_round)
      : buffer(static_cast<int>(q_round % Traits::kQStages)), parity((q_round / Traits::kQStages) & 1u) {}
};

// Issues the TMA loads of Q for unit `t` once the consumers have released its buffer.
template <class Traits>
__device__ __forceinline__ void load_q(const KernelParams& p, SharedStorage<Traits>& s, const Unit& t,
                                       uint32_t q_round) {
  const QSlot<Traits> q(q_round);
  ptx::mbar_wait(&s.q_empty[q.buffer], q.parity ^ 1u);
  ptx::mbar_arrive_expect_tx(&s.q_full[q.buffer], Traits::kQBytes);
  const int row = t.item.qo_start + t.item.m_block * Traits::kBlockM;
  typename Traits::Element* q_tile = s.q + q.buffer * Traits::kQElems;
#pragma unroll
  for (int b = 0; b < Traits::kHeadDim / 64; ++b)
    ptx::tma_load_3d(&p.tma_q, &s.q_full[q.buffer], q_tile + b * Traits::kBlockM * 64, b * 64, row, t.head,
                     ptx::kEvictFirst);
}

template <class Traits>
__device__ void produce_tma(const KernelParams& p, SharedStorage<Traits>& s) {
  constexpr int kBlockN = Traits::kBlockN;
  ptx::tma_prefetch_descriptor(&p.tma_q);
  RingPosition<Traits::kStages> ring;
  uint32_t q_round = 0;
  for (int round = 0, u = unit_of_round(0); u < p.num_units; u = unit_of_round(++round)) {
    const Unit t = load_unit<Traits::kBlockM, kBlockN>(p, u);
    if (t.empty()) continue;
    load_q<Traits>(p, s, t, q_round++);
    const int kv_head = t.head / p.group_size;
    for (int n = t.item.n_end - 1; n >= t.item.n_begin; --n, ring.advance()) {
      const int row = t.item.kv_start + n * kBlockN;
      typename Traits::Element* k_tile = s.k + ring.stage * Traits::kTileElems;
      typename Traits::Element* v_tile = s.v + ring.stage * Traits::kTileElems;
      // K/V tiles are re-read by every query tile of the head: keep them in L2.
      ptx::mbar_wait(&s.k_empty[ring.stage], ring.phase ^ 1u);
      ptx::mbar_arrive_expect_tx(&s.k_full[ring.stage], Traits::kKVBytes);
#pragma unroll
      for (int b = 0; b < Traits::kHeadDim / 64; ++b)
        ptx::tma_load_3d(&p.tma_k, &s.k_full[ring.stage], k_tile + b * kBlockN * 64, b * 64, row, kv_head,
                         ptx::kEvictLast);
      ptx::mbar_wait(&s.v_empty[ring.stage], ring.phase ^ 1u);
      ptx::mbar_arrive_expect_tx(&s.v_full[ring.stage], Traits::kKVBytes);
#pragma unroll
      for (int b = 0; b < Traits::kHeadDim / 64; ++b)
        ptx::tma_load_3d(&p.tma_v, &s.v_full[ring.stage], v_tile + b * kBlockN * 64, b * 64, row, kv_head,
                         ptx::kEvictLast);
    }
  }
}

// The page and slot of row `tid` of KV tile `n`; page -1 for rows at or past kv_len. Each
// producer thread resolves one row into a shared table, so the gathers read them with one
// shared load instead of every thread of a row walking the page table.
template <class Traits>
__device__ __forceinline__ int2 lookup_row(const KernelParams& p, const WorkItem& it, int n, int tid) {
  static_assert(Traits::kBlockN <= 128, "one producer thread per row of a KV tile");
  const int token = n * Traits::kBlockN + tid;
  if (tid >= Traits::kBlockN || n < it.n_begin || token >= it.kv_len) return make_int2(-1, 0);
  const int entry = p.page_shift >= 0 ? token >> p.page_shift : token / p.page_size;
  return make_int2(p.page_indices[it.kv_start + entry], token - entry * p.page_size);
}

// Copies one KV tile of one head from its pages into a swizzled stage buffer, 16 bytes per
// cp.async; rows without a page become zeros (a zero V row keeps 0 * V finite where P is 0).
// `base` already points at this head and this thread's 16-byte column chunk.
template <class Traits>
__device__ __forceinline__ void gather_tile(const int2* rows, const typename Traits::Element* base,
                                           int64_t stride_page, int64_t stride_n, typename Traits::Element* tile,
                                           int tid) {
  constexpr int kChunksPerRow = Traits::kHeadDim / Traits::kChunkCols;
  constexpr int kRowsPerPass = 128 / kChunksPerRow;
  static_assert(128 % kChunksPerRow == 0 && Traits::kBlockN % kRowsPerPass == 0);
  const int chunk = tid % kChunksPerRow;
#pragma unroll 1  // more in flight spills the producer's 40 registers
  for (int r = tid / kChunksPerRow; r < Traits::kBlockN; r += kRowsPerPass) {
    const int2 row = rows[r];
    const bool valid = row.x >= 0;
    const typename Traits::Element* src = valid ? base + row.x * stride_page + row.y * stride_n : base;
    ptx::cp_async_16(tile + swizzled_offset(r, chunk * Traits::kChunkCols, Traits::kBlockN), src, valid ? 16u : 0u);
  }
}

template <class Traits>
__device__ void produce_paged(const KernelParams& p, SharedStorage<Traits>& s, int tid) {
  using Element = typename Traits::Element;
  constexpr int kBlockN = Traits::kBlockN;
  constexpr uint32_t kProducerBarrier = 1;  // named barrier of the producer warpgroup
  if (tid == 0) ptx::tma_prefetch_descriptor(&p.tma_q);
  const int chunk_offset = (tid % (Traits::kHeadDim / Traits::kChunkCols)) * Traits::kChunkCols;
  RingPosition<Traits::kStages> ring;
  uint32_t q_round = 0;
  int rows_buffer = 0;
  for (int round = 0, u = unit_of_round(0); u < p.num_units; u = unit_of_round(++round)) {
    const Unit t = load_unit<Traits::kBlockM, kBlockN>(p, u);
    if (t.empty()) continue;
    if (tid == 0) load_q<Traits>(p, s, t, q_round);
    ++q_round;
    const int kv_head = t.head / p.group_size;
    const Element* k_base = static_cast<const Element*>(p.k) + kv_head * p.k_stride_h + chunk_offset;
    const Element* v_base = static_cast<const Element*>(p.v) + kv_head * p.v_stride_h + chunk_offset;
    // Arrivals trail the copies by one group so that two tiles are in flight: each full
    // barrier is signalled once this thread's copies into it have landed, after a proxy
    // fence that makes them visible to wgmma (cp.async writes through the generic proxy).
    int pending_v = -1;
    // Row table, double-buffered: the page-table load for tile n-1 is issued before the
    // gathers of tile n and stored after them, so its latency hides under the copies. One
    // barrier per tile orders each buffer's writes after its readers and vice versa.
    if (tid < kBlockN) s.kv_rows[rows_buffer][tid] = lookup_row<Traits>(p, t.item, t.item.n_end - 1, tid);
    for (int n = t.item.n_end - 1; n >= t.item.n_begin; --n, ring.advance()) {
      ptx::named_sync(kProducerBarrier, 128);
      const int2* rows = s.kv_rows[rows_buffer];
      rows_buffer ^= 1;
      const int2 next_row = lookup_row<Traits>(p, t.item, n - 1, tid);

      ptx::mbar_wait(&s.k_empty[ring.stage], ring.phase ^ 1u);
      gather_tile<Traits>(rows, k_base, p.k_stride_page, p.k_stride_n, s.k + ring.stage * Traits::kTileElems, tid);
      ptx::cp_async_commit();
      if (pending_v >= 0) {
        ptx::cp_async_wait<1>();
        ptx::fence_proxy_async_smem();
        ptx::mbar_arrive(&s.v_full[pending_v]);
      }
      ptx::mbar_wait(&s.v_empty[ring.stage], ring.phase ^ 1u);
      gather_tile<Traits>(rows, v_base, p.v_stride_page, p.v_stride_n, s.v + ring.stage * Traits::kTileElems, tid);
      ptx::cp_async_commit();
      ptx::cp_async_wait<1>();
      ptx::fence_proxy_async_smem();
      ptx::mbar_arrive(&s.k_full[ring.stage]);
      pending_v = ring.stage;
      if (tid < kBlockN) s.kv_rows[rows_buffer][tid] = next_row;
    }
    ptx::cp_async_wait<0>();
    ptx::fence_proxy_async_smem();
    ptx::mbar_arrive(&s.v_full[pending_v]);
  }
}

}  // namespace flashband::sm90
