// Compile-time description of one sm90 prefill instantiation: element type, tile sizes,
// warpgroup roles and register split, shared-memory layouts and the two tiled wgmma ops.
//
// Shared-memory layouts are CuTe's canonical 128-byte-swizzled wgmma layouts, which are also
// exactly what a TMA box of 64 columns x R rows with SWIZZLE_128B writes: row r of a box at
// byte r * 128, its 16-byte chunks XOR-ed with r % 8, and boxes of successive 64-column
// blocks one after the other. swizzled_offset() spells this out; the static_asserts below
// check it against the CuTe layouts, so the TMA / cp.async producers and the wgmma
// consumers provably agree.
#pragma once
#include <cstdint>
#include <type_traits>

#include <cute/tensor.hpp>
#include <cute/atom/mma_atom.hpp>
#include <cute/arch/mma_sm90.hpp>
#include <cutlass/numeric_types.h>

#include "backends/sm90/tile_shapes.h"

namespace flashband::sm90 {

// Element offset of (row, col) in a tile of `rows` rows stored as consecutive 64-column
// blocks of rows x 128 bytes, each row's 16-byte chunks XOR-swizzled by row % 8.
// Row and column are never negative; shifts and masks keep the device arithmetic short.
__host__ __device__ constexpr int swizzled_offset(int row, int col, int rows) {
  return (col >> 6) * rows * 64 + row * 64 + ((((col >> 3) & 7) ^ (row & 7)) << 3) + (col & 7);
}

// kMask_: the masks the kernel computes (tile_shapes.h MaskKind). Without causal / window
// masks (kKVLen: the kernel_list.h rows of mask kind kvlen) it serves
// problems whose only partial tile is at kv_len's end.
// kFp8KV_: K/V are one-byte e4m3 / e5m2 in global memory (paged only); the producer converts
// them to Element on the way into the same stage buffers (producer.h), so the consumers
// read what they read for 16-bit K/V and apply k_scale / v_scale (findings F44).
template <class Element_, int kHeadDim_, bool kWide_ = false, MaskKind kMask_ = MaskKind::kAny, bool kFp8KV_ = false>
struct KernelTraits {
  using Element = Element_;
  static constexpr bool kFp8KV = kFp8KV_;
  using KVElement = std::conditional_t<kFp8KV, uint8_t, Element>;  // K/V in global memory
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr bool kWide = kWide_;
  using Config = TileConfig<kHeadDim, kWide>;
  static constexpr int kBlockM = Config::kBlockM;
  static constexpr int kBlockN = Config::kBlockN;
  static constexpr int kStages = Config::kStages;
  static constexpr int kQStages = Config::kQStages;
  static constexpr bool kPingPong = Config::kPingPong;
  static constexpr bool kFuseUnits = Config::kFuseUnits;
  // A fused boundary issues the next unit's first Q K^T before this unit's Q buffer is free:
  // with one buffer it would wait for that Q's load instead.
  static_assert(!kFuseUnits || kQStages >= 2, "unit fusion needs two Q buffers");
  // An unmasked kernel serves only problems without a causal / window mask or soft cap
  // (make_kernel_params enforces it): the mask state folds away at compile time, which
  // D = 128's 176-key S tile's registers need (findings: sm90-wide-kvlen-kernels).
  static constexpr MaskKind kMask = kMask_;
  static constexpr bool kKVLenMaskOnly = kMask == MaskKind::kKVLen;
  static constexpr bool kCustomMask = compiles_custom_mask(kMask, kWide);
  // Only the runtime-mask kernels compile the soft cap (tile_shapes.h compiles_soft_cap).
  static constexpr bool kSoftCap = compiles_soft_cap(kMask);
  static_assert(kHeadDim % 64 == 0 && kBlockM % 64 == 0 && kBlockN % 16 == 0);
  static_assert(kBlockM <= 256 && kBlockN <= 256, "a TMA box has at most 256 rows");

