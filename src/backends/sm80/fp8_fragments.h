// fp8 K/V (e4m3, e5m2) on the 16-bit MMA: K and V stay fp8 in shared memory (the cp.async
// ring moves half the bytes) and are converted to q's dtype in registers, fragment by
// fragment, right after ldmatrix. Nothing is converted twice per warp and nothing goes back
// to shared memory, so decode keeps one barrier per tile and no extra smem traffic.
//
// ldmatrix on a tile of 1-byte elements hands each thread 4 consecutive bytes, not the
// m16n8k16 B layout, so both products run in a permuted order that the data fixes once:
// - Q K^T: thread (g, t) of K row g gets dims 4t..4t+3 of a 16-dim k-step. Bytes {0, 2} go
//   to b0 (mma k = 2t, 2t+1) and bytes {1, 3} to b1 (k = 2t+8, 2t+9); the sum over k does not
//   care, provided Q's k order matches: each 16-dim group of the Q tile is rewritten once per
//   CTA as its even dims then its odd dims (deinterleave_q_tile).
// - P V: ldmatrix.trans of 16-bit units gives thread (g, t) keys 2t, 2t+1 of dims 2g, 2g+1.
//   Bytes {0, 2} (dim 2g) and {1, 3} (dim 2g+1) are two n8 tiles of O whose column g is an
//   even or an odd dim; restore_o_layout moves O back to mma's column order once, after the
//   loop, so the epilogue and split-KV partials are the 16-bit kernels' own.
// The conversion (fp8_bits.h) moves exponent and mantissa bits into place, which yields the
// value times 2^-(bias difference), and writes NaN and Inf codes as NaN and Inf. For fp16 that
// factor is folded into k_scale and v_scale (exact powers of two; e4m3 subnormals become fp16
// subnormals, still exact; NaN and Inf times a scale stay so); for bf16 it would push products
// into float32's subnormal range, so each pair is multiplied back (HMUL2, exact).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <type_traits>

#include "backends/sm80/fp8_bits.h"
#include "backends/sm80/ptx.h"
#include "backends/sm80/smem_layout.h"
#include "backends/sm80/warp_mma.h"
#include "flashband/tensor.h"

