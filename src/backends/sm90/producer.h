// The producer warpgroup: loads Q once per work unit and streams the unit's K/V tiles, last
// tile first, into the shared-memory ring. Two flavours:
// - produce_tma: contiguous K/V; one thread issues TMA box loads (64 columns each).
// - produce_paged: paged K/V; all 128 threads resolve rows through the page table, then
//   either issue one TMA box per page (full tiles, power-of-two pages >= kMinTmaPageSize)
//   or gather rows with 16-byte cp.async (any page size, zero-filling rows at and past
//   kv_len) and signal completion with cp.async.mbarrier.arrive. Q still uses TMA. It is
//   instantiated twice (kTmaPages), so a launch whose pages are gathered runs code with no
//   TMA path in it. fp8 K/V (Traits::kFp8KV) is gathered through registers instead: 8-byte
//   loads, converted to q's type, stored where the cp.async would have landed
//   (gather_tile_fp8).
#pragma once
#include "backends/sm90/fp8_chunk.h"
#include "backends/sm90/kernel_params.h"
#include "backends/sm90/kernel_traits.h"
#include "backends/sm90/ptx.h"
#include "backends/sm90/schedule.h"
#include "backends/sm90/shared_storage.h"
#include "backends/sm90/trace.h"

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

// Issues the TMA loads of one K or V tile (kind = s.k / s.v ring with its map and barrier).
template <class Traits>
__device__ __forceinline__ void load_kv_tile(const CUtensorMap* map, uint64_t* full, uint64_t* empty,
                                             typename Traits::Element* tile, uint32_t phase, int row, int kv_head) {
  ptx::mbar_wait(empty, phase ^ 1u);
  ptx::mbar_arrive_expect_tx(full, Traits::kKVBytes);
  // K/V tiles are re-read by every query tile of the head: keep them in L2.
#pragma unroll
  for (int b = 0; b < Traits::kHeadDim / 64; ++b)
    ptx::tma_load_3d(map, full, tile + b * Traits::kBlockN * 64, b * 64, row, kv_head, ptx::kEvictLast);
}

// Tiles go out in the order the consumers need them: K(n), then V(n+1) (the consumers run
// QK^T of tile n next to PV of tile n+1), so a K load never waits behind a V stage that is
// freed later.
template <class Traits>
__device__ void produce_tma(const KernelParams& p, SharedStorage<Traits>& s) {
  constexpr int kBlockN = Traits::kBlockN;
  ptx::tma_prefetch_descriptor(&p.tma_q);
  RingPosition<Traits::kStages> ring;
  uint32_t q_round = 0;
  Trace trace(p);
  for (int round = 0, u = unit_of_round(0); u < p.num_units; u = unit_of_round(++round)) {
    const Unit t = load_unit<Traits::kBlockM, kBlockN>(p, u);
    prefetch_unit(p, unit_of_round(round + 1));
    trace(kTrPUnit);
    if (t.empty()) continue;
    load_q<Traits>(p, s, t, q_round++);
    trace(kTrPQ);
    const int kv_head = p.group_div.div(t.head);
    auto load_k = [&](int n, const RingPosition<Traits::kStages>& at) {
      load_kv_tile<Traits>(&p.tma_k, &s.k_full[at.stage], &s.k_empty[at.stage], s.k + at.stage * Traits::kTileElems,
                           at.phase, t.item.kv_start + n * kBlockN, kv_head);
    };
    auto load_v = [&](int n, const RingPosition<Traits::kStages>& at) {
      load_kv_tile<Traits>(&p.tma_v, &s.v_full[at.stage], &s.v_empty[at.stage], s.v + at.stage * Traits::kTileElems,
                           at.phase, t.item.kv_start + n * kBlockN, kv_head);
    };
    load_k(t.item.n_end - 1, ring);
    trace(kTrPK);
    RingPosition<Traits::kStages> v_ring = ring;
    ring.advance();
    for (int n = t.item.n_end - 2; n >= t.item.n_begin; --n) {
      load_k(n, ring);
      trace(kTrPK);
      load_v(n + 1, v_ring);
      trace(kTrPV);
      v_ring = ring;
      ring.advance();
    }
    load_v(t.item.n_begin, v_ring);
    trace(kTrPV);
  }
  trace.finish();
}

