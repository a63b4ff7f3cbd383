// What the sm90 kernels compile against: the tiles per head dim, the mask kinds, and which
// tiles have a paged path. Device code and host code read the same numbers from here; the
// host-only rule that picks among the compiled kernels is tile_rule.h.
//
// Sizing (bf16/fp16, 227 KB of shared memory and 64K registers per SM, one CTA per SM):
// - kBlockM: one consumer warpgroup per 64 query rows (wgmma's M), two (128) or three (192).
//   Three consumers get 160 registers a thread (kernel_traits.h): enough for D = 64 only,
//   whose short GEMMs then hide two softmaxes under the third's GEMMs (findings:
//   sm90-d64-three-consumers).
// - kBlockN: the widest KV tile whose S and O accumulators fit a consumer's registers after
//   setmaxnreg. The narrow tiles use only wgmma N values CUTLASS compiles by default
//   (multiples of 64); the wide ones (176, 80) need its extended shapes, which CMakeLists.txt
//   switches on in their generated files only.
// - kStages: as many K+V stages as shared memory holds next to Q (kBlockM x D).
// - kQStages: two Q buffers let the next unit's Q load while the current unit runs; where two
//   do not fit (D = 256, D = 128 wide) one buffer is loaded after the previous unit's last
//   Q K^T.
// - The mainloop always overlaps QK^T of tile n with the softmax of tile n-1 (a second S
//   accumulator's worth of registers).
// - kPingPong: consumer warpgroups take turns issuing GEMMs so that one's softmax runs under
//   another's GEMMs; it pays where softmax is a large share of the tile, D <= 128
//   (findings: sm90-pingpong-d256).
// - kFuseUnits: the last P V of a unit and the first Q K^T of the next issue as one step, so
//   a unit boundary costs about one KV step (consumer.h); needs two Q buffers.
#pragma once
#include <cstdint>

#include "core/hd.h"

