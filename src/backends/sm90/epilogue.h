// Writes a consumer thread's finished rows: O = acc / sum in the output dtype plus the
// base-2 LSE, or, for a split-KV item, the float32 partial state that the merge combines.
// Rows past the request's qo_len are never written; rows that saw no key get exact 0 and
// -inf. O goes out 16 bytes per lane after a transpose within each quad; the float32
// partial states as pairs of adjacent columns straight from registers.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cute/tensor.hpp>

#include "backends/sm90/fragment.h"
#include "backends/sm90/kernel_params.h"
#include "backends/sm90/schedule.h"
#include "backends/sm90/softmax.h"

namespace flashband::sm90 {

template <class Element>
__device__ __forceinline__ uint32_t pack2(float a, float b) {
  if constexpr (cute::is_same_v<Element, cute::bfloat16_t>) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(a, b);
    return *reinterpret_cast<const uint32_t*>(&v);
  } else {
    const __half2 v = __floats2half2_rn(a, b);
    return *reinterpret_cast<const uint32_t*>(&v);
  }
}

// The 4 x 4 transpose of 32-bit words across a quad: lane q holds word i of column
// block i (its two columns of that block); afterwards lane q holds the 4 words of block q
// in column order (lane k's columns first for k = 0..3), 16 contiguous bytes. Two xor
// rounds: in round m, the word whose index differs from the lane in bit m swaps with the
// partner's (element (lane, i) ends at (i, lane)).
__device__ __forceinline__ void quad_transpose(uint32_t (&w)[4]) {
  const int q = threadIdx.x % 4;
#pragma unroll
  for (int m = 1; m <= 2; m <<= 1) {
    const bool upper = (q & m) != 0;
#pragma unroll
    for (int i0 = 0; i0 < 4; ++i0) {
      if (i0 & m) continue;
      const int i1 = i0 | m;
      const uint32_t sent = __shfl_xor_sync(0xffffffffu, upper ? w[i0] : w[i1], m);
      if (upper) w[i0] = sent;
      else w[i1] = sent;
    }
  }
}

// o, c: (rows, cols) views of the output accumulator and of its (row, col) coordinates in
// the query tile; fin: RowSoftmax::finish of each row, computed by the caller (its quad
// shuffles can run while the last P V is still in flight).
template <class Element, int kRows, class TensorO, class TensorC>
__device__ __forceinline__ void store_rows(const KernelParams& p, const Unit& t, int tile_row0, const TensorO& o,
                                           const TensorC& c, const RowFinal (&fin)[kRows],
                                           int head_dim) {
  const WorkItem& it = t.item;
  const bool quad_leader = (threadIdx.x % 4) == 0;
  if (it.split < 0) {
    // 16-byte stores (o and its strides are 16-byte aligned: make_kernel_params): a quad's
    // 4-byte pairs of 4 column blocks are transposed so that each lane writes one block's 8
    // columns (a warp instruction: 8 rows x 64 contiguous bytes, whole sectors, instead of
    // 8 rows x 16 bytes; findings F11). Every lane shuffles; rows past qo_len only skip the
    // stores.
    // The thread's first column is 2 * (lane % 4): the warpgroups tile the query rows only
    // (kernel_traits.h WarpgroupLayout), so every thread's columns start in block 0.
    constexpr int kBlocks = decltype(cute::size<1>(o))::value / 2;  // 8-column blocks
    static_assert(kBlocks % 4 == 0);
    const int q = threadIdx.x % 4;
    // The unit's one query head has one sink, joined to each row after the KV loop (a runtime
    // branch, no new kernels; SPEC.md "Attention sinks").
    const float sink2 = core::sink_log2(p.sinks, t.head);
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      RowFinal f = fin[r];
      core::fold_sink(sink2, f.scale, f.lse);
      const int row = tile_row0 + cute::get<0>(c(r, 0));
      const bool live = row < it.qo_len;
      const int64_t token = static_cast<int64_t>(it.qo_start) + row;
      Element* dst = static_cast<Element*>(p.o) + token * p.o_stride_n + static_cast<int64_t>(t.head) * p.o_stride_h;
#pragma unroll
      for (int g = 0; g < kBlocks / 4; ++g) {
        uint32_t w[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int j = 2 * (4 * g + i);
          // Rows that saw no key are exact zeros even where a hidden V row holds inf or NaN,
          // or O was never written (an empty unit, consumer.h kFreshPV).
          w[i] = f.scale == 0.0f ? 0u : pack2<Element>(o(r, j) * f.scale, o(r, j + 1) * f.scale);
        }
        quad_transpose(w);
        if (live) *reinterpret_cast<uint4*>(dst + 8 * (4 * g + q)) = make_uint4(w[0], w[1], w[2], w[3]);
      }
      if (live && p.lse && quad_leader)
        p.lse[token * p.lse_stride_n + static_cast<int64_t>(t.head) * p.lse_stride_h] = f.lse;
    }
    return;
  }
  // A split-KV item's float32 partial state: adjacent column pairs straight from registers
  // (a quad's four 8-byte stores are one 32-byte sector).
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const auto& f = fin[r];
    const int row = tile_row0 + cute::get<0>(c(r, 0));
    if (row >= it.qo_len) continue;
    const int64_t token = static_cast<int64_t>(it.qo_start) + row;
    const int64_t state = (token * p.num_splits + it.split) * p.num_qo_heads + t.head;
    // One row pointer with immediate offsets (acc_col_offset).
    float* dst = p.partial_o + state * head_dim + cute::get<1>(c(r, 0));
#pragma unroll
    for (int j = 0; j < cute::size<1>(o); j += 2)
      *reinterpret_cast<float2*>(dst + acc_col_offset(j)) =
          f.scale == 0.0f ? make_float2(0.0f, 0.0f) : make_float2(o(r, j) * f.scale, o(r, j + 1) * f.scale);
    if (quad_leader) p.partial_lse[state] = f.lse;
  }
}

}  // namespace flashband::sm90