// The page of row `row` of KV tile `n`, or -1 for rows at or past kv_len (and tiles before
// the unit's first, and rows past the tile). Each producer thread resolves rows tid, tid +
// 128, ... of a tile (kRowsPerThread: two for D = 128's 176 keys) into a shared table of
// global addresses (row_addresses), so the gathers read one address per row from shared
// memory instead of walking the page table.
template <class Traits>
constexpr int kRowsPerThread = (Traits::kBlockN + 127) / 128;
template <class Traits>
__device__ __forceinline__ int lookup_page(const KernelParams& p, const WorkItem& it, int n, int row) {
  const int token = n * Traits::kBlockN + row;
  if (row >= Traits::kBlockN || n < it.n_begin || token >= it.kv_len) return -1;
  return p.page_indices[it.kv_start + (p.page_shift >= 0 ? token >> p.page_shift : token / p.page_size)];
}

// Global addresses (K, V) of that row: page * stride_page + slot * stride_n from this
// head's base, or 0 for a row without a page (past kv_len, or tiles before the unit's
// first). Only the tile holding kv_len's end has such rows, and only it pays for the
// zero fill (gather_tile's kTail).
template <class Traits>
__device__ __forceinline__ ulonglong2 row_addresses(const KernelParams& p, int page, int n, int row, int kv_head) {
  using Element = typename Traits::KVElement;  // strides count K/V elements (one byte for fp8)
  if (page < 0) return make_ulonglong2(0, 0);
  const int token = n * Traits::kBlockN + row;
  const int64_t slot = p.page_shift >= 0 ? token & (p.page_size - 1) : token % p.page_size;
  const Element* k = static_cast<const Element*>(p.k) + kv_head * p.k_stride_h + page * p.k_stride_page + slot * p.k_stride_n;
  const Element* v = static_cast<const Element*>(p.v) + kv_head * p.v_stride_h + page * p.v_stride_page + slot * p.v_stride_n;
  return make_ulonglong2(reinterpret_cast<unsigned long long>(k), reinterpret_cast<unsigned long long>(v));
}

// Paged gathers split each row between kGatherThreadsPerRow threads taking interleaved
// 16-byte chunks (thread part q copies chunks q, q + T, q + 2T, ... for T threads per row),
// so one warp instruction reads 32 / T rows x 16 T contiguous bytes, whole sectors, and a
// thread's copies of a row differ only in constant offsets: one shared load and one address
// per row instead of one per copy (per-copy address arithmetic bounded the producer). Copy j of row `row` lands at gather_dst<T>(row, q, j), which is
// swizzled_offset(row, (q + T j) * 8) (checked below): q < T and T j % 8 share no bits, so
// the swizzle XOR splits.
// T = 4 (8 rows x 64 B per warp instruction) is the fastest at every head dim: fewer, larger
// L2 requests than T = 2, and more passes per thread at T = 8 cost more than its whole-line
// copies gain (findings F13).
// D = 256's 80-key tile takes T = 8: a pass of T = 4 covers 32 rows, which 80 does not
// divide. D = 128's 176 keys keep T = 4, the rate measured at D = 128, with a last pass of
// 16 rows (warps 0 and 1 copy, the others skip it: the test is warp-uniform).
template <int kBlockN>
constexpr int kGatherThreadsPerRow = kBlockN % 32 == 0 || kBlockN > 128 ? 4 : 8;
template <int kThreadsPerRow>
__host__ __device__ constexpr int gather_dst(int row, int part, int j, int rows) {
  static_assert(kThreadsPerRow == 2 || kThreadsPerRow == 4 || kThreadsPerRow == 8);
  return ((kThreadsPerRow * j) >> 3) * rows * 64 + row * 64 +
         (((part ^ (row & 7)) ^ ((kThreadsPerRow * j) & 7)) << 3);
}
template <int kThreadsPerRow>
constexpr bool gather_dst_is_swizzled(int rows, int head_dim) {
  for (int row = 0; row < rows; ++row)
    for (int part = 0; part < kThreadsPerRow; ++part)
      for (int j = 0; j < head_dim / 8 / kThreadsPerRow; ++j)
        if (gather_dst<kThreadsPerRow>(row, part, j, rows) !=
            swizzled_offset(row, (part + kThreadsPerRow * j) * 8, rows))
          return false;
  return true;
}
template <int kThreadsPerRow>
constexpr bool gather_dst_is_swizzled_for_all_tiles() {
  return gather_dst_is_swizzled<kThreadsPerRow>(128, 64) && gather_dst_is_swizzled<kThreadsPerRow>(128, 128) &&
         gather_dst_is_swizzled<kThreadsPerRow>(176, 128) && gather_dst_is_swizzled<kThreadsPerRow>(64, 256) &&
         gather_dst_is_swizzled<kThreadsPerRow>(80, 256);
}
static_assert(gather_dst_is_swizzled_for_all_tiles<2>() && gather_dst_is_swizzled_for_all_tiles<4>() &&
              gather_dst_is_swizzled_for_all_tiles<8>());

