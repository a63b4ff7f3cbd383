// Writing a CTA's finished rows. Without split-KV: O in the problem's dtype and the LSE
// into the caller's tensors. With split-KV: float32 partial O and LSE into the workspace
// scratch, laid out as merge_states' input, v [tokens, S, Hq, D] and s [tokens, S, Hq].
// Rows past the request's packed rows are never written.
#pragma once
#include "backends/cuda/numeric.cuh"
#include "backends/sm80/online_softmax.h"
#include "backends/sm80/request.h"
#include "backends/sm80/smem_layout.h"
#include "core/params.h"

namespace flashband::sm80 {

// Where packed row `row` of the request goes.
struct RowDest {
  int64_t o;    // element offset into O (or the partial O)
  int64_t lse;  // element offset into the LSE (or the partial LSE)
};

__device__ __forceinline__ RowDest row_dest(const core::AttentionParams& p, const core::FastDivmod& group,
                                            const Request& r, int row, bool split) {
  const RowCoord c = row_coord(r, group, row);
  const int64_t token = r.qo_begin + c.token;
  if (split) {
    const int64_t slot = (token * p.num_kv_splits + r.split) * p.num_qo_heads + c.head;
    return {slot * p.head_dim, slot};
  }
  return {token * p.o_stride_n + c.head * p.o_stride_h, token * p.lse_stride_n + c.head * p.lse_stride_h};
}

// Packed row `row`'s attention sink in base 2, or -inf: none given, a row past the request,
// or a split-KV partial (the merge folds the sink in once, after the splits; SPEC.md).
__device__ __forceinline__ float row_sink2(const core::AttentionParams& p, const core::FastDivmod& group,
                                           const Request& r, int row, bool split) {
  if (!p.sinks || split || row >= r.qo_len * r.group) return core::neg_inf();
  return core::sink_log2(p.sinks, row_coord(r, group, row).head);
}

__device__ __forceinline__ float* partial_o(const core::AttentionParams& p) { return static_cast<float*>(p.scratch); }
__device__ __forceinline__ float* partial_lse(const core::AttentionParams& p) {
  return static_cast<float*>(p.scratch) + p.total_qo_tokens * p.num_kv_splits * p.num_qo_heads * p.head_dim;
}

// Prefill (warps along M): each warp writes its own kWarpRows rows. The dtype output is
// staged through the warp's rows of the Q tile (only this warp ever read them) so global
// stores are 16 bytes wide; float32 partials go straight from registers (a quad covers one
// 32-byte sector per row).
template <class Cfg, class T>
__device__ __forceinline__ void store_warp_rows(
    const float (&o)[WarpShape<Cfg>::kRowBlocks][WarpShape<Cfg>::kOTiles][4],
    const RowStats (&st)[WarpShape<Cfg>::kRowBlocks], float scale2, const core::AttentionParams& p,
    const core::FastDivmod& group, const Request& r, unsigned char* sq, int q_row0, int lane) {
  using W = WarpShape<Cfg>;
  using Rows = SwizzledRows<Cfg::kHeadDim>;
  const bool split = p.num_kv_splits > 1;
  const int rows_total = r.qo_len * r.group;
  const int g = lane >> 2, t = lane & 3;
  float scale[W::kRowBlocks][2];
#pragma unroll
  for (int b = 0; b < W::kRowBlocks; ++b)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const core::SoftmaxState s = finish_row(st[b], h, scale2);
      const int row = r.row_begin + q_row0 + 16 * b + g + 8 * h;
      // The sink joins the denominator after the KV loop (a runtime branch, no new kernels).
      float lse = s.lse();
      scale[b][h] = s.output_scale();
      core::fold_sink(row_sink2(p, group, r, row, split), scale[b][h], lse);
      if (t != 0 || row >= rows_total) continue;
      const RowDest d = row_dest(p, group, r, row, split);
      if (split) {
        partial_lse(p)[d.lse] = lse;
      } else if (p.lse) {
        p.lse[d.lse] = lse;
      }
    }
  if (split) {
    float* po = partial_o(p);
#pragma unroll
    for (int b = 0; b < W::kRowBlocks; ++b)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = r.row_begin + q_row0 + 16 * b + g + 8 * h;
        if (row >= rows_total) continue;
        float* dst = po + row_dest(p, group, r, row, true).o + 2 * t;
#pragma unroll
        for (int n = 0; n < W::kOTiles; ++n)
          *reinterpret_cast<float2*>(dst + 8 * n) =
              make_float2(o[b][n][2 * h] * scale[b][h], o[b][n][2 * h + 1] * scale[b][h]);
      }
    return;
  }
  // Stage: element (row, 8n + 2t) sits at byte 4t of chunk n of the row. These are the
  // warp's own Q rows, last read by its ldmatrix; the barrier orders that read before the
  // overwrite across lanes explicitly (racecheck flags it otherwise).
  __syncwarp();