namespace flashband::sm80 {

template <class KV>
struct Fp8Format;
template <>
struct Fp8Format<__nv_fp8_e4m3> {
  static constexpr DType kDType = DType::kE4M3;
};
template <>
struct Fp8Format<__nv_fp8_e5m2> {
  static constexpr DType kDType = DType::kE5M2;
};

template <class KV>
constexpr bool kIsFp8 = false;
template <>
inline constexpr bool kIsFp8<__nv_fp8_e4m3> = true;
template <>
inline constexpr bool kIsFp8<__nv_fp8_e5m2> = true;

template <class T>
constexpr DType kHalfDType = std::is_same_v<T, __half> ? DType::kF16 : DType::kBF16;

// fp8 (KV) -> T, four at a time: fp8_bits.h places the bits (NaN and Inf included), bf16
// multiplies the power of two back.
template <class T, class KV>
struct Fp8Convert : Fp8Bits<kHalfDType<T>, Fp8Format<KV>::kDType> {
  using Bits = Fp8Bits<kHalfDType<T>, Fp8Format<KV>::kDType>;
  __device__ __forceinline__ static uint32_t unfold(uint32_t h) {
    if constexpr (Bits::kFoldIntoScales) {
      return h;
    } else {
      __nv_bfloat162 x = *reinterpret_cast<const __nv_bfloat162*>(&h);
      x = __hmul2(x, __float2bfloat162_rn(Bits::kUnfold));
      return *reinterpret_cast<const uint32_t*>(&x);
    }
  }
  // x = bytes b0 b1 b2 b3 -> even = (b0, b2), odd = (b1, b3) as T pairs (low half first).
  __device__ __forceinline__ static void split(uint32_t x, uint32_t& even, uint32_t& odd) {
    even = unfold(Bits::place(x << 8));
    odd = unfold(Bits::place(x));
  }
};

// Rewrites every 16-dim group of every Q row as (dims 0, 2, .., 14, dims 1, 3, .., 15), the
// k order the fp8 K fragments arrive in. Once per CTA, between two barriers.
template <class Cfg>
__device__ __forceinline__ void deinterleave_q_tile(unsigned char* smem, int tid) {
  using Rows = SwizzledRows<Cfg::kHeadDim>;
  constexpr int kGroups = Cfg::kHeadDim / 16;
  for (int i = tid; i < Cfg::kBlockM * kGroups; i += Cfg::kThreads) {
    const int row = i / kGroups, grp = i % kGroups;
    uint4* lo = reinterpret_cast<uint4*>(smem + Rows::offset(row, 2 * grp));
    uint4* hi = reinterpret_cast<uint4*>(smem + Rows::offset(row, 2 * grp + 1));
    const uint4 a = *lo, b = *hi;  // words: element pairs (0,1) (2,3) .. (14,15)
    *lo = make_uint4(__byte_perm(a.x, a.y, 0x5410), __byte_perm(a.z, a.w, 0x5410), __byte_perm(b.x, b.y, 0x5410),
                     __byte_perm(b.z, b.w, 0x5410));
    *hi = make_uint4(__byte_perm(a.x, a.y, 0x7632), __byte_perm(a.z, a.w, 0x7632), __byte_perm(b.x, b.y, 0x7632),
                     __byte_perm(b.z, b.w, 0x7632));
  }
}

// s = Q K^T for keys [key0, key0 + kWarpKeys) of the fp8 K stage at sk (Q deinterleaved).
// One ldmatrix.x4 covers 32 keys of a k-step (x2: 16 keys).
template <class Cfg, class T, class KV>
__device__ __forceinline__ void warp_qk_fp8(float (&s)[WarpShape<Cfg>::kRowBlocks][WarpShape<Cfg>::kSTiles][4],
                                            const uint32_t (&qf)[WarpShape<Cfg>::kRowBlocks][WarpShape<Cfg>::kKSteps][4],
                                            uint32_t sq, int q_row0, uint32_t sk, int key0, int lane) {
  using W = WarpShape<Cfg>;
  using Rows = SwizzledRows<Cfg::kHeadDim>;
  using KRows = SwizzledBytes<Cfg::kHeadDim>;
  using Cvt = Fp8Convert<T, KV>;
  constexpr int kQuads = W::kSTiles / 4;  // 32-key groups
  static_assert(W::kSTiles % 4 == 0 || W::kSTiles == 2, "keys per warp: a multiple of 32, or 16");
  zero_s_tiles<Cfg>(s);
  const uint32_t q_off0 = Rows::offset(q_row0 + (lane & 15), lane >> 4);
  const uint32_t k_off0 = KRows::offset(key0 + (lane & (kQuads > 0 ? 31 : 15)), 0);
  auto mma_keys = [&](int n, uint32_t frag, const uint32_t (&a)[W::kRowBlocks][4]) {
    uint32_t b0, b1;
    Cvt::split(frag, b0, b1);
#pragma unroll
    for (int b = 0; b < W::kRowBlocks; ++b) mma_16816<T>(s[b][n], a[b], b0, b1);
  };
#pragma unroll
  for (int ks = 0; ks < W::kKSteps; ++ks) {
    uint32_t a[W::kRowBlocks][4];
    q_step_frags<Cfg>(a, qf, sq, q_off0, ks);
    const uint32_t ka = sk + KRows::chunk_offset(k_off0, ks);
    if constexpr (kQuads > 0) {
#pragma unroll
      for (int nq = 0; nq < kQuads; ++nq) {
        uint32_t k[4];
        ldmatrix_x4(k, ka + static_cast<uint32_t>(nq * 32 * KRows::kRowBytes));
#pragma unroll
        for (int i = 0; i < 4; ++i) mma_keys(4 * nq + i, k[i], a);
      }
    } else {
      uint32_t k[2];
      ldmatrix_x2(k, ka);
      mma_keys(0, k[0], a);
      mma_keys(1, k[1], a);
    }
  }
}

// o += P V for keys [key0, key0 + kWarpKeys) of the fp8 V stage at sv. One
// ldmatrix.x4.trans covers 16 keys x 32 dims: O tiles 4c .. 4c + 3 hold dims
// {32c + 2j, 32c + 2j + 1, 32c + 16 + 2j, 32c + 17 + 2j} in column j until restore_o_layout.
template <class Cfg, class T, class KV>
__device__ __forceinline__ void warp_pv_fp8(float (&o)[WarpShape<Cfg>::kRowBlocks][WarpShape<Cfg>::kOTiles][4],
                                            const float (&p)[WarpShape<Cfg>::kRowBlocks][WarpShape<Cfg>::kSTiles][4],
                                            uint32_t sv, int key0, int lane) {
  using W = WarpShape<Cfg>;
  using VRows = SwizzledBytes<Cfg::kHeadDim>;
  using Cvt = Fp8Convert<T, KV>;
  constexpr int kKK = W::kSTiles / 2;  // k-steps of 16 keys
  const uint32_t v_off0 = VRows::offset(key0 + (lane & 7) + (((lane >> 3) & 1) << 3), lane >> 4);
#pragma unroll
  for (int kk = 0; kk < kKK; ++kk) {
    uint32_t a[W::kRowBlocks][4];
    pack_p_frags<Cfg, T>(a, p, kk);
    const uint32_t rows = sv + static_cast<uint32_t>(kk * 16 * VRows::kRowBytes);
#pragma unroll
    for (int c = 0; c < W::kOTiles / 4; ++c) {
      uint32_t v[4];  // keys 0-7 / 8-15 of chunk 2c, then of chunk 2c + 1
      ldmatrix_x4_trans(v, rows + VRows::step_offset(v_off0, c));
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        uint32_t even0, odd0, even1, odd1;
        Cvt::split(v[2 * half], even0, odd0);
        Cvt::split(v[2 * half + 1], even1, odd1);
#pragma unroll
        for (int b = 0; b < W::kRowBlocks; ++b) {
          mma_16816<T>(o[b][4 * c + 2 * half], a[b], even0, even1);
          mma_16816<T>(o[b][4 * c + 2 * half + 1], a[b], odd0, odd1);
        }
      }
    }
  }
}

