// The persistent grid's schedule: in round r the CTAs take units r * gridDim.x ... + gridDim.x
// - 1, in alternating direction (boustrophedon): CTA b takes r * G + b in even rounds and
// r * G + G - 1 - b in odd ones. The planner sorted the items longest-first in cost
// buckets (work_list.h), so long units go out first, and the alternation keeps any CTA from
// taking the longest unit of every round. Producer and consumers of a CTA walk the same sequence independently; they meet
// only at the shared-memory barriers.
#pragma once
#include "backends/sm90/kernel_params.h"
#include "core/mask.h"

namespace flashband::sm90 {

// The unit this CTA processes in round `round` (>= num_units: the CTA is done).
__device__ __forceinline__ int unit_of_round(int round) {
  const int g = static_cast<int>(gridDim.x), b = static_cast<int>(blockIdx.x);
  return round * g + ((round & 1) ? g - 1 - b : b);
}

struct Unit {
  WorkItem item;
  int head;
  __device__ __forceinline__ bool empty() const { return item.n_end <= item.n_begin; }
};

template <int kBlockM, int kBlockN>
__device__ __forceinline__ Unit load_unit(const KernelParams& p, int u) {
  int index;
  Unit t;
  p.qo_heads_div.divmod(u, index, t.head);
  if (p.items) {
    t.item = p.items[index];
  } else {
    // One request: the last query tile first, since under a causal mask it is the longest.
    const int m_blocks = (p.single_qo_len + kBlockM - 1) / kBlockM;
    const int mb = m_blocks - 1 - index;
    const core::MaskSpec spec{p.single_qo_len, p.single_kv_len, p.causal, p.window_left, p.window_right};
    const core::TileSpan span = core::kv_tile_span(spec, mb * kBlockM, (mb + 1) * kBlockM, kBlockN);
    t.item = WorkItem{0, p.single_qo_len, 0, p.single_kv_len, mb, span.begin, span.end, -1};
  }
  return t;
}

// Brings unit u's work item into L1 ahead of its load_unit (a no-op for a single request,
// whose items are derived, and past the last unit). The item is read once per unit by the
// producer and the consumers, each time on the critical path of the unit's start.
__device__ __forceinline__ void prefetch_unit(const KernelParams& p, int u) {
  if (p.items != nullptr && u < p.num_units)
    asm volatile("prefetch.global.L1 [%0];" ::"l"(p.items + p.qo_heads_div.div(u)));
}

}  // namespace flashband::sm90
