// One warp's two matrix products on its kRowBlocks x 16 query rows:
//   S[rows x kWarpKeys] = Q[rows x D] K^T   (K rows from shared memory, ldmatrix)
//   O[rows x D]        += P[rows x kWarpKeys] V   (V through ldmatrix.trans)
// Each K or V fragment is loaded once and used by every row block of the warp.
// Fragment layouts are mma.m16n8k16's: a thread (lane = 4g + t) holds rows g and g + 8,
// columns 2t and 2t + 1 of every 8-column block. S's accumulators become P's A operand
// without any shuffle.
#pragma once
#include "backends/cuda/numeric.cuh"
#include "backends/sm80/ptx.h"
#include "backends/sm80/smem_layout.h"

namespace flashband::sm80 {

template <class Cfg>
struct WarpShape {
  static constexpr int kRowBlocks = Cfg::kRowBlocks;  // m16 row blocks of the warp
  static constexpr int kKSteps = Cfg::kHeadDim / 16;  // k-steps of Q K^T
  static constexpr int kSTiles = Cfg::kWarpKeys / 8;  // n8 tiles of S (per row block)
  static constexpr int kOTiles = Cfg::kHeadDim / 8;   // n8 tiles of O (per row block)
};

// Q fragments of rows [row0, row0 + 16) for k-step ks.
template <class Cfg>
__device__ __forceinline__ void load_q_frag(uint32_t (&a)[4], uint32_t sq, int row0, int ks, int lane) {
  using Rows = SwizzledRows<Cfg::kHeadDim>;
  ldmatrix_x4(a, sq + Rows::offset(row0 + (lane & 15), ks * 2 + (lane >> 4)));
}

template <class Cfg>
__device__ __forceinline__ void load_q_regs(uint32_t (&qf)[WarpShape<Cfg>::kRowBlocks][WarpShape<Cfg>::kKSteps][4],
                                            uint32_t sq, int q_row0, int lane) {
#pragma unroll
  for (int b = 0; b < WarpShape<Cfg>::kRowBlocks; ++b)
#pragma unroll
    for (int ks = 0; ks < WarpShape<Cfg>::kKSteps; ++ks) load_q_frag<Cfg>(qf[b][ks], sq, q_row0 + 16 * b, ks, lane);
}

template <class Cfg>
__device__ __forceinline__ void zero_s_tiles(float (&s)[WarpShape<Cfg>::kRowBlocks][WarpShape<Cfg>::kSTiles][4]) {
#pragma unroll
  for (int b = 0; b < WarpShape<Cfg>::kRowBlocks; ++b)
#pragma unroll
    for (int n = 0; n < WarpShape<Cfg>::kSTiles; ++n) s[b][n][0] = s[b][n][1] = s[b][n][2] = s[b][n][3] = 0.0f;
}

// Q's A fragments of k-step ks for every row block: from qf (kQInRegs), or re-read from
// shared memory at q_off0 = this lane's k-step-0 address.
template <class Cfg>
__device__ __forceinline__ void q_step_frags(uint32_t (&a)[WarpShape<Cfg>::kRowBlocks][4],
                                             const uint32_t (&qf)[WarpShape<Cfg>::kRowBlocks][WarpShape<Cfg>::kKSteps][4],
                                             uint32_t sq, uint32_t q_off0, int ks) {
  using Rows = SwizzledRows<Cfg::kHeadDim>;
  if constexpr (Cfg::kQInRegs) {
#pragma unroll
    for (int b = 0; b < WarpShape<Cfg>::kRowBlocks; ++b)
#pragma unroll
      for (int i = 0; i < 4; ++i) a[b][i] = qf[b][ks][i];
  } else {
    const uint32_t qa = sq + Rows::step_offset(q_off0, ks);
#pragma unroll
    for (int b = 0; b < WarpShape<Cfg>::kRowBlocks; ++b)
      ldmatrix_x4(a[b], qa + static_cast<uint32_t>(b * 16 * Rows::kRowBytes));
  }
}

// s = Q K^T for keys [key0, key0 + kWarpKeys) of the K stage at sk, every row block. With
// kQInRegs the Q fragments come from qf; otherwise they are re-read from shared memory per
// k-step.
template <class Cfg, class T>
__device__ __forceinline__ void warp_qk(float (&s)[WarpShape<Cfg>::kRowBlocks][WarpShape<Cfg>::kSTiles][4],
                                        const uint32_t (&qf)[WarpShape<Cfg>::kRowBlocks][WarpShape<Cfg>::kKSteps][4],
                                        uint32_t sq, int q_row0, uint32_t sk, int key0, int lane) {
  using W = WarpShape<Cfg>;
  using Rows = SwizzledRows<Cfg::kHeadDim>;
  zero_s_tiles<Cfg>(s);
  // This lane's row addresses at k-step 0; k-step ks is an XOR away (step_offset), and
  // row block b / key block np are constant offsets.
  const uint32_t q_off0 = Rows::offset(q_row0 + (lane & 15), lane >> 4);
  const uint32_t k_off0 = Rows::offset(key0 + (lane & 7) + ((lane >> 4) << 3), (lane >> 3) & 1);
#pragma unroll
  for (int ks = 0; ks < W::kKSteps; ++ks) {
    uint32_t a[W::kRowBlocks][4];
    q_step_frags<Cfg>(a, qf, sq, q_off0, ks);
    const uint32_t ka = sk + Rows::step_offset(k_off0, ks);
#pragma unroll
    for (int np = 0; np < W::kSTiles / 2; ++np) {
      uint32_t k[4];
      ldmatrix_x4(k, ka + static_cast<uint32_t>(np * 16 * Rows::kRowBytes));
#pragma unroll
      for (int b = 0; b < W::kRowBlocks; ++b) {
        mma_16816<T>(s[b][2 * np], a[b], k[0], k[1]);
        mma_16816<T>(s[b][2 * np + 1], a[b], k[2], k[3]);
      }
    }
  }
}

// The A fragments of P V's 16-key step kk: S's accumulators of key tiles 2 kk and 2 kk + 1,
// packed to 16 bits (half the registers of S).
template <class Cfg, class T>
__device__ __forceinline__ void pack_p_frags(uint32_t (&a)[WarpShape<Cfg>::kRowBlocks][4],
                                             const float (&p)[WarpShape<Cfg>::kRowBlocks][WarpShape<Cfg>::kSTiles][4],
                                             int kk) {
#pragma unroll
  for (int b = 0; b < WarpShape<Cfg>::kRowBlocks; ++b) {
    a[b][0] = cuda::pack2<T>(p[b][2 * kk][0], p[b][2 * kk][1]);
    a[b][1] = cuda::pack2<T>(p[b][2 * kk][2], p[b][2 * kk][3]);
    a[b][2] = cuda::pack2<T>(p[b][2 * kk + 1][0], p[b][2 * kk + 1][1]);
    a[b][3] = cuda::pack2<T>(p[b][2 * kk + 1][2], p[b][2 * kk + 1][3]);
  }
}

// o += P V for keys [key0, key0 + kWarpKeys) of the V stage at sv; p holds probabilities
// in S's accumulator layout, packed to 16 bits first (pack_p_frags). The
// 16-key steps go outside the 16-column slices of V, so consecutive MMAs write different
// accumulators (2 row blocks x D / 8 of them between two writes of one) instead of walking
// one slice down the keys, where each MMA waited on the one before it and on its ldmatrix.
template <class Cfg, class T>
__device__ __forceinline__ void warp_pv(float (&o)[WarpShape<Cfg>::kRowBlocks][WarpShape<Cfg>::kOTiles][4],
                                        const float (&p)[WarpShape<Cfg>::kRowBlocks][WarpShape<Cfg>::kSTiles][4],
                                        uint32_t sv, int key0, int lane) {
  using W = WarpShape<Cfg>;
  using Rows = SwizzledRows<Cfg::kHeadDim>;
  constexpr int kKK = W::kSTiles / 2;  // k-steps of 16 keys
  const uint32_t v_off0 = Rows::offset(key0 + (lane & 7) + (((lane >> 3) & 1) << 3), lane >> 4);
#pragma unroll
  for (int kk = 0; kk < kKK; ++kk) {
    uint32_t a[W::kRowBlocks][4];
    pack_p_frags<Cfg, T>(a, p, kk);
    // Rows key + 16 kk share key's swizzle (16 is a multiple of 8).
    const uint32_t rows = sv + static_cast<uint32_t>(kk * 16 * Rows::kRowBytes);
#pragma unroll
    for (int dp = 0; dp < W::kOTiles / 2; ++dp) {
      uint32_t v[4];
      ldmatrix_x4_trans(v, rows + Rows::step_offset(v_off0, dp));
#pragma unroll
      for (int b = 0; b < W::kRowBlocks; ++b) {
        mma_16816<T>(o[b][2 * dp], a[b], v[0], v[1]);
        mma_16816<T>(o[b][2 * dp + 1], a[b], v[2], v[3]);
      }
    }
  }
}

}  // namespace flashband::sm80