// O tiles (2c, 2c + 1) as warp_pv_fp8 leaves them: thread t holds dims 16c + 4t .. 4t + 3 of
// its rows as (o[2c][e], o[2c+1][e], o[2c][e+1], o[2c+1][e+1]). mma's order wants dims
// 16c + 2t, 2t + 1 and 16c + 8 + 2t, 9 + 2t, held by lanes t / 2 and 2 + t / 2 of the quad.
// Once per CTA, also multiplies by `scale` (v_scale and the folded power of two).
template <class Cfg>
__device__ __forceinline__ void restore_o_layout(float (&o)[WarpShape<Cfg>::kRowBlocks][WarpShape<Cfg>::kOTiles][4],
                                                 float scale, int lane) {
  using W = WarpShape<Cfg>;
  const int t = lane & 3;
  const int src_lo = (lane & ~3) | (t >> 1), src_hi = src_lo + 2;
  const bool odd = (t & 1) != 0;
#pragma unroll
  for (int b = 0; b < W::kRowBlocks; ++b)
#pragma unroll
    for (int c = 0; c < W::kOTiles / 2; ++c)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float a[4] = {o[b][2 * c][2 * h], o[b][2 * c + 1][2 * h], o[b][2 * c][2 * h + 1],
                            o[b][2 * c + 1][2 * h + 1]};
        float lo[4], hi[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          lo[j] = __shfl_sync(0xffffffffu, a[j], src_lo);
          hi[j] = __shfl_sync(0xffffffffu, a[j], src_hi);
        }
        o[b][2 * c][2 * h] = (odd ? lo[2] : lo[0]) * scale;
        o[b][2 * c][2 * h + 1] = (odd ? lo[3] : lo[1]) * scale;
        o[b][2 * c + 1][2 * h] = (odd ? hi[2] : hi[0]) * scale;
        o[b][2 * c + 1][2 * h + 1] = (odd ? hi[3] : hi[1]) * scale;
      }
}

}  // namespace flashband::sm80