// How the 128 producer threads split a tile's rows (gather_tile, gather_tile_fp8): kThreadsPerRow
// threads a row, kRowsPerPass rows a pass, kCopies 8-column chunks per thread and row.
template <class Traits>
struct GatherShape {
  static constexpr int kThreadsPerRow = kGatherThreadsPerRow<Traits::kBlockN>;
  static constexpr int kRowsPerPass = 128 / kThreadsPerRow;
  static constexpr int kCopies = Traits::kHeadDim / Traits::kChunkCols / kThreadsPerRow;  // per row
  static constexpr int kPasses = (Traits::kBlockN + kRowsPerPass - 1) / kRowsPerPass;
  // A warp's rows in a pass are 32 / kThreadsPerRow consecutive ones: a partial last pass
  // leaves whole warps out when the tile's rows are a multiple of that.
  static_assert(kRowsPerPass % 8 == 0 && Traits::kBlockN % (32 / kThreadsPerRow) == 0,
                "row % 8 is the same every pass; a partial pass is warp-uniform");
  // Whether `row` of the last pass is past the tile (warp-uniform).
  __device__ __forceinline__ static bool past_tile(int pass, int row) {
    return Traits::kBlockN % kRowsPerPass != 0 && pass == kPasses - 1 && row >= Traits::kBlockN;
  }
};

// Copies one KV tile of one head from its pages into a swizzled stage buffer, 16 bytes per
// cp.async. `addresses` is the shared address of the K or V column of the row table.
// kTail (the tile holding kv_len's end): rows without a page (address 0) become zeros by a
// zero source size, read from `fallback`, a valid address (a zero V row keeps 0 * V finite
// where P is 0). Full tiles copy whole rows with no size operand or select, which kept the
// producer busy. No zero row in device memory for rows past kv_len instead of the tail
// path: every SM's copies would hit the same L2 lines (findings F13).
template <class Traits, bool kTail>
__device__ __forceinline__ void gather_tile(uint32_t addresses, const void* fallback, typename Traits::Element* tile,
                                           int tid) {
  using G = GatherShape<Traits>;
  constexpr int kThreadsPerRow = G::kThreadsPerRow, kRowsPerPass = G::kRowsPerPass, kCopies = G::kCopies;
  constexpr int kChunkBytes = Traits::kChunkCols * sizeof(typename Traits::Element);
  const int part = tid % kThreadsPerRow;
  const int row0 = tid / kThreadsPerRow;
#pragma unroll
  for (int pass = 0; pass < G::kPasses; ++pass) {
    const int row = row0 + pass * kRowsPerPass;
    if (G::past_tile(pass, row)) break;
    const uint64_t address = ptx::ld_shared_u64(addresses + row * sizeof(ulonglong2));
    const bool valid = !kTail || address != 0;
    const char* src = (valid ? reinterpret_cast<const char*>(address) : static_cast<const char*>(fallback)) +
                      part * kChunkBytes;
#pragma unroll
    for (int j = 0; j < kCopies; ++j) {
      auto* dst = tile + gather_dst<kThreadsPerRow>(row, part, j, Traits::kBlockN);
      if constexpr (kTail)
        ptx::cp_async_16_evict_last(dst, src + j * kThreadsPerRow * kChunkBytes, valid ? 16u : 0u);
      else
        ptx::cp_async_16_evict_last(dst, src + j * kThreadsPerRow * kChunkBytes);
    }
  }
}

