// Cooperative global->shared copies of one CTA: the Q tile once, then K/V tiles through the
// cp.async ring, 16 bytes per cp.async. Rows past the request (queries past qo_len, keys past kv_len) are
// zero-filled, which keeps every later product finite.
#pragma once
#include "backends/sm80/ptx.h"
#include "backends/sm80/request.h"
#include "backends/sm80/smem_layout.h"

namespace flashband::sm80 {

// Thread layout of a copy with kElemBytes-byte elements: groups of kLanes lanes each own
// one row and copy its 128-byte segments (chunk c of the row goes to lane c % kLanes of the
// group), so every warp instruction reads whole 128-byte segments and a thread computes
// one address per row it owns. Rows of 64 bytes (fp8, D = 64) take 4 lanes each.
template <class Cfg, int kElemBytes = 2>
struct CopyLayout {
  static constexpr int kChunkElems = 16 / kElemBytes;            // elements per 16-byte chunk
  static constexpr int kChunks = Cfg::kHeadDim / kChunkElems;    // chunks per row
  static constexpr int kLanes = kChunks < 8 ? kChunks : 8;       // lanes per row
  static constexpr int kSegments = kChunks / kLanes;             // 128-byte segments per row
  static constexpr int kSegmentElems = kLanes * kChunkElems;
  static constexpr int kRowsPerPass = Cfg::kThreads / kLanes;
  static constexpr int kKVPasses = Cfg::kBlockN / kRowsPerPass;  // passes over a K/V tile
  static_assert(Cfg::kBlockN % kRowsPerPass == 0, "K/V tile must split evenly over threads");
};

template <class Cfg, class T>
__device__ __forceinline__ void load_q_tile(uint32_t sq, const core::AttentionParams& p,
                                            const core::FastDivmod& group, const Request& r, int tid) {
  using L = CopyLayout<Cfg>;
  using Rows = SwizzledRows<Cfg::kHeadDim>;
  static_assert(Cfg::kBlockM % L::kRowsPerPass == 0, "Q tile must split evenly over threads");
  static_assert(L::kLanes == 8, "16-bit rows of 64 elements or more");
  const int rows_total = r.qo_len * r.group;
  const T* q = static_cast<const T*>(p.q);
  const int sub = tid & 7;
#pragma unroll
  for (int i = 0; i < Cfg::kBlockM / L::kRowsPerPass; ++i) {
    const int row = (tid >> 3) + i * L::kRowsPerPass;
    const int packed = r.row_begin + row;
    const bool valid = packed < rows_total;
    const T* src = q;
    if (valid) {
      const RowCoord c = row_coord(r, group, packed);
      src = q + (r.qo_begin + c.token) * p.q_stride_n + c.head * p.q_stride_h + sub * 8;
    }
#pragma unroll
    for (int seg = 0; seg < L::kSegments; ++seg)
      cp_async_16(sq + Rows::offset(row, seg * 8 + sub), valid ? src + seg * 64 : q, valid);
  }
}

// Which tensors a K/V copy moves: both into their stages, or (Cfg::kSingleV) K and V at
// different points of the loop.
enum KVParts : int { kKOnly = 1, kVOnly = 2, kKAndV = 3 };

// Keys [key0, key0 + kBlockN) into one K and one V stage (those of kParts). KV: the stored
// element type (q's dtype, or an fp8 format copied as bytes).
template <class Cfg, class KV, bool kPaged, int kParts = kKAndV>
__device__ __forceinline__ void load_kv_tile(uint32_t sk, uint32_t sv, const core::AttentionParams& p,
                                             const KVRows<kPaged>& kv, int kv_len, int key0, int tid) {
  using L = CopyLayout<Cfg, sizeof(KV)>;
  using Rows = SwizzledBytes<Cfg::kKVRowBytes>;
  static_assert(sizeof(KV) == Cfg::kKVElemBytes, "tile config and element type disagree");
  const KV* k = static_cast<const KV*>(p.k);
  const KV* v = static_cast<const KV*>(p.v);
  const int sub = tid % L::kLanes, row0 = tid / L::kLanes;
  if constexpr (!kPaged) {
    // Every key of the tile in range (all but a request's last tile), contiguous rows: one
    // 64-bit address per thread, the other rows kRowsPerPass * stride further (uniform
    // strides), no range checks.
    if (key0 + Cfg::kBlockN <= kv_len) {
      const int64_t row = static_cast<int64_t>(kv.first) + key0 + row0;
      const KV* ks = k + row * p.k_stride_n + kv.kv_head * p.k_stride_h + sub * L::kChunkElems;
      const KV* vs = v + row * p.v_stride_n + kv.kv_head * p.v_stride_h + sub * L::kChunkElems;
#pragma unroll
      for (int i = 0; i < L::kKVPasses; ++i) {
        const int r = row0 + i * L::kRowsPerPass;
#pragma unroll
        for (int seg = 0; seg < L::kSegments; ++seg) {
          const uint32_t dst = Rows::offset(r, seg * L::kLanes + sub);
          const int64_t col = seg * L::kSegmentElems;
          if constexpr ((kParts & kKOnly) != 0) cp_async_16(sk + dst, ks + i * L::kRowsPerPass * p.k_stride_n + col, true);
          if constexpr ((kParts & kVOnly) != 0) cp_async_16(sv + dst, vs + i * L::kRowsPerPass * p.v_stride_n + col, true);
        }
      }
      return;
    }
  } else {
    // Paged, every key in range and a power-of-two page size (the usual case): the page
    // and slot of a key are a shift and a mask instead of a division, the kv head's offset
    // is shared by the rows, and there are no range checks.
    const int ps = p.page_size;
    if (key0 + Cfg::kBlockN <= kv_len && (ps & (ps - 1)) == 0) {
      const int shift = __ffs(ps) - 1;
      const KV* kh = k + kv.kv_head * p.k_stride_h + sub * L::kChunkElems;
      const KV* vh = v + kv.kv_head * p.v_stride_h + sub * L::kChunkElems;
      int64_t page[L::kKVPasses];
#pragma unroll
      for (int i = 0; i < L::kKVPasses; ++i)  // all index loads in flight at once
        page[i] = p.page_indices[kv.first + ((key0 + row0 + i * L::kRowsPerPass) >> shift)];
      if (p.page_status != nullptr) {
#pragma unroll
        for (int i = 0; i < L::kKVPasses; ++i)
          page[i] = checked_page(p, kv.first + ((key0 + row0 + i * L::kRowsPerPass) >> shift), page[i]);
      }
#pragma unroll
      for (int i = 0; i < L::kKVPasses; ++i) {
        const int r = row0 + i * L::kRowsPerPass;
        const int64_t slot = (key0 + r) & (ps - 1);
        const KV* ks = kh + page[i] * p.k_stride_page + slot * p.k_stride_n;
        const KV* vs = vh + page[i] * p.v_stride_page + slot * p.v_stride_n;
#pragma unroll
        for (int seg = 0; seg < L::kSegments; ++seg) {
          const uint32_t dst = Rows::offset(r, seg * L::kLanes + sub);
          if constexpr ((kParts & kKOnly) != 0) cp_async_16(sk + dst, ks + seg * L::kSegmentElems, true);
          if constexpr ((kParts & kVOnly) != 0) cp_async_16(sv + dst, vs + seg * L::kSegmentElems, true);
        }
      }
      return;
    }
  }
#pragma unroll
  for (int i = 0; i < L::kKVPasses; ++i) {
    const int row = row0 + i * L::kRowsPerPass;
    const int t = key0 + row;
    const bool valid = t < kv_len;
    const KV* ks = k;
    const KV* vs = v;
    if (valid) {
      int64_t ko, vo;
      kv.offsets(p, t, ko, vo);
      ks = k + ko + sub * L::kChunkElems;
      vs = v + vo + sub * L::kChunkElems;
    }
#pragma unroll
    for (int seg = 0; seg < L::kSegments; ++seg) {
      const uint32_t dst = Rows::offset(row, seg * L::kLanes + sub);
      if constexpr ((kParts & kKOnly) != 0) cp_async_16(sk + dst, valid ? ks + seg * L::kSegmentElems : k, valid);
      if constexpr ((kParts & kVOnly) != 0) cp_async_16(sv + dst, valid ? vs + seg * L::kSegmentElems : v, valid);
    }
  }
}

}  // namespace flashband::sm80
