// Tile shapes of the sm80 kernels: one row per (kernel shape, head dim), each with its
// reason. Host and device read the same numbers (the planner cuts work with kBlockM and
// kBlockN; the kernel is compiled with them).
//
// Every warp owns kRowBlocks m16n8k16 row blocks (16 query rows each) and kWarpKeys keys of
// each KV tile. A K or V fragment read from shared memory feeds one MMA per row block, so
// two row blocks per warp halve the shared-memory bytes per FLOP (16 rows per warp need as
// many ldmatrix bytes as Hopper's mma.sync rate can use; 32 rows need half). Prefill puts
// its warps along M. Decode has at most a GQA group of rows, so its warps go along N
// instead: four warps split each KV tile and combine their softmax states at the end.
#pragma once
#include <cstddef>

#include "dispatch/variant.h"

namespace flashband::sm80 {

template <int kHeadDim_, int kWarpsM_, int kWarpsN_, int kRowBlocks_, int kBlockN_, int kStages_, bool kQInRegs_,
          int kMinBlocks_, bool kSingleV_ = false, int kKVElemBytes_ = 2>
struct TileConfig {
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kWarpsM = kWarpsM_;        // warps along query rows
  static constexpr int kWarpsN = kWarpsN_;        // warps along keys (decode)
  static constexpr int kRowBlocks = kRowBlocks_;  // m16 row blocks per warp
  static constexpr int kWarpRows = 16 * kRowBlocks;
  static constexpr int kBlockM = kWarpRows * kWarpsM;  // packed (token, head) rows per CTA
  static constexpr int kBlockN = kBlockN_;      // keys per pipeline stage
  static constexpr int kStages = kStages_;      // K/V tiles in flight (cp.async ring)
  static constexpr bool kQInRegs = kQInRegs_;   // Q fragments live in registers for the whole loop
  static constexpr int kMinBlocks = kMinBlocks_;// __launch_bounds__ occupancy target
  // One V buffer instead of kStages: V of tile j is loaded while Q K^T of tile j runs (after
  // the barrier that ends P V of tile j - 1), K of tile j + 1 a whole step ahead. Costs a
  // second barrier per tile; saves a V tile of shared memory for a wider tile.
  static constexpr bool kSingleV = kSingleV_;
  static constexpr int kVStages = kSingleV ? 1 : kStages;
  // K/V element size: 2 (q's dtype) or 1 (fp8, converted to q's dtype in registers after
  // ldmatrix: fp8_fragments.h). Q and O stay 16-bit.
  static constexpr int kKVElemBytes = kKVElemBytes_;
  static constexpr int kThreads = 32 * kWarpsM * kWarpsN;
  static constexpr int kWarpKeys = kBlockN / kWarpsN;  // keys of a tile one warp handles

  static_assert(kHeadDim % 64 == 0, "swizzle works on 128-byte row groups");
  static_assert(kWarpKeys % 16 == 0, "P @ V consumes keys 16 at a time");
  static_assert(kStages >= 2, "one tile computes while the next loads");
  static_assert(kWarpsN == 1 || kRowBlocks == 1, "the cross-warp combine handles one row block");

  static_assert(!kSingleV || (kStages == 2 && !kQInRegs && kWarpsN == 1),
                "the single-V loop double-buffers K and reads Q from shared memory");