  // Warpgroup 0 produces (TMA: one thread; paged cp.async: all 128), the others consume,
  // one per 64 query rows: two or three (consumer.h's ping-pong serves both).
  static constexpr int kConsumerWarpgroups = kBlockM / 64;
  static_assert(kConsumerWarpgroups == 2 || kConsumerWarpgroups == 3,
                "the register split and the ping-pong ring are written for two or three consumers");
  static constexpr int kConsumerThreads = 128 * kConsumerWarpgroups;
  static constexpr int kConsumerWarps = kConsumerThreads / 32;
  static constexpr int kThreads = 128 + kConsumerThreads;
  // setmaxnreg split. At launch every thread holds kEntryRegs (65536 / kThreads rounded down
  // to the allocation granule of 8); the producer gives registers back and the consumers
  // take them, and the two must balance within that pool or setmaxnreg.inc waits forever.
  // A TMA producer is one thread issuing copies (24 is the minimum): consumers get 240. The
  // paged producer keeps 32 for its gathers' 64-bit address arithmetic (no spills at
  // D = 128); its consumers get 232 ((168 x 384 - 32 x 128) / 256 = 236, rounded down to
  // the granule), as they did at 40. 32 measured 5% faster than 40 at page 16 (ncu, D = 128,
  // S = 16k) for a reason in the producer's code that is not established; 232 instead of
  // 240 costs the contiguous kernel 1.7%, so 240 for paged needs a 24-register producer.
  // D = 256 takes it: at 232 its consumers spilled, at 240 only the producer does (32 bytes
  // around the gather; 16 after the seventeenth session's split, 28 with four gather threads
  // per row), and page 16 at 2k ran 783 -> 685 us (ncu, fifteenth session). At D = 128 the
  // 24-register producer spilled 24 bytes and measured within 1% (page 16 / 1 / 128);
  // after the split into two producer instantiations it spills 36 / 64 bytes and measured
  // +0.7% (seventeenth). It keeps 32, also under the 176-key tile on gathered pages (its
  // producer resolves two rows a thread): there (ptxas, bf16) 32 / 232 spill 8 / 8 bytes,
  // 24 / 240 40 / 104 (the producer's).
  // Three consumers (512 threads): 128 at entry, and 160 for the consumers with either
  // producer ((128 x 512 - 24 x 128) / 384 = 162.7 and (128 x 512 - 32 x 128) / 384 = 160
  // exactly, rounded down to the granule), as in FlashAttention-3.
  static constexpr int kEntryRegs = (65536 / kThreads) / 8 * 8;
  template <bool kPaged>
  static constexpr int kProducerRegs = kPaged && kHeadDim != 256 ? 32 : 24;
  template <bool kPaged>
  static constexpr int kConsumerRegs =
      ((kEntryRegs * kThreads - kProducerRegs<kPaged> * 128) / kConsumerThreads) / 8 * 8;
  static_assert(kProducerRegs<false> * 128 + kConsumerRegs<false> * kConsumerThreads <= kEntryRegs * kThreads);
  static_assert(kProducerRegs<true> * 128 + kConsumerRegs<true> * kConsumerThreads <= kEntryRegs * kThreads);
  static_assert(kConsumerRegs<false> <= 256 && kConsumerRegs<true> <= 256);

  static constexpr int kChunkCols = 8;  // 16 bytes of two-byte elements
  static constexpr uint32_t kQBytes = kBlockM * kHeadDim * sizeof(Element);
  static constexpr uint32_t kKVBytes = kBlockN * kHeadDim * sizeof(Element);

  using TileQK = cute::Shape<cute::Int<kBlockM>, cute::Int<kBlockN>, cute::Int<kHeadDim>>;
  using TilePV = cute::Shape<cute::Int<kBlockM>, cute::Int<kHeadDim>, cute::Int<kBlockN>>;
  using WarpgroupLayout = cute::Layout<cute::Shape<cute::Int<kConsumerWarpgroups>, cute::_1, cute::_1>>;

  // Q [kBlockM, D, q stage] and K [kBlockN, D, stage]: K-major (D contiguous) operands of
  // S = Q K^T.
  using SmemLayoutQ = decltype(cute::tile_to_shape(
      cute::GMMA::Layout_K_SW128_Atom<Element>{},
      cute::Shape<cute::Int<kBlockM>, cute::Int<kHeadDim>, cute::Int<kQStages>>{}));
  using SmemLayoutK = decltype(cute::tile_to_shape(
      cute::GMMA::Layout_K_SW128_Atom<Element>{},
      cute::Shape<cute::Int<kBlockN>, cute::Int<kHeadDim>, cute::Int<kStages>>{}));
  // V seen as B of O = P V: (N = D, K = kBlockN, stage), MN-major (D contiguous), tiled
  // rows-first so that each 64-column block of D holds all kBlockN rows, like a TMA box.
  using SmemLayoutVt = decltype(cute::tile_to_shape(
      cute::GMMA::Layout_MN_SW128_Atom<Element>{},
      cute::Shape<cute::Int<kHeadDim>, cute::Int<kBlockN>, cute::Int<kStages>>{},
      cute::Step<cute::_2, cute::_1, cute::_3>{}));

