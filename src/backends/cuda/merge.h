// The one merge of partial attention states (SPEC.md "Merging partial states") on CUDA:
// split-KV partial results and the public merge_state / merge_states both run it.
// Host-only header (no CUDA types): streams are passed as void* (a cudaStream_t).
#pragma once
#include <cstdint>

#include "core/params.h"
#include "flashband/tensor.h"

namespace flashband::cuda {

// num_states partial results per (token, head): v [n, num_states, H, D] of f16/bf16/f32 and
// s [n, num_states, H] float32 (base-2 LSE), each with element strides; D is contiguous.
struct StateSet {
  const void* v = nullptr;
  DType dtype = DType::kF32;
  int64_t v_stride_n = 0, v_stride_s = 0, v_stride_h = 0;
  const float* s = nullptr;
  int64_t s_stride_n = 0, s_stride_s = 0, s_stride_h = 0;
  int num_states = 0;
};

// Merged output: v [n, H, D] (f16/bf16/f32), s [n, H] float32 or nullptr when not wanted.
struct MergeTarget {
  void* v = nullptr;
  DType dtype = DType::kF32;
  int64_t v_stride_n = 0, v_stride_h = 0;
  float* s = nullptr;
  int64_t s_stride_n = 0, s_stride_h = 0;
};

// Merges the states of `first` and then those of `second` (may be null) for every (token,
// head). No state at all, or only empty ones, gives v = 0 and s = -inf. Supported dtype
// pairs (input -> output): f32 -> f16/bf16/f32, f16 -> f16, bf16 -> bf16. Never
// synchronises or allocates; throws Error(kCudaError) if the launch fails.
// sinks: [num_heads] attention sinks (natural log) folded into every row once, after all of
// its states (split-KV of a problem with sinks); nullptr for none (merge_state and friends).
void launch_merge(const StateSet& first, const StateSet* second, int64_t n, int num_heads, int head_dim,
                  const MergeTarget& out, void* stream, const float* sinks = nullptr);

// Split-KV: the partial states every GPU backend writes, o [tokens, num_splits, Hq, D] and
// lse [tokens, num_splits, Hq] (float32, base 2, dense), folded into the problem's O and LSE,
// with p.sinks (if any) folded in once per row after the splits.
void merge_split_partials(const core::AttentionParams& p, const float* partial_o, const float* partial_lse,
                          int num_splits);

// The public functions' CUDA side; src/api/merge.cpp has validated shapes, dtypes and
// placement. v [n, H, D], s [n, H] for merge_state; v [n, S, H, D], s [n, S, H] for
// merge_states.
void merge_state(const TensorView& v_a, const TensorView& s_a, const TensorView& v_b, const TensorView& s_b,
                 const TensorView& v_out, const TensorView& s_out, void* stream);
void merge_states(const TensorView& v, const TensorView& s, const TensorView& v_out, const TensorView& s_out,
                  void* stream);

}  // namespace flashband::cuda
