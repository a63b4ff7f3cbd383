// The cpu backend: the embedded default and the judge of the GPU backends. Its entry points
// run on host memory; dispatch::register_cpu_kernels and detail::plan_cpu (below, listed in
// backend_ops.cpp) connect it to the public API.
#pragma once
#include <cstdint>

#include "core/params.h"
#include "flashband/attention.h"
#include "flashband/tensor.h"

namespace flashband::cpu {

// Computes SPEC.md for every request of `p` (contiguous or paged K/V, any strides, GQA,
// soft cap, base-2 LSE). Inputs in f16/bf16/f32, float32 accumulation, output in p.dtype.
// Index arrays must be host pointers; p.kv_lens may be null (then derived from the indptrs).
void cpu_attention(const core::AttentionParams& p);

// One partial result of a merge: v [n, H, D] (element strides, last dim contiguous) and its
// base-2 LSE s [n, H] float32.
struct MergeInput {
  const void* v = nullptr;
  int64_t v_stride_n = 0, v_stride_h = 0;
  const float* s = nullptr;
  int64_t s_stride_n = 0, s_stride_h = 0;
};
// The merged result; s may be null when the caller does not want the LSE.
struct MergeOutput {
  void* v = nullptr;
  int64_t v_stride_n = 0, v_stride_h = 0;
  float* s = nullptr;
  int64_t s_stride_n = 0, s_stride_h = 0;
};

// Merges num_states partial results over disjoint key sets with core::merge_weights (SPEC.md
// "Merging partial states"); all inputs and the output share `dtype`. Rows whose states are
// all empty (s = -inf) give v = 0, s = -inf. Host memory only; the output may not alias an
// input.
void cpu_merge_states(DType dtype, int64_t n, int num_heads, int head_dim,
                      const MergeInput* states, int num_states, const MergeOutput& out);

// The same on tensor views, for the public merge_state / merge_states after validation:
// v [n, S, H, D], s [n, S, H] -> v_out [n, H, D], s_out [n, H] (s_out may be a null view).
void cpu_merge_states(const TensorView& v, const TensorView& s, const TensorView& v_out,
                      const TensorView& s_out);
// Two states, each v [n, H, D], s [n, H].
void cpu_merge_state(const TensorView& v_a, const TensorView& s_a, const TensorView& v_b,
                     const TensorView& s_b, const TensorView& v_out, const TensorView& s_out);

}  // namespace flashband::cpu

// Connects the backend to dispatch (backend_ops.cpp).
namespace flashband {
namespace detail {
struct Plan;
void plan_cpu(Plan& plan, const Workspace& workspace);
}  // namespace detail
namespace dispatch {
class Registry;
void register_cpu_kernels(Registry& r);
}  // namespace dispatch
}  // namespace flashband
