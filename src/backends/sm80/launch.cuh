// Host side of one kernel instantiation: the launch function the registry stores. It
// raises the shared-memory limit once, launches one CTA per work item on params.stream
// and, when the plan split the KV range, merges the partial states. No allocation, no
// synchronisation: safe to capture in a CUDA graph.
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "backends/cuda/check.h"
#include "backends/cuda/merge.h"
#include "backends/cuda/smem_limit.h"
#include "backends/sm80/attention_kernel.cuh"
#include "backends/sm80/request.h"
#include "core/params.h"
#include "flashband/error.h"

namespace flashband::sm80 {

// Split-KV partials (epilogue.h: floats at the start of the scratch, O then LSE) -> the
// problem's O and LSE.
inline void merge_splits(const core::AttentionParams& p) {
  const float* partial_o = static_cast<const float*>(p.scratch);
  const int64_t o_floats = p.total_qo_tokens * p.num_kv_splits * p.num_qo_heads * p.head_dim;
  cuda::merge_split_partials(p, partial_o, partial_o + o_floats, p.num_kv_splits);
}

// cp.async and the output stores move 16-byte chunks: every row of Q, K, V and O must start
// 16-byte aligned, so each stride must be a multiple of 8 elements (the pointers themselves
// are checked by validation).
inline void check_strides(const core::AttentionParams& p) {
  const struct {
    const char* name;
    int64_t stride;
  } strides[] = {{"q stride (tokens)", p.q_stride_n},     {"q stride (heads)", p.q_stride_h},
                 {"out stride (tokens)", p.o_stride_n},   {"out stride (heads)", p.o_stride_h},
                 {"k stride (pages)", p.k_stride_page},   {"k stride (tokens)", p.k_stride_n},
                 {"k stride (heads)", p.k_stride_h},      {"v stride (pages)", p.v_stride_page},
                 {"v stride (tokens)", p.v_stride_n},     {"v stride (heads)", p.v_stride_h}};
  for (const auto& s : strides)
    if (s.stride % 8 != 0)
      throw Error(ErrorCode::kInvalidArgument, std::string(s.name) + ": got " + std::to_string(s.stride) +
                                                   " elements, backend 'sm80' needs a multiple of 8 (16 bytes)");
}

template <class Cfg, class T, bool kMask, bool kSoftCap, bool kPaged>
void launch_attention(const core::AttentionParams& p) {
  check_strides(p);
  auto* kernel = &attention_kernel<Cfg, T, kMask, kSoftCap, kPaged>;
  static cuda::SmemLimit limit;
  limit.ensure(reinterpret_cast<const void*>(kernel), static_cast<int>(Cfg::kSmemBytes), "sm80 attention kernel");
  const int grid = p.work ? p.num_work_items : implicit_grid(p, Cfg::kBlockM);
  if (grid > 0) {
    const core::FastDivmod group = core::FastDivmod::make(p.num_qo_heads / p.num_kv_heads);
    kernel<<<grid, Cfg::kThreads, Cfg::kSmemBytes, static_cast<cudaStream_t>(p.stream)>>>(p, group);
    FB_CUDA_CHECK_LAUNCH("sm80 attention kernel");
  }
  if (p.num_kv_splits > 1 && p.total_qo_tokens > 0) merge_splits(p);
}

}  // namespace flashband::sm80
