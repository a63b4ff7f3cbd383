// Packed custom masks (SPEC.md "Custom masks") in the sm80 mainloop: one warp's block of
// rows x kWarpKeys keys read from the bits, classified with two warp votes, and applied
// element-wise where the block is partial.
//
// Layout: request b's [qo_len, kv_len] bit matrix starts at byte mask_indptr[b], row-major,
// least significant bit first. Row t's keys [key0, key0 + n) are bits t * kv_len + key0 ..,
// which start at any bit (kv_len need not be a multiple of 8 or 32), so each lane reads the
// bytes its 64-bit window covers and shifts (core::custom_mask_window; whole 32-bit words
// would need an aligned start), never a byte past the request's segment.
//
// Each lane owns one query token of the warp's rows (GQA packs `group` heads of a token into
// consecutive rows, and the mask is per token, shared by its heads, as FlashInfer's), so a
// warp of 32 (or 16) packed rows needs at most 32 tokens' windows: one per lane. A thread
// masking packed row r asks the lane of token r / group for its window (two shuffles).
#pragma once
#include <cstdint>

#include "core/hd.h"
#include "core/mask.h"
#include "core/params.h"
#include "core/state.h"

namespace flashband::sm80 {

// This lane's token's window of the warp's keys [key0, key0 + kWarpKeys), clipped to kv_len;
// 0 for a lane without a token (the warp has fewer tokens than lanes) or past kv_len.
template <int kWarpKeys>
__device__ __forceinline__ uint64_t lane_mask_window(const uint8_t* bits, int token_begin, int token_end, int kv_len,
                                                     int key0, int lane) {
  static_assert(kWarpKeys <= 64, "one 64-bit window per lane");
  const int token = token_begin + lane;
  const int n = kv_len - key0 < kWarpKeys ? kv_len - key0 : kWarpKeys;
  return token < token_end && n > 0 ? core::custom_mask_window(bits, token, kv_len, key0, n) : 0;
}

// Folds the bits into the band's class of the warp's block (warp-uniform result): no bit set
// in any token's window is hidden; a full band block whose every token window has all its
// keys set stays full (no element-wise work); anything else is partial. Two votes per tile,
// so a tree-verify mask's all-visible prefix costs about what causal's full tiles do.
template <int kWarpKeys>
__device__ __forceinline__ core::TileClass mask_tile_class(core::TileClass band, uint64_t window, bool has_token) {
  if (!__any_sync(0xffffffffu, window != 0)) return core::TileClass::kHidden;
  if (band != core::TileClass::kFull) return band;
  // Full band block: every key of [key0, key0 + kWarpKeys) lies below kv_len.
  constexpr uint64_t kAll = kWarpKeys >= 64 ? ~uint64_t{0} : (uint64_t{1} << kWarpKeys) - 1;
  return __all_sync(0xffffffffu, !has_token || window == kAll) ? core::TileClass::kFull : core::TileClass::kPartial;
}

// The window of the token that packed row `row` belongs to (lane `src` holds it), for every
// lane: each lane asks for its own source, all lanes take part.
__device__ __forceinline__ uint64_t window_of_lane(uint64_t window, int src) {
  const uint32_t lo = __shfl_sync(0xffffffffu, static_cast<uint32_t>(window), src);
  const uint32_t hi = __shfl_sync(0xffffffffu, static_cast<uint32_t>(window >> 32), src);
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

// apply_mask (online_softmax.h) and the bits: element (n, e) of S is key key0 + 8n + 2t +
// (e & 1) of row half e >> 1; it stays only inside [lo, hi) with its bit set in win[e >> 1].
template <int kSTiles>
__device__ __forceinline__ void apply_mask_bits(float (&s)[kSTiles][4], int key0, int lane, const int (&lo)[2],
                                                const int (&hi)[2], const uint64_t (&win)[2]) {
  const int t2 = 2 * (lane & 3);
  const int kbase = key0 + t2;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const uint64_t w = win[r] >> t2;  // bit 8n + (e & 1) is this thread's element (n, e)
#pragma unroll
    for (int n = 0; n < kSTiles; ++n)
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const int key = kbase + 8 * n + c;
        if (key < lo[r] || key >= hi[r] || !((w >> (8 * n + c)) & 1)) s[n][2 * r + c] = core::neg_inf();
      }
  }
}

// Request `request`'s bits (byte offset from plan(); a single prefill without a workspace has
// one request at offset 0 and no mask_indptr).
__device__ __forceinline__ const uint8_t* request_mask_bits(const core::AttentionParams& p, int request) {
  return p.custom_mask + (p.mask_indptr != nullptr ? p.mask_indptr[request] : 0);
}

}  // namespace flashband::sm80
