// Writes a consumer thread's finished rows: O = acc / sum in the output dtype plus the
// base-2 LSE, or, for a split-KV item, the float32 partial state that the merge combines.
// Rows past the request's qo_len are never written; rows that saw no key get exact 0 and
// -inf. Each thread stores pairs of adjacent columns straight from registers.
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

// o, c: (rows, cols) views of the output accumulator and of its (row, col) coordinates in
// the query tile; fin: RowSoftmax::finish of each row, computed by the caller (its quad
// shuffles can run while the last P V is still in flight).
template <class Element, int kRows, class TensorO, class TensorC>
__device__ __forceinline__ void store_rows(const KernelParams& p, const Unit& t, int tile_row0, const TensorO& o,
                                           const TensorC& c, const RowFinal (&fin)[kRows],
                                           int head_dim) {
  const WorkItem& it = t.item;
  const bool quad_leader = (threadIdx.x % 4) == 0;
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const auto& f = fin[r];
    const int row = tile_row0 + cute::get<0>(c(r, 0));
    if (row >= it.qo_len) continue;
    const int64_t token = static_cast<int64_t>(it.qo_start) + row;
    // One row pointer with immediate offsets (acc_col_offset), and one branch per row for
    // the rows that saw no key (exact zeros even where a hidden V row holds inf or NaN).
    const int col0 = cute::get<1>(c(r, 0));
    auto store = [&](auto* dst, auto pack) {
      using Pair = decltype(pack(0.0f, 0.0f));
      if (f.scale == 0.0f) {
#pragma unroll
        for (int j = 0; j < cute::size<1>(o); j += 2) *reinterpret_cast<Pair*>(dst + acc_col_offset(j)) = pack(0.0f, 0.0f);
      } else {
#pragma unroll
        for (int j = 0; j < cute::size<1>(o); j += 2)
          *reinterpret_cast<Pair*>(dst + acc_col_offset(j)) = pack(o(r, j) * f.scale, o(r, j + 1) * f.scale);
      }
    };
    if (it.split < 0) {
      store(static_cast<Element*>(p.o) + token * p.o_stride_n + static_cast<int64_t>(t.head) * p.o_stride_h + col0,
            [](float a, float b) { return pack2<Element>(a, b); });
      if (p.lse && quad_leader) p.lse[token * p.lse_stride_n + static_cast<int64_t>(t.head) * p.lse_stride_h] = f.lse;
    } else {
      const int64_t state = (token * p.num_splits + it.split) * p.num_qo_heads + t.head;
      store(p.partial_o + state * head_dim + col0, [](float a, float b) { return make_float2(a, b); });
      if (quad_leader) p.partial_lse[state] = f.lse;
    }
  }
}

}  // namespace flashband::sm90
