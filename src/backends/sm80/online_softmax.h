// The online softmax of one warp's two rows per thread, in registers, base 2.
// Logits are kept in "x units": x = q.k without a soft cap, x = tanh(q.k * sm_scale / cap)
// with one; the base-2 logit is x * scale2 (scale2 = sm_scale * log2 e, or cap * log2 e),
// so each probability costs one FFMA and one ex2: p = 2^(x * scale2 - m * scale2).
// Masked logits are -inf; every place where -inf - -inf could occur is guarded, so a row
// that has seen no visible key keeps m = -inf, d = 0 and an all-zero accumulator.
#pragma once
#include "backends/sm80/ptx.h"
#include "backends/sm80/warp_mma.h"
#include "core/state.h"

namespace flashband::sm80 {

struct RowStats {
  float m[2];  // running max, x units (-inf while nothing visible)
  float d[2];  // this thread's share of the running denominator (summed over the quad at the end)
};

struct LogitTransform {
  float scale2;   // base-2 factor applied to x
  float cap_mul;  // sm_scale / cap (soft cap only)
};

// Key columns of element (n, e) of S: key0 + 8n + 2t + (e & 1); row half r = e >> 1.
// lo/hi: each row's visible keys [lo, hi) (core::row_kv_range).
template <int kSTiles>
__device__ __forceinline__ void apply_mask(float (&s)[kSTiles][4], int key0, int lane, const int (&lo)[2],
                                           const int (&hi)[2]) {
  const int kbase = key0 + 2 * (lane & 3);
#pragma unroll
  for (int n = 0; n < kSTiles; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int key = kbase + 8 * n + (e & 1);
      const int r = e >> 1;
      if (key < lo[r] || key >= hi[r]) s[n][e] = core::neg_inf();
    }
}

template <int kSTiles>
__device__ __forceinline__ void apply_soft_cap(float (&s)[kSTiles][4], float cap_mul) {
#pragma unroll
  for (int n = 0; n < kSTiles; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) s[n][e] = tanhf(s[n][e] * cap_mul);
}

// Pairwise reductions of a row's per-tile parts: log2(n) dependent steps instead of n, which
// shortens the softmax, the one phase of a tile in which the warp issues no MMA.
template <int N>
__device__ __forceinline__ float tree_max(float (&v)[N]) {
#pragma unroll
  for (int w = 1; w < N; w *= 2)
#pragma unroll
    for (int n = 0; n + w < N; n += 2 * w) v[n] = fmaxf(v[n], v[n + w]);
  return v[0];
}
template <int N>
__device__ __forceinline__ float tree_sum(float (&v)[N]) {
#pragma unroll
  for (int w = 1; w < N; w *= 2)
#pragma unroll
    for (int n = 0; n + w < N; n += 2 * w) v[n] += v[n + w];
  return v[0];
}

// Folds one tile into the running state: updates m and d, rescales o when m moved (skipped
// when no row of the warp moved), and turns s into probabilities (unnormalised, relative to
// m).
template <int kSTiles, int kOTiles>
__device__ __forceinline__ void online_softmax_update(float (&s)[kSTiles][4], float (&o)[kOTiles][4], RowStats& st,
                                                      float scale2) {
  float factor[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float part[kSTiles];
#pragma unroll
    for (int n = 0; n < kSTiles; ++n) part[n] = fmaxf(s[n][2 * r], s[n][2 * r + 1]);
    float mx = tree_max(part);
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    // m = -inf with mx finite: +inf > slack, so m moves and factor = 2^-inf = 0. mx = -inf
    // (nothing visible in this tile): -inf or NaN, never > slack, so m stays.
    factor[r] = 1.0f;
    if ((mx - st.m[r]) * scale2 > core::kMaxSlack) {
      factor[r] = fast_exp2((st.m[r] - mx) * scale2);
      st.m[r] = mx;
    }
    // m = -inf here only if every logit so far, this tile's included, was -inf: p = 0.
    const float msc = st.m[r] == core::neg_inf() ? 0.0f : st.m[r] * scale2;
#pragma unroll
    for (int n = 0; n < kSTiles; ++n) {
      s[n][2 * r] = fast_exp2(fmaf(s[n][2 * r], scale2, -msc));
      s[n][2 * r + 1] = fast_exp2(fmaf(s[n][2 * r + 1], scale2, -msc));
      part[n] = s[n][2 * r] + s[n][2 * r + 1];
    }
    st.d[r] = fmaf(st.d[r], factor[r], tree_sum(part));
  }
  if (__any_sync(0xffffffffu, factor[0] != 1.0f || factor[1] != 1.0f)) {
#pragma unroll
    for (int n = 0; n < kOTiles; ++n) {
      o[n][0] *= factor[0];
      o[n][1] *= factor[0];
      o[n][2] *= factor[1];
      o[n][3] *= factor[1];
    }
  }
}

// The finished row as core::SoftmaxState (base-2 units), so the empty-row rules (output 0,
// LSE -inf) are core's. Sums d over the quad first.
__device__ __forceinline__ core::SoftmaxState finish_row(const RowStats& st, int r, float scale2) {
  float d = st.d[r];
  d += __shfl_xor_sync(0xffffffffu, d, 1);
  d += __shfl_xor_sync(0xffffffffu, d, 2);
  core::SoftmaxState out;
  out.m = st.m[r] == core::neg_inf() ? core::neg_inf() : st.m[r] * scale2;
  out.d = d;
  return out;
}

}  // namespace flashband::sm80
