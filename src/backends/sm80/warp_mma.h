// One warp's two matrix products on its 16 query rows:
//   S[16 x kWarpKeys] = Q[16 x D] K^T   (K rows from shared memory, ldmatrix)
//   O[16 x D]        += P[16 x kWarpKeys] V   (V through ldmatrix.trans)
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
  static constexpr int kKSteps = Cfg::kHeadDim / 16;  // k-steps of Q K^T
  static constexpr int kSTiles = Cfg::kWarpKeys / 8;  // n8 tiles of S
  static constexpr int kOTiles = Cfg::kHeadDim / 8;   // n8 tiles of O
};

// Q fragments of rows [q_row0, q_row0 + 16) for k-step ks.
template <class Cfg>
__device__ __forceinline__ void load_q_frag(uint32_t (&a)[4], uint32_t sq, int q_row0, int ks, int lane) {
  using Rows = SwizzledRows<Cfg::kHeadDim>;
  ldmatrix_x4(a, sq + Rows::offset(q_row0 + (lane & 15), ks * 2 + (lane >> 4)));
}

template <class Cfg>
__device__ __forceinline__ void load_q_regs(uint32_t (&qf)[WarpShape<Cfg>::kKSteps][4], uint32_t sq, int q_row0,
                                            int lane) {
#pragma unroll
  for (int ks = 0; ks < WarpShape<Cfg>::kKSteps; ++ks) load_q_frag<Cfg>(qf[ks], sq, q_row0, ks, lane);
}

// s = Q K^T for keys [key0, key0 + kWarpKeys) of the K stage at sk. With kQInRegs the
// fragments come from qf; otherwise they are re-read from shared memory per k-step.
template <class Cfg, class T>
__device__ __forceinline__ void warp_qk(float (&s)[WarpShape<Cfg>::kSTiles][4],
                                        const uint32_t (&qf)[WarpShape<Cfg>::kKSteps][4], uint32_t sq, int q_row0,
                                        uint32_t sk, int key0, int lane) {
  using W = WarpShape<Cfg>;
  using Rows = SwizzledRows<Cfg::kHeadDim>;
#pragma unroll
  for (int n = 0; n < W::kSTiles; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
  const int key = key0 + (lane & 7) + ((lane >> 4) << 3);
  const int khalf = (lane >> 3) & 1;
#pragma unroll
  for (int ks = 0; ks < W::kKSteps; ++ks) {
    uint32_t a[4];
    if constexpr (Cfg::kQInRegs) {
#pragma unroll
      for (int i = 0; i < 4; ++i) a[i] = qf[ks][i];
    } else {
      load_q_frag<Cfg>(a, sq, q_row0, ks, lane);
    }
#pragma unroll
    for (int np = 0; np < W::kSTiles / 2; ++np) {
      uint32_t b[4];
      ldmatrix_x4(b, sk + Rows::offset(key + np * 16, ks * 2 + khalf));
      mma_16816<T>(s[2 * np], a, b[0], b[1]);
      mma_16816<T>(s[2 * np + 1], a, b[2], b[3]);
    }
  }
}

// o += P V for keys [key0, key0 + kWarpKeys) of the V stage at sv; p holds probabilities
// in S's accumulator layout.
template <class Cfg, class T>
__device__ __forceinline__ void warp_pv(float (&o)[WarpShape<Cfg>::kOTiles][4],
                                        const float (&p)[WarpShape<Cfg>::kSTiles][4], uint32_t sv, int key0,
                                        int lane) {
  using W = WarpShape<Cfg>;
  using Rows = SwizzledRows<Cfg::kHeadDim>;
  const int key = key0 + (lane & 7) + (((lane >> 3) & 1) << 3);
  const int dhalf = lane >> 4;
#pragma unroll
  for (int kk = 0; kk < W::kSTiles / 2; ++kk) {
    const uint32_t a[4] = {cuda::pack2<T>(p[2 * kk][0], p[2 * kk][1]), cuda::pack2<T>(p[2 * kk][2], p[2 * kk][3]),
                           cuda::pack2<T>(p[2 * kk + 1][0], p[2 * kk + 1][1]),
                           cuda::pack2<T>(p[2 * kk + 1][2], p[2 * kk + 1][3])};
#pragma unroll
    for (int dp = 0; dp < W::kOTiles / 2; ++dp) {
      uint32_t b[4];
      ldmatrix_x4_trans(b, sv + Rows::offset(key + kk * 16, dp * 2 + dhalf));
      mma_16816<T>(o[2 * dp], a, b[0], b[1]);
      mma_16816<T>(o[2 * dp + 1], a, b[2], b[3]);
    }
  }
}

}  // namespace flashband::sm80