  // S = Q K^T with both operands in shared memory; O += P V with P from registers.
  using TiledMmaQK = decltype(cute::make_tiled_mma(
      cute::GMMA::ss_op_selector<Element, Element, float, TileQK>(), WarpgroupLayout{}));
  using TiledMmaPV = decltype(cute::make_tiled_mma(
      cute::GMMA::rs_op_selector<Element, Element, float, TilePV, cute::GMMA::Major::K, cute::GMMA::Major::MN>(),
      WarpgroupLayout{}));
  static_assert(cute::size(TiledMmaQK{}) == kConsumerThreads && cute::size(TiledMmaPV{}) == kConsumerThreads);
  // One wgmma spans the whole S tile (N = kBlockN). CUTLASS's selector otherwise falls back
  // to the largest default N that divides kBlockN (N = 16 for 176) without complaint:
  // non-default widths need CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED in the kernel's file.
  static_assert(cute::size<1>(typename TiledMmaQK::AtomShape_MNK{}) == kBlockN,
                "Q K^T wgmma atom narrower than the KV tile: define CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED");

  static constexpr int kTileElems = kBlockN * kHeadDim;
  static constexpr int kQElems = kBlockM * kHeadDim;

  // The layouts are the TMA box placement (spot checks at corners, swizzle and block edges).
  // CuTe keeps the swizzle of these layouts in byte-address terms (it is applied to the
  // shared-memory address once a pointer is attached), so the check swizzles byte offsets.
  static constexpr int byte_offset(int element_offset) {
    return int(cute::Swizzle<3, 4, 3>{}(element_offset * int(sizeof(Element))));
  }
  static constexpr bool layouts_match_tma() {
    constexpr auto q = SmemLayoutQ{}.layout_b();
    constexpr auto k = SmemLayoutK{}.layout_b();
    constexpr auto vt = SmemLayoutVt{}.layout_b();
    constexpr int e = int(sizeof(Element));
    const int rows[] = {0, 1, 7, 8, 9, 15, kBlockN - 1};
    const int cols[] = {0, 1, 8, 15, 16, 63, 64, 65, 72, kHeadDim - 1};
    auto q_matches = [&](int r, int c) {  // both Q buffers
      return byte_offset(int(q(r, c, 0))) == e * swizzled_offset(r, c, kBlockM) &&
             byte_offset(int(q(r, c, kQStages - 1))) == e * ((kQStages - 1) * kQElems + swizzled_offset(r, c, kBlockM));
    };
    for (int r : rows) {
      for (int c : cols) {
        if (c >= kHeadDim) continue;
        if (!q_matches(r, c)) return false;
        if (byte_offset(int(k(r, c, 0))) != e * swizzled_offset(r, c, kBlockN)) return false;
        if (byte_offset(int(k(r, c, 1))) != e * (kTileElems + swizzled_offset(r, c, kBlockN))) return false;
        if (byte_offset(int(vt(c, r, 0))) != e * swizzled_offset(r, c, kBlockN)) return false;
        if (byte_offset(int(vt(c, r, 1))) != e * (kTileElems + swizzled_offset(r, c, kBlockN))) return false;
      }
    }
    // Q rows past the KV tile's (kBlockM > kBlockN: the third slab of 192 rows, D = 256's
    // rows 80-127).
    const int q_rows[] = {kBlockM - 65, kBlockM - 64, kBlockM - 57, kBlockM - 1};
    for (int r : q_rows)
      for (int c : cols)
        if (c < kHeadDim && !q_matches(r, c)) return false;
    return true;
  }
  static_assert(cute::is_same_v<std::decay_t<decltype(SmemLayoutQ{}.layout_a())>, cute::Swizzle<3, 4, 3>> &&
                cute::is_same_v<std::decay_t<decltype(SmemLayoutK{}.layout_a())>, cute::Swizzle<3, 4, 3>> &&
                cute::is_same_v<std::decay_t<decltype(SmemLayoutVt{}.layout_a())>, cute::Swizzle<3, 4, 3>>,
                "expected the 128-byte swizzle");
  static_assert(layouts_match_tma(), "CuTe smem layouts differ from the TMA box placement");
};

}  // namespace flashband::sm90
