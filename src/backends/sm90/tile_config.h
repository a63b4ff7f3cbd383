// Tile sizes of the sm90 prefill kernel, per head dim. Host code (planner, workspace sizing)
// and the kernel read the same numbers from here.
//
// Why these sizes (bf16/fp16, H200: 227 KB of shared memory and 64K registers per SM, one CTA
// per SM):
// - kBlockM = 128: two consumer warpgroups of 64 query rows each (wgmma's M is 64 per
//   warpgroup). Each consumer holds S (64 x kBlockN) and O (64 x D) in float32 registers.
// - kBlockN: the widest KV tile whose S and O accumulators still fit the 240 registers a
//   consumer thread gets after setmaxnreg: D=64 -> 128 (S 64 + O 32 regs), D=128 -> 128 (S 64
//   + O 64), D=256 -> 64 (S 32 + O 128). Only wgmma N values that CUTLASS compiles without its
//   "extended shapes" switch (multiples of 64 here) are used, to keep compile time down.
// - kStages: as many K+V stages as shared memory holds next to Q (kBlockM x D):
//   D=64: 16 KB + 3 x 32 KB; D=128: 32 KB + 2 x 64 KB; D=256: 64 KB + 2 x 64 KB.
// - kOverlap: each consumer issues QK^T of tile n before the softmax of tile n+1 finishes
//   its PV, so the tensor cores work while the warpgroup does exponentials (costs a second S
//   accumulator's worth of registers: P stays live across the QK^T). false selects the
//   plain loop (one GEMM at a time), kept as a reference for debugging.
// - kPingPong: the two consumer warpgroups take turns issuing their GEMMs (named barriers),
//   so one warpgroup's softmax runs under the other's GEMMs. It pays where softmax is a
//   large share of the tile (D <= 128); at D = 256 the GEMMs dominate.
#pragma once
#include "core/hd.h"

namespace flashband::sm90 {

template <int kHeadDim>
struct TileConfig;

template <>
struct TileConfig<64> {
  static constexpr int kBlockM = 128, kBlockN = 128, kStages = 3;
  static constexpr bool kOverlap = true, kPingPong = true;
};
template <>
struct TileConfig<128> {
  static constexpr int kBlockM = 128, kBlockN = 128, kStages = 2;
  static constexpr bool kOverlap = true, kPingPong = true;
};
template <>
struct TileConfig<256> {
  static constexpr int kBlockM = 128, kBlockN = 64, kStages = 2;
  static constexpr bool kOverlap = true, kPingPong = false;
};

struct TileShape {
  int block_m = 0;
  int block_n = 0;
};

// The tile shape for a runtime head dim; {0, 0} when the head dim is not compiled.
FB_HD constexpr TileShape tile_shape(int head_dim) {
  return head_dim == 64    ? TileShape{TileConfig<64>::kBlockM, TileConfig<64>::kBlockN}
         : head_dim == 128 ? TileShape{TileConfig<128>::kBlockM, TileConfig<128>::kBlockN}
         : head_dim == 256 ? TileShape{TileConfig<256>::kBlockM, TileConfig<256>::kBlockN}
                           : TileShape{0, 0};
}

// Paged K/V: pages of a power-of-two size at least this large are loaded by TMA, one box
// per page and 64 columns, issued by one thread; smaller pages are gathered row by row with
// cp.async by the whole producer warpgroup. Measured on the H200 (D=128, bf16): with pages
// of 16, TMA boxes of 16 rows ran at 0.65x of ragged against 0.84x for the gather; with
// pages of 128, TMA reached 0.94-1.02x.
constexpr int kMinTmaPageSize = 64;

// The head dims this backend compiles, for registration and error messages.
constexpr int kHeadDims[] = {64, 128, 256};

}  // namespace flashband::sm90