// fp8 K/V: gather_tile's rows, parts and destinations, but each 16-byte chunk of q's type
// comes from 8 fp8 bytes loaded into registers, converted (fp8_chunk.h) and stored with
// st.shared. The producer waits for these loads itself (a cp.async does not hold a
// register), so it issues a batch of them before the first conversion: a batch costs one
// memory latency, not one per chunk. Rows without a page (kTail, address 0) are not read
// and store zeros, as the cp.async zero fill does. e5m2 (else e4m3) is uniform over the
// launch: a branch per batch, not an instantiation per format (one per format spilled more
// at D = 256: 152 / 516 bytes).
// Loads a batch, per thread: 4 (8 registers): two passes at D = 64, one at D = 128, half
// of one at D = 256. ptxas, bytes of spill stores / loads: 8 a batch spilled 128 / 128 at
// D = 64 (f16) and 28 / 304 at D = 128 (bf16); D = 256's 24-register producer (bf16)
// 164 / 400 with 8, 188 / 700 with 2, 64 / 288 with 4, its 16-bit twin 60 / 64.
constexpr int kFp8LoadsInFlight = 4;
template <class Traits, bool kTail>
__device__ __forceinline__ void gather_tile_fp8(uint32_t addresses, typename Traits::Element* tile, int tid,
                                               bool e5m2) {
  constexpr DType kQ = cute::is_same_v<typename Traits::Element, cute::half_t> ? DType::kF16 : DType::kBF16;
  using G = GatherShape<Traits>;
  constexpr int kThreadsPerRow = G::kThreadsPerRow, kRowsPerPass = G::kRowsPerPass, kCopies = G::kCopies;
  constexpr int kCodeBytes = Traits::kChunkCols;  // fp8 bytes per chunk
  static_assert(Traits::kBlockN % kRowsPerPass == 0, "fp8 rows are narrow tiles: whole passes only");
  // A batch of kFp8LoadsInFlight loads: kBatchPasses whole passes, or kBatchCopies of one.
  constexpr int kLoads = kFp8LoadsInFlight;
  constexpr int kBatchCopies = kCopies < kLoads ? kCopies : kLoads;
  constexpr int kBatchPasses = kCopies < kLoads ? kLoads / kCopies : 1;
  static_assert(kCopies % kBatchCopies == 0 && G::kPasses % kBatchPasses == 0);
  const int part = tid % kThreadsPerRow;
  const int row0 = tid / kThreadsPerRow;
  const uint32_t tile_addr = ptx::smem_addr(tile);
#pragma unroll
  for (int pass0 = 0; pass0 < G::kPasses; pass0 += kBatchPasses) {
    uint64_t address[kBatchPasses];  // of the batch's rows
#pragma unroll
    for (int b = 0; b < kBatchPasses; ++b)
      address[b] = ptx::ld_shared_u64(addresses + (row0 + (pass0 + b) * kRowsPerPass) * sizeof(ulonglong2));
#pragma unroll
    for (int j0 = 0; j0 < kCopies; j0 += kBatchCopies) {
      uint2 codes[kBatchPasses][kBatchCopies];
#pragma unroll
      for (int b = 0; b < kBatchPasses; ++b) {
        const char* src = reinterpret_cast<const char*>(address[b]) + part * kCodeBytes;
        if (!kTail || address[b] != 0) {
#pragma unroll
          for (int j = 0; j < kBatchCopies; ++j)
            codes[b][j] = ptx::ld_global_nc_v2_evict_last(src + (j0 + j) * kThreadsPerRow * kCodeBytes);
        } else {
#pragma unroll
          for (int j = 0; j < kBatchCopies; ++j) codes[b][j] = make_uint2(0u, 0u);  // +0 in both formats
        }
      }
      auto store = [&](auto format) {
#pragma unroll
        for (int b = 0; b < kBatchPasses; ++b)
#pragma unroll
          for (int j = 0; j < kBatchCopies; ++j)
            ptx::st_shared_v4(tile_addr + sizeof(typename Traits::Element) *
                                              gather_dst<kThreadsPerRow>(row0 + (pass0 + b) * kRowsPerPass, part,
                                                                         j0 + j, Traits::kBlockN),
                              to_q_chunk<kQ, decltype(format)::value>(codes[b][j]));
      };
      if (e5m2)
        store(std::integral_constant<DType, DType::kE5M2>{});
      else
        store(std::integral_constant<DType, DType::kE4M3>{});
    }
  }
}