namespace flashband::sm90 {

// kWide: a wider KV tile at D = 128 and 256 (per-step costs spread over more columns), a
// taller query tile at D = 64 (192 rows, three consumers). Which problems take it is the
// tile rule's choice (tile_rule.h use_wide_tiles).
template <int kHeadDim, bool kWide = false>
struct TileConfig;

template <>
struct TileConfig<64, false> {
  static constexpr int kBlockM = 128, kBlockN = 128, kStages = 3, kQStages = 2;
  static constexpr bool kPingPong = true, kFuseUnits = true;
};
template <>
struct TileConfig<128, false> {
  static constexpr int kBlockM = 128, kBlockN = 128, kStages = 2, kQStages = 2;
  static constexpr bool kPingPong = true, kFuseUnits = true;
};
template <>
struct TileConfig<256, false> {
  static constexpr int kBlockM = 128, kBlockN = 64, kStages = 2, kQStages = 1;
  static constexpr bool kPingPong = false, kFuseUnits = false;
};
// D = 64 keeps 128 keys on its 192-row tile: a 192-key tile measured slower (findings:
// sm90-d64-wide-shape). D = 128: S 88 + P 44 + O 64 registers, 32 KB + 2 x 88 KB.
template <>
struct TileConfig<64, true> {
  static constexpr int kBlockM = 192, kBlockN = 128, kStages = 3, kQStages = 2;
  static constexpr bool kPingPong = true, kFuseUnits = true;
};
template <>
struct TileConfig<128, true> {
  static constexpr int kBlockM = 128, kBlockN = 176, kStages = 2, kQStages = 1;
  static constexpr bool kPingPong = true, kFuseUnits = false;
};
// D = 256: 80 keys (S 40 + P 20 + O 128 registers), 64 KB + 2 x 80 KB = 224 KB, room for two
// 80-row paged row tables and no page tables (shared_storage.h).
template <>
struct TileConfig<256, true> {
  static constexpr int kBlockM = 128, kBlockN = 80, kStages = 2, kQStages = 1;
  static constexpr bool kPingPong = false, kFuseUnits = false;
};

// A head dim whose wide tile equals the narrow one has no wide kernel.
template <int kHeadDim>
constexpr bool kHasWide = TileConfig<kHeadDim, true>::kBlockN != TileConfig<kHeadDim, false>::kBlockN ||
                          TileConfig<kHeadDim, true>::kBlockM != TileConfig<kHeadDim, false>::kBlockM;

// The masks a kernel computes. kKVLen: only kv_len's end (problems without a causal /
// window mask or soft cap); kCausal: bottom-right causal without a window, the window
// arithmetic folded away; kAny: causal and / or window, read at run time.
// make_kernel_params refuses a problem a kernel's kind cannot mask.
enum class MaskKind { kKVLen, kCausal, kAny };
// kernel_list.h's name of each.
constexpr const char* mask_kind_name(MaskKind m) {
  return m == MaskKind::kAny ? "any" : m == MaskKind::kCausal ? "causal" : "kvlen";
}

// Only the runtime-mask kernels compile the soft cap: its tanh costs the other kernels'
// problems even unused (findings: sm90-soft-cap-runtime-mask-only).
FB_HD constexpr bool compiles_soft_cap(MaskKind mask) { return mask == MaskKind::kAny; }

// Only the narrow tiles' runtime-mask kernels read a custom mask's bits (custom_mask.h): the
// wide tiles' S, P and O leave no registers for them (D = 128's 176-key kernel spilled
// 392 to 1550 bytes with them), so the tile rule keeps mask problems on the narrow tiles.
FB_HD constexpr bool compiles_custom_mask(MaskKind mask, bool wide) { return mask == MaskKind::kAny && !wide; }

// Paged K/V: pages of a power-of-two size at least this large are loaded by TMA, one box per
// page and 64 columns, each box issued by its own producer thread; smaller pages are gathered
// row by row with cp.async by the producer warpgroup (findings: sm90-tma-pages).
constexpr int kMinTmaPageSize = 64;

// Whether a paged launch loads full tiles as TMA boxes (kernel_args.cpp); other pages are
// gathered with cp.async.
FB_HD constexpr bool pages_by_tma(int64_t page_size) {
  return page_size >= kMinTmaPageSize && (page_size & (page_size - 1)) == 0;
}

// Head dims whose wide tile has a paged path: a tile with room left for the paged row tables
// (a producer thread resolves one KV row of a tile, or two past 128 keys).
template <int kHeadDim>
constexpr bool kWidePaged = false;
template <>
constexpr bool kWidePaged<64> = true;
template <>
constexpr bool kWidePaged<128> = true;
template <>
constexpr bool kWidePaged<256> = true;
// Wide tiles whose paged path gathers only: 80 and 176 rows straddle TMA pages (a box never
// crosses a page), and D = 256's 224 KB leave no room for page tables.
template <int kHeadDim>
constexpr bool kWidePagedGatherOnly = false;
template <>
constexpr bool kWidePagedGatherOnly<128> = true;
template <>
constexpr bool kWidePagedGatherOnly<256> = true;
// Whether a tile's paged kernels have no TMA page path (and no page tables).
template <int kHeadDim, bool kWide>
constexpr bool kPagedGatherOnly = kWide && kWidePagedGatherOnly<kHeadDim>;

struct TileShape {
  int block_m = 0;
  int block_n = 0;
};

template <int kHeadDim, bool kWide>
FB_HD constexpr TileShape tile_shape_of() {
  return {TileConfig<kHeadDim, kWide>::kBlockM, TileConfig<kHeadDim, kWide>::kBlockN};
}

// The tile shape for a runtime head dim and variant; {0, 0} when the head dim is not compiled.
FB_HD constexpr TileShape tile_shape(int head_dim, bool wide = false) {
  return head_dim == 64    ? (wide ? tile_shape_of<64, true>() : tile_shape_of<64, false>())
         : head_dim == 128 ? (wide ? tile_shape_of<128, true>() : tile_shape_of<128, false>())
         : head_dim == 256 ? (wide ? tile_shape_of<256, true>() : tile_shape_of<256, false>())
                           : TileShape{0, 0};
}

// The head dims with tiles here.
constexpr int kHeadDims[] = {64, 128, 256};

}  // namespace flashband::sm90
