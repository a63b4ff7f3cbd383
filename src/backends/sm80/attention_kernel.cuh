// The sm80 attention kernel: one CTA per work item (request, kv head, packed row tile, kv
// split). Prefill and decode are the same code with different TileConfigs (warps along
// query rows, or along keys). Compile-time knobs: tile config (head dim), element type T of
// q and o, K/V element type KV (T, or an fp8 format: fp8_fragments.h), kMask
// (causal / window_left / window_right), kSoftCap, kPaged, kCustomMask (packed mask bits,
// custom_mask.h; always with kMask).
//
// kCustomMask is a template flag, not a runtime branch: the mask path holds a bits pointer
// and each lane's 64-bit window across the tile's barrier, and the D = 128 kernels already
// sit at the 255-register cap, so only the instantiations that read a mask pay for it.
//
// Main loop over the KV tiles the row tile can see (core::kv_tile_span, cut by the split):
//   wait for tile j, barrier, start loading tile j + kStages - 1 into the freed stage,
//   then per warp: classify its kWarpRows rows x kWarpKeys keys (hidden: skip; full: no mask
//   arithmetic; partial: element-wise mask), S = Q K^T, soft cap, online softmax, O += P V.
//   With a custom mask each lane reads its token's bits of the warp's keys before the wait,
//   so the loads fly under the barrier, and the class folds in the bits (custom_mask.h).
//   With one V buffer (Cfg::kSingleV) the top of step j loads V of tile j and K of tile
//   j + 1, and a second wait and barrier come before P V.
#pragma once
#include "backends/sm80/custom_mask.h"
#include "backends/sm80/epilogue.h"
#include "backends/sm80/fp8_fragments.h"
#include "backends/sm80/online_softmax.h"
#include "backends/sm80/request.h"
#include "backends/sm80/tile_loads.h"
#include "backends/sm80/warp_mma.h"
#include "backends/sm80/work.h"
#include "core/mask.h"
#include "core/params.h"
#include "core/state.h"

