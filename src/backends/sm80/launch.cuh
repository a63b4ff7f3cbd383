// Host side of one kernel instantiation: the launch function the registry stores. It
// raises the shared-memory limit once, launches one CTA per work item on params.stream
// and, when the plan split the KV range, merges the partial states. No allocation, no
// synchronisation: safe to capture in a CUDA graph.
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "backends/cuda/check.h"
#include "backends/cuda/merge.h"
#include "backends/cuda/numeric.cuh"
#include "backends/cuda/smem_limit.h"
#include "backends/sm80/attention_kernel.cuh"
#include "backends/sm80/request.h"
#include "core/params.h"
#include "flashband/error.h"
#include "flashband/tensor.h"

namespace flashband::sm80 {

// Split-KV partials (epilogue.h: floats at the start of the scratch, O then LSE) -> the
// problem's O and LSE.
inline void merge_splits(const core::AttentionParams& p) {
  const float* partial_o = static_cast<const float*>(p.scratch);
  const int64_t o_floats = p.total_qo_tokens * p.num_kv_splits * p.num_qo_heads * p.head_dim;
  cuda::merge_split_partials(p, partial_o, partial_o + o_floats, p.num_kv_splits);
}

// cp.async and the output stores move 16-byte chunks: every row of Q, K, V and O must start
// 16-byte aligned, so each stride must be a multiple of 16 bytes: 8 16-bit elements, 16 fp8
// ones (the pointers themselves are checked by validation).
inline void check_strides(const core::AttentionParams& p, int kv_elem_bytes) {
  const int kv_multiple = 16 / kv_elem_bytes;
  const struct {
    const char* name;
    int64_t stride;
    int multiple;
  } strides[] = {{"q stride (tokens)", p.q_stride_n, 8},
                 {"q stride (heads)", p.q_stride_h, 8},
                 {"out stride (tokens)", p.o_stride_n, 8},
                 {"out stride (heads)", p.o_stride_h, 8},
                 {"k stride (pages)", p.k_stride_page, kv_multiple},
                 {"k stride (tokens)", p.k_stride_n, kv_multiple},
                 {"k stride (heads)", p.k_stride_h, kv_multiple},
                 {"v stride (pages)", p.v_stride_page, kv_multiple},
                 {"v stride (tokens)", p.v_stride_n, kv_multiple},
                 {"v stride (heads)", p.v_stride_h, kv_multiple}};
  for (const auto& s : strides)
    if (s.stride % s.multiple != 0)
      throw Error(ErrorCode::kInvalidArgument, std::string(s.name) + ": got " + std::to_string(s.stride) +
                                                   " elements, backend 'sm80' needs a multiple of " +
                                                   std::to_string(s.multiple) + " (16 bytes)");
}

// The K/V dtype a kernel reads: q's (T) or its fp8 format. A plan that reached a kernel of
// another KV dtype would reinterpret the cache's bytes, so the launch refuses it.
template <class T, class KV>
void check_kv_dtype(const core::AttentionParams& p) {
  DType want = cuda::DTypeOf<T>::value;
  if constexpr (kIsFp8<KV>) want = Fp8Format<KV>::kDType;
  const bool ok = kIsFp8<KV> ? p.kv_dtype == want : p.kv_dtype != DType::kE4M3 && p.kv_dtype != DType::kE5M2;
  if (!ok)
    throw Error(ErrorCode::kInternal, std::string("sm80 kernel for K/V ") + dtype_name(want) +
                                          " launched with kv_dtype " + dtype_name(p.kv_dtype));
}

template <class Cfg, class T, class KV, bool kMask, bool kSoftCap, bool kPaged, bool kCustomMask = false>
void launch_attention(const core::AttentionParams& p) {
  check_strides(p, Cfg::kKVElemBytes);
  check_kv_dtype<T, KV>(p);
  auto* kernel = &attention_kernel<Cfg, T, KV, kMask, kSoftCap, kPaged, kCustomMask>;
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