#pragma unroll
  for (int b = 0; b < W::kRowBlocks; ++b)
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int n = 0; n < W::kOTiles; ++n)
        *reinterpret_cast<uint32_t*>(sq + Rows::offset(q_row0 + 16 * b + g + 8 * h, n) + 4 * t) =
            cuda::pack2<T>(o[b][n][2 * h] * scale[b][h], o[b][n][2 * h + 1] * scale[b][h]);
  __syncwarp();
  T* out = static_cast<T*>(p.o);
  constexpr int kPerLane = Cfg::kWarpRows * Rows::kChunks / 32;
  static_assert(32 % Rows::kChunks == 0, "a lane keeps its chunk from row to row");
  // A lane's rows are kRowStep apart: when the group divides that, they share a query head
  // and their destinations a stride (as in load_q_tile).
  constexpr int kRowStep = 32 / Rows::kChunks;
  const int chunk = lane % Rows::kChunks, rr0 = lane / Rows::kChunks, first = r.row_begin + q_row0 + rr0;
  auto store_row = [&](int i, T* dst) {
    const uint4 v = *reinterpret_cast<const uint4*>(sq + Rows::offset(q_row0 + rr0 + i * kRowStep, chunk));
    *reinterpret_cast<uint4*>(dst) = v;
  };
  if (group_divides(r.group, kRowStep)) {
    T* dst = out + row_dest(p, group, r, first, false).o + chunk * 8;
    const int64_t step = static_cast<int64_t>(group.div(kRowStep)) * p.o_stride_n;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i, dst += step)
      if (first + i * kRowStep < rows_total) store_row(i, dst);
    return;
  }
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int row = first + i * kRowStep;
    if (row < rows_total) store_row(i, out + row_dest(p, group, r, row, false).o + chunk * 8);
  }
}

// Decode (warps along N): the warps hold partial states of the same 16 rows over different
// keys. They meet in shared memory (the K/V area, free after the main loop): maxima and
// denominators first, then each warp's O rescaled to the common max, summed by all
// threads and written 4 elements at a time.
template <class Cfg, class T>
__device__ __forceinline__ void store_combined_rows(const float (&o)[WarpShape<Cfg>::kOTiles][4], const RowStats& st,
                                                    float scale2, const core::AttentionParams& p,
                                                    const core::FastDivmod& group, const Request& r, float* buf,
                                                    int warp_n, int tid) {
  static_assert(Cfg::kWarpsM == 1, "the combine assumes one row block");
  using W = WarpShape<Cfg>;
  constexpr int D = Cfg::kHeadDim;
  constexpr int NW = Cfg::kWarpsN;
  float* red_o = buf;                   // [NW][16][D]
  float* red_m = buf + NW * 16 * D;     // [NW][16], base-2 units
  float* red_d = red_m + NW * 16;       // [NW][16]
  float* row_scale = red_d + NW * 16;   // [16]
  const int lane = tid & 31, g = lane >> 2, t = lane & 3;
  const bool split = p.num_kv_splits > 1;
  const int rows_total = r.qo_len * r.group;

  core::SoftmaxState own[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    own[h] = finish_row(st, h, scale2);
    if (t == 0) {
      red_m[warp_n * 16 + g + 8 * h] = own[h].m;
      red_d[warp_n * 16 + g + 8 * h] = own[h].d;
    }
  }
  __syncthreads();
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = g + 8 * h;
    float m = core::neg_inf();
#pragma unroll
    for (int w = 0; w < NW; ++w) m = fmaxf(m, red_m[w * 16 + row]);
    core::SoftmaxState all;
    all.m = m;
    all.d = 0.0f;
    if (m != core::neg_inf()) {
#pragma unroll
      for (int w = 0; w < NW; ++w) all.d += red_d[w * 16 + row] * fast_exp2(red_m[w * 16 + row] - m);
    }
    // This warp's weight relative to the common max (0 for a warp that saw nothing).
    const float f = m == core::neg_inf() ? 0.0f : fast_exp2(own[h].m - m);
    float* dst = red_o + (warp_n * 16 + row) * D + 2 * t;
#pragma unroll
    for (int n = 0; n < W::kOTiles; ++n)
      *reinterpret_cast<float2*>(dst + 8 * n) = make_float2(o[n][2 * h] * f, o[n][2 * h + 1] * f);
    if (warp_n == 0 && t == 0) {
      const int packed = r.row_begin + row;
      float scale = all.output_scale(), lse = all.lse();
      core::fold_sink(row_sink2(p, group, r, packed, split), scale, lse);
      row_scale[row] = scale;
      if (packed < rows_total) {
        const RowDest d = row_dest(p, group, r, packed, split);
        if (split) {
          partial_lse(p)[d.lse] = lse;
        } else if (p.lse) {
          p.lse[d.lse] = lse;
        }
      }
    }
  }
  __syncthreads();
  constexpr int kQuads = D / 4;
  for (int idx = tid; idx < 16 * kQuads; idx += Cfg::kThreads) {
    const int row = idx / kQuads, c = (idx % kQuads) * 4;
    const int packed = r.row_begin + row;
    if (packed >= rows_total) continue;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int w = 0; w < NW; ++w) {
      const float4 x = *reinterpret_cast<const float4*>(red_o + (w * 16 + row) * D + c);
      acc.x += x.x, acc.y += x.y, acc.z += x.z, acc.w += x.w;
    }
    const float s = row_scale[row];
    acc.x *= s, acc.y *= s, acc.z *= s, acc.w *= s;
    const RowDest d = row_dest(p, group, r, packed, split);
    if (split) {
      *reinterpret_cast<float4*>(partial_o(p) + d.o + c) = acc;
    } else {
      *reinterpret_cast<uint2*>(static_cast<T*>(p.o) + d.o + c) =
          make_uint2(cuda::pack2<T>(acc.x, acc.y), cuda::pack2<T>(acc.z, acc.w));
    }
  }
}

}  // namespace flashband::sm80