namespace flashband::sm80 {

// Whether this warp's block needs the element-wise mask, may skip the mask, or can skip
// the tile entirely. Without kMask only the ragged kv edge is partial.
template <bool kMask>
__device__ __forceinline__ core::TileClass warp_tile_class(const core::MaskSpec& ms, const RowTile& rows, int key0,
                                                           int key1) {
  if (rows.token_end <= rows.token_begin) return core::TileClass::kHidden;
  if constexpr (kMask) {
    return core::classify_tile(ms, rows.token_begin, rows.token_end, key0, key1);
  } else {
    if (key0 >= ms.kv_len) return core::TileClass::kHidden;
    return key1 > ms.kv_len ? core::TileClass::kPartial : core::TileClass::kFull;
  }
}

template <class Cfg, class T, class KV, bool kMask, bool kSoftCap, bool kPaged, bool kCustomMask = false>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks)
    attention_kernel(const __grid_constant__ core::AttentionParams p, const __grid_constant__ core::FastDivmod group) {
  static_assert(!kCustomMask || (kMask && Cfg::kWarpsN == 1 && Cfg::kWarpRows <= 32),
                "custom masks: prefill tiles (one lane per token of a warp's rows), with the band mask on");
  using W = WarpShape<Cfg>;
  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int warp_m = warp % Cfg::kWarpsM, warp_n = warp / Cfg::kWarpsM;
  const int q_row0 = warp_m * Cfg::kWarpRows;  // this warp's rows within the tile
  const int key_off = warp_n * Cfg::kWarpKeys;

  const Request r = load_request(p, group, Cfg::kBlockM);
  const core::MaskSpec ms{r.qo_len, r.kv_len, kMask ? p.causal : false, kMask ? p.window_left : -1,
                          kMask ? p.window_right : -1};
  const RowTile cta_rows = row_tile_tokens(r.row_begin, r.row_begin + Cfg::kBlockM, group, r.qo_len);
  const core::TileSpan span = split_span(
      core::kv_tile_span(ms, cta_rows.token_begin, cta_rows.token_end, Cfg::kBlockN), p.num_kv_splits, r.split);
  const RowTile warp_rows =
      row_tile_tokens(r.row_begin + q_row0, r.row_begin + q_row0 + Cfg::kWarpRows, group, r.qo_len);

  // fp8 K: the logits are (q . k8) * k_scale * sm_scale; k_scale (read once, from the device
  // when given there) joins sm_scale, with the conversion's folded power of two.
  constexpr bool kFp8 = kIsFp8<KV>;
  float logit_scale = p.sm_scale;
  if constexpr (kFp8)
    logit_scale *= (p.k_scale_ptr != nullptr ? *p.k_scale_ptr : p.k_scale) * Fp8Convert<T, KV>::kScaleFold;
  LogitTransform lt;
  if constexpr (kSoftCap) {
    lt.scale2 = p.logits_soft_cap * core::kLog2e;
    lt.cap_mul = logit_scale / p.logits_soft_cap;
  } else {
    lt.scale2 = logit_scale * core::kLog2e;
    lt.cap_mul = 0.0f;
  }

  const uint32_t sq = smem_u32(smem);
  const uint32_t sk0 = sq + static_cast<uint32_t>(Cfg::kQBytes);
  const uint32_t sv0 = sk0 + static_cast<uint32_t>(Cfg::kStages * Cfg::kKVTileBytes);
  auto k_stage = [&](int s) { return sk0 + static_cast<uint32_t>(s * Cfg::kKVTileBytes); };
  auto v_stage = [&](int s) { return sv0 + static_cast<uint32_t>(s * Cfg::kKVTileBytes); };

  float o[W::kRowBlocks][W::kOTiles][4];
  RowStats st[W::kRowBlocks];
#pragma unroll
  for (int b = 0; b < W::kRowBlocks; ++b) {
#pragma unroll
    for (int n = 0; n < W::kOTiles; ++n) o[b][n][0] = o[b][n][1] = o[b][n][2] = o[b][n][3] = 0.0f;
    st[b] = RowStats{{core::neg_inf(), core::neg_inf()}, {0.0f, 0.0f}};
  }

  const int num_tiles = span.end - span.begin;
  if (num_tiles > 0) {  // uniform over the CTA
    const KVRows<kPaged> kv(p, r);
    load_q_tile<Cfg, T>(sq, p, group, r, tid);
    cp_async_commit();
    if constexpr (Cfg::kSingleV) {
      // K of the first tile; its V is loaded at the top of the loop.
      load_kv_tile<Cfg, KV, kPaged, kKOnly>(k_stage(0), v_stage(0), p, kv, r.kv_len, span.begin * Cfg::kBlockN, tid);
      cp_async_commit();
    } else {
#pragma unroll
      for (int s = 0; s < Cfg::kStages - 1; ++s) {
        if (s < num_tiles)
          load_kv_tile<Cfg, KV, kPaged>(k_stage(s), v_stage(s), p, kv, r.kv_len, (span.begin + s) * Cfg::kBlockN, tid);
        cp_async_commit();
      }
    }
    uint32_t qf[W::kRowBlocks][W::kKSteps][4];
    if constexpr (Cfg::kQInRegs || kFp8) {
      cp_async_wait<Cfg::kSingleV ? 1 : Cfg::kStages - 1>();  // the Q group
      __syncthreads();
    }
    if constexpr (kFp8) {
      deinterleave_q_tile<Cfg>(smem, tid);
      // From registers: read after this barrier; from shared memory: after the loop's first.
      if constexpr (Cfg::kQInRegs) __syncthreads();
    }
    if constexpr (Cfg::kQInRegs) load_q_regs<Cfg>(qf, sq, q_row0, lane);
    const uint8_t* mask_bits = nullptr;
    if constexpr (kCustomMask) mask_bits = request_mask_bits(p, r.request);

    for (int i = 0; i < num_tiles; ++i) {
      const int stage = i % Cfg::kStages;
      uint64_t mask_window = 0;  // this lane's token's bits of the warp's keys (custom mask)
      if constexpr (kCustomMask)
        mask_window = lane_mask_window<Cfg::kWarpKeys>(mask_bits, warp_rows.token_begin, warp_rows.token_end,
                                                       r.kv_len, (span.begin + i) * Cfg::kBlockN + key_off, lane);
      if constexpr (Cfg::kSingleV) {
        cp_async_wait<0>();  // K of tile i, the only group in flight
        __syncthreads();     // K of tile i visible; every warp is done with V and K of tile i - 1
        load_kv_tile<Cfg, KV, kPaged, kVOnly>(k_stage(0), v_stage(0), p, kv, r.kv_len, (span.begin + i) * Cfg::kBlockN,
                                             tid);
        cp_async_commit();
        if (i + 1 < num_tiles)
          load_kv_tile<Cfg, KV, kPaged, kKOnly>(k_stage(stage ^ 1), v_stage(0), p, kv, r.kv_len,
                                               (span.begin + i + 1) * Cfg::kBlockN, tid);
        cp_async_commit();  // possibly empty: the V wait below counts on one group after V's
      } else {
        cp_async_wait<Cfg::kStages - 2>();
        __syncthreads();  // tile i visible to all; every warp is done with tile i - 1's stage
        const int next = i + Cfg::kStages - 1;
        const int s = next % Cfg::kStages;
        if (next < num_tiles)
          load_kv_tile<Cfg, KV, kPaged>(k_stage(s), v_stage(s), p, kv, r.kv_len, (span.begin + next) * Cfg::kBlockN,
                                        tid);
        cp_async_commit();  // possibly empty: keeps the group count per iteration fixed
      }
      // Single V: V of tile i lands while Q K^T and the softmax run; every warp, hidden or
      // not, meets the barrier that makes it visible, so the barriers stay matched.
      auto wait_v = [] {
        if constexpr (Cfg::kSingleV) {
          cp_async_wait<1>();
          __syncthreads();
        }
      };
      const int key0 = (span.begin + i) * Cfg::kBlockN + key_off;  // this warp's first key
      core::TileClass cls = warp_tile_class<kMask>(ms, warp_rows, key0, key0 + Cfg::kWarpKeys);
      if constexpr (kCustomMask) {
        if (cls != core::TileClass::kHidden)
          cls = mask_tile_class<Cfg::kWarpKeys>(cls, mask_window, warp_rows.token_begin + lane < warp_rows.token_end);
      }
      if (cls == core::TileClass::kHidden) {  // warp-uniform
        wait_v();
        continue;
      }

      float s[W::kRowBlocks][W::kSTiles][4];
      if constexpr (kFp8) {
        warp_qk_fp8<Cfg, T, KV>(s, qf, sq, q_row0, k_stage(stage), key_off, lane);
      } else {
        warp_qk<Cfg, T>(s, qf, sq, q_row0, k_stage(stage), key_off, lane);
      }
#pragma unroll
      for (int b = 0; b < W::kRowBlocks; ++b) {
        if constexpr (kSoftCap) apply_soft_cap(s[b], lt.cap_mul);
        if (kCustomMask && cls == core::TileClass::kPartial) {
          // As below, and each row's bits from the lane that holds its token's window.
          int lo[2], hi[2];
          uint64_t win[2];
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int row = r.row_begin + q_row0 + 16 * b + (lane >> 2) + 8 * h;
            const bool valid = row < r.qo_len * r.group;
            const int token = valid ? group.div(row) : warp_rows.token_begin;
            const core::KVRange k = valid ? core::row_kv_range(ms, token) : core::KVRange{0, 0};
            lo[h] = k.first;
            hi[h] = k.last;
            win[h] = window_of_lane(mask_window, token - warp_rows.token_begin);
          }
          apply_mask_bits(s[b], key0, lane, lo, hi, win);
        } else if (cls == core::TileClass::kPartial) {
          // Each thread's two rows of block b (g and g + 8) and the keys they see;
          // recomputed here rather than held in registers through the loop.
          int lo[2], hi[2];
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int row = r.row_begin + q_row0 + 16 * b + (lane >> 2) + 8 * h;
            const core::KVRange k =
                row < r.qo_len * r.group ? core::row_kv_range(ms, group.div(row)) : core::KVRange{0, 0};
            lo[h] = k.first;
            hi[h] = k.last;
          }
          apply_mask(s[b], key0, lane, lo, hi);
        }
        online_softmax_update(s[b], o[b], st[b], lt.scale2);
      }
      wait_v();
      if constexpr (kFp8) {
        warp_pv_fp8<Cfg, T, KV>(o, s, v_stage(Cfg::kSingleV ? 0 : stage), key_off, lane);
      } else {
        warp_pv<Cfg, T>(o, s, v_stage(Cfg::kSingleV ? 0 : stage), key_off, lane);
      }
    }
    cp_async_wait<0>();
  }
  // fp8 V: O back in mma's column order, times v_scale (read once) and the folded power of
  // two. The LSE is that of the scaled logits already.
  if constexpr (kFp8)
    restore_o_layout<Cfg>(o, (p.v_scale_ptr != nullptr ? *p.v_scale_ptr : p.v_scale) * Fp8Convert<T, KV>::kScaleFold,
                          lane);

  // Re-read the work item rather than keep it in registers through the loop (the asm
  // memory clobbers of cp.async make this a real, L1-cached load).
  const Request re = load_request(p, group, Cfg::kBlockM);
  if constexpr (Cfg::kWarpsN == 1) {
    store_warp_rows<Cfg, T>(o, st, lt.scale2, p, group, re, smem, q_row0, lane);
  } else {
    __syncthreads();  // the K/V area becomes the combine buffer
    store_combined_rows<Cfg, T>(o[0], st[0], lt.scale2, p, group, re, reinterpret_cast<float*>(smem + Cfg::kQBytes),
                                warp_n, tid);
  }
}

}  // namespace flashband::sm80