// Paged K/V: all 128 threads gather each tile, then arrive on its full barrier through
// cp.async.mbarrier.arrive, which fires when the thread's copies have landed. The producer
// never waits for its own copies, so it runs ahead to the next stage as soon as the
// consumers free it, exactly like the TMA producer.
// kTmaPages: p.paged_tma_rows > 0 (the kernel picks the instantiation per launch). Then a
// full tile needs only the page of each box's first row: threads below the tile's page count
// look up one page each into kv_pages, and only the tile holding kv_len's end, which is
// gathered, fills the row table. tile_by_tma decides per tile, the same way at lookup,
// store and load.
template <class Traits, bool kTmaPages>
__device__ void produce_paged(const KernelParams& p, SharedStorage<Traits>& s, int tid) {
  static_assert(!Traits::kWide || kWidePaged<Traits::kHeadDim>,
                "this head dim's wide kernels have no paged row tables in shared storage");
  using Element = typename Traits::Element;
  constexpr int kBlockN = Traits::kBlockN;
  constexpr int kStages = Traits::kStages;
  constexpr uint32_t kProducerBarrier = 1;  // named barrier of the producer warpgroup
  if (tid == 0) ptx::tma_prefetch_descriptor(&p.tma_q);
  RingPosition<kStages> ring;
  uint32_t q_round = 0;
  // Row tables rotate through three buffers: tile n's (K now), tile n+1's (V now) and
  // tile n-1's (being written: its page-table loads are issued before the gathers and
  // stored after them, so their latency hides under the copies). One producer barrier per
  // tile orders each buffer's writes after its readers and before its next readers.
  // Where shared memory holds two tables (kRowTables: D = 256's 80-key tile), tile n-1's
  // rows go to tile n+1's buffer once every thread has issued that tile's V gather: a
  // second barrier per tile.
  // The producer keeps 32 registers (24 at D = 256), so what can be derived is derived:
  // tile n+1's stage is the one before `ring`, its buffer the one before `cur`.
  int table = 0;  // the buffer the next unit's first table goes to
  // A unit's last V goes out after the next unit's first K: its stage frees a step later
  // than that K's, and waiting for it first put the next unit's page lookups, row table and
  // gather behind it, so the consumers waited for that K at every unit start. last_v: its
  // table buffer, -1 for none; last_v_n, last_v_full and last_v_head: its tile, whether that
  // tile is full, its KV head. Not at D = 256: with one Q buffer the next unit's Q waits for
  // the consumers to pass this unit's last QK^T, so the deferred V would come later still
  // (findings F15).
  constexpr bool kDeferLastV = Traits::kQStages > 1;
  constexpr int kTables = SharedStorage<Traits>::kRowTables;
  // Each thread's pages of a tile's rows: one, two for D = 128's 176 keys (gathered only).
  constexpr int kRows = kRowsPerThread<Traits>;
  static_assert(kRows == 1 || !kTmaPages, "a TMA tile's page table takes one page per thread");
  struct Pages {
    int page[kRows];
  };
  static_assert(kTables == 3 || (kTables == 2 && !kDeferLastV && !kTmaPages),
                "two row tables: the deferred V and TMA page tables assume three");
  int last_v = -1, last_v_n = 0, last_v_head = 0;
  bool last_v_full = false;
  // Pages per full tile and TMA boxes per full tile (pages x 64-column blocks), divided
  // once here.
  constexpr int kColBlocks = Traits::kHeadDim / 64;
  const int tile_pages = kTmaPages ? kBlockN / p.paged_tma_rows : 0;
  const int boxes = tile_pages * kColBlocks;
  auto next = [](int b) { return b + 1 == kTables ? 0 : b + 1; };
  auto prev = [](int b) { return b == 0 ? kTables - 1 : b - 1; };  // tile n+1's, for tile n's b
  // Tile n (full: it ends at or before kv_len) from table b into a stage: TMA boxes per
  // page when the tile is full and pages are large, else the cp.async gather.
  auto load_tile = [&](int b, int n, bool full_tile, int kv_head, bool v_side, int stage) {
    uint64_t* full = v_side ? &s.v_full[stage] : &s.k_full[stage];
    Element* tile = (v_side ? s.v : s.k) + stage * Traits::kTileElems;
    if constexpr (kTmaPages) {  // the gather-only instantiation has no TMA path at all
      if (full_tile) {
        // One box per thread (4 at most: 2 pages x 2 column blocks at D = 128, 1 x 4 at
        // D = 256), so the boxes go out together rather than one after another from one
        // thread. Thread 0's arrival carries the tile's byte count; the others' copies may
        // land before it, which the barrier's transaction count allows (it may go negative
        // until then). The barrier expects 128 arrivals (the gather's per-thread cp.async
        // arrivals); here lane 0 of each warp arrives for its warp: 5 shared atomics
        // instead of 128.
        if (tid < boxes) {
          const int page_block = tid / kColBlocks, c = tid % kColBlocks;
          const int r = page_block * p.paged_tma_rows;
          ptx::tma_load_4d(v_side ? &p.tma_v : &p.tma_k, full, tile + c * kBlockN * 64 + r * 64, c * 64,
                           (n * kBlockN + r) & (p.page_size - 1), kv_head, s.kv_pages[b][page_block],
                           ptx::kEvictLast);
        }
        if (tid == 0) {
          ptx::mbar_arrive_expect_tx(full, Traits::kKVBytes);
          ptx::mbar_arrive(full, 31);
        } else if (tid % 32 == 0) {
          ptx::mbar_arrive(full, 32);
        }
        return;
      }
    }
    const uint32_t addresses = ptx::smem_addr(s.kv_rows[b]) + (v_side ? sizeof(uint64_t) : 0);
    if constexpr (Traits::kFp8KV) {
      if (full_tile)
        gather_tile_fp8<Traits, false>(addresses, tile, tid, p.kv_e5m2);
      else
        gather_tile_fp8<Traits, true>(addresses, tile, tid, p.kv_e5m2);
      // st.shared writes through the generic proxy and wgmma reads through the async one:
      // this thread's stores are fenced before its arrival (the consumers fence too after
      // their wait, for the cp.async path).
      ptx::fence_proxy_async_smem();
      ptx::mbar_arrive(full);
      return;
    }
    if (full_tile)
      gather_tile<Traits, false>(addresses, nullptr, tile, tid);
    else
      gather_tile<Traits, true>(addresses, v_side ? p.v : p.k, tile, tid);
    ptx::mbar_arrive_cp_async(full);
  };
  auto gather_v_before = [&](int b, int n, bool full_tile, int kv_head) {  // in the stage before `ring`
    const int stage = ring.stage == 0 ? kStages - 1 : ring.stage - 1;
    const uint32_t phase = ring.stage == 0 ? ring.phase ^ 1u : ring.phase;
    ptx::mbar_wait(&s.v_empty[stage], phase ^ 1u);
    load_tile(b, n, full_tile, kv_head, true, stage);
  };
  Trace trace(p);  // thread 0 records (its own copies; the others' may lag)
  auto gather_last_v = [&] {
    if (last_v >= 0) {
      gather_v_before(last_v, last_v_n, last_v_full, last_v_head);
      trace(kTrPV);
    }
  };
  for (int round = 0, u = unit_of_round(0); u < p.num_units; u = unit_of_round(++round)) {
    const Unit t = load_unit<Traits::kBlockM, kBlockN>(p, u);
    if (tid == 0) prefetch_unit(p, unit_of_round(round + 1));
    trace(kTrPUnit);
    if (t.empty()) continue;
    if (tid == 0) load_q<Traits>(p, s, t, q_round);
    trace(kTrPQ);
    ++q_round;
    const int kv_head = p.group_div.div(t.head);
    // Whether tile n ends at or before kv_len (no zero fill), and whether it comes in as TMA
    // boxes (full tiles of large pages) rather than gathered.
    auto full_tile = [&](int n) { return (n + 1) * kBlockN <= t.item.kv_len; };
    auto tile_by_tma = [&](int n) { return kTmaPages && full_tile(n); };
    auto gather_k = [&](int b, int n) {
      ptx::mbar_wait(&s.k_empty[ring.stage], ring.phase ^ 1u);
      load_tile(b, n, full_tile(n), kv_head, false, ring.stage);
    };
    // This thread's page of tile n: its row's for a gathered tile, the first row of page
    // block tid for a TMA tile (-1 past the tile's pages: lookup_page refuses rows >= kBlockN).
    auto lookup = [&](int n) {
      Pages r;
#pragma unroll
      for (int i = 0; i < kRows; ++i)
        r.page[i] = lookup_page<Traits>(p, t.item, n, tile_by_tma(n) ? tid * p.paged_tma_rows : tid + 128 * i);
      return r;
    };
    auto store_rows = [&](int b, const Pages& pages, int n) {
      if constexpr (kTmaPages) {
        if (tile_by_tma(n)) {
          if (tid < tile_pages) s.kv_pages[b][tid] = pages.page[0];
          return;
        }
      }
#pragma unroll
      for (int i = 0; i < kRows; ++i) {
        const int row = tid + 128 * i;
        if (row < kBlockN) s.kv_rows[b][row] = row_addresses<Traits>(p, pages.page[i], n, row, kv_head);
      }
    };
    const int first = t.item.n_end - 1;
    int cur = table;  // tile n's buffer
    store_rows(cur, lookup(first), first);
    ptx::named_sync(kProducerBarrier, 128);
    Pages ahead = lookup(first - 1);
    gather_k(cur, first);
    trace(kTrPK);
    if constexpr (kDeferLastV) gather_last_v();
    store_rows(next(cur), ahead, first - 1);
    ring.advance();
    cur = next(cur);
    for (int n = first - 1; n >= t.item.n_begin; --n) {
      ptx::named_sync(kProducerBarrier, 128);
      ahead = lookup(n - 1);
      gather_k(cur, n);
      trace(kTrPK);
      gather_v_before(prev(cur), n + 1, full_tile(n + 1), kv_head);
      trace(kTrPV);
      if constexpr (kTables == 2) ptx::named_sync(kProducerBarrier, 128);  // next(cur) == prev(cur)
      store_rows(next(cur), ahead, n - 1);
      ring.advance();
      cur = next(cur);
    }
    if constexpr (kDeferLastV) {
      last_v = prev(cur);
      last_v_n = t.item.n_begin;
      last_v_full = full_tile(t.item.n_begin);
      last_v_head = kv_head;
    } else {
      gather_v_before(prev(cur), t.item.n_begin, full_tile(t.item.n_begin), kv_head);
      trace(kTrPV);
    }
    table = cur;  // holds only the rows of tile n_begin - 1, which nobody reads
  }
  gather_last_v();
  trace.finish();
}

}  // namespace flashband::sm90