  // Shared memory: a Q tile (16-bit), then kStages K tiles, then kVStages V tiles.
  static constexpr std::size_t kQBytes = std::size_t{kBlockM} * kHeadDim * 2;
  static constexpr std::size_t kKVRowBytes = std::size_t{kHeadDim} * kKVElemBytes;
  static constexpr std::size_t kKVTileBytes = std::size_t{kBlockN} * kKVRowBytes;
  static constexpr std::size_t kKVBytes = std::size_t{kStages + kVStages} * kKVTileBytes;
  static constexpr std::size_t kSmemBytes = kQBytes + kKVBytes;
  // Decode's cross-warp combine reuses the K/V area: per warp 16 rows x D floats plus m
  // and d, and one output scale per row (epilogue.h).
  static constexpr std::size_t kCombineBytes =
      kWarpsN > 1 ? std::size_t{kWarpsN} * 16 * (kHeadDim + 2) * 4 + 16 * 4 : 0;
  static_assert(kCombineBytes <= kKVBytes, "combine buffer must fit in the K/V area");
};

// Prefill, per thread: O costs D/2 registers per row block, S kBlockN/2, Q in registers
// D/4. D=64 and D=128 give each warp 2 row blocks (4 warps x 32 rows = 128 rows, the
// planner's row tile unchanged) and run 2 CTAs per SM (8 warps; one CTA's barrier wait is
// covered by the other): D=64 keeps Q in registers (32 + O 64 + S 64), D=128 re-reads Q
// from shared memory per k-step (O 128 + S 64 leave no room for Q's 64), as
// FlashAttention-2 does. D=256 cannot hold two row blocks of O (256 registers), so it keeps
// 8 warps x 16 rows with Q in shared memory. With one row block a warp reads a K or V
// fragment per two MMAs, so shared-memory bandwidth bounds it and the Q fragments of a
// k-step should serve as many keys as fit: 64-key tiles with two K buffers and one V
// buffer take 160 KB (64 KB Q + 3 x 32 KB), what an A100 block can have (163 KB); two V
// buffers would need 192 KB.
template <int D> struct PrefillTile;
template <> struct PrefillTile<64> : TileConfig<64, 4, 1, 2, 64, 3, true, 2> {};     // 64 KB smem
template <> struct PrefillTile<128> : TileConfig<128, 4, 1, 2, 64, 2, false, 2> {};  // 96 KB
template <> struct PrefillTile<256> : TileConfig<256, 8, 1, 1, 64, 2, false, 1, true> {};  // 160 KB

// Decode: memory-bound, so the tile is sized for bytes in flight: 64 keys per stage split
// over 4 warps, with 4 / 3 / 2 stages (64 / 96 / 128 KB of K and V in flight per CTA).
// D=256 keeps Q in shared memory to leave registers for its 128-float O.
template <int D> struct DecodeTile;
template <> struct DecodeTile<64> : TileConfig<64, 1, 4, 1, 64, 4, true, 3> {};     // 66 KB smem
template <> struct DecodeTile<128> : TileConfig<128, 1, 4, 1, 64, 3, true, 2> {};   // 100 KB
template <> struct DecodeTile<256> : TileConfig<256, 1, 4, 1, 64, 2, false, 1> {};  // 136 KB

// fp8 K/V: the same rows, keys, warps and occupancy as the 16-bit tiles (the planner's
// numbers do not depend on the KV dtype), K/V tiles of half the bytes. Prefill keeps its
// stages (compute-bound; the smem it frees buys nothing at these occupancies). Decode is
// sized for bytes in flight, so it doubles its stages to keep the 16-bit kernels' 64 / 96 /
// 128 KB of K and V in flight per CTA.
template <int D> struct PrefillTileFp8;
template <> struct PrefillTileFp8<64> : TileConfig<64, 4, 1, 2, 64, 3, true, 2, false, 1> {};      // 40 KB
template <> struct PrefillTileFp8<128> : TileConfig<128, 4, 1, 2, 64, 2, false, 2, false, 1> {};   // 64 KB
template <> struct PrefillTileFp8<256> : TileConfig<256, 8, 1, 1, 64, 2, false, 1, true, 1> {};    // 112 KB
template <int D> struct DecodeTileFp8;
template <> struct DecodeTileFp8<64> : TileConfig<64, 1, 4, 1, 64, 8, true, 3, false, 1> {};     // 66 KB
template <> struct DecodeTileFp8<128> : TileConfig<128, 1, 4, 1, 64, 6, true, 2, false, 1> {};   // 100 KB
template <> struct DecodeTileFp8<256> : TileConfig<256, 1, 4, 1, 64, 4, false, 1, false, 1> {};  // 136 KB

// The numbers the planner needs, looked up at run time.
struct TileShape {
  int block_m = 0;
  int block_n = 0;
  int ctas_per_sm = 1;
};

template <class Cfg>
constexpr TileShape tile_shape_of() {
  return {Cfg::kBlockM, Cfg::kBlockN, Cfg::kMinBlocks};
}

// Throws Error(kUnsupported) naming head_dim when there is no tile for it.
TileShape tile_shape(dispatch::KernelShape shape, int head_dim);

}  // namespace flashband::sm80
