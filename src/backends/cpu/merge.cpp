// cpu_merge_states: the one merge rule of SPEC.md on host memory. States are folded left to
// right with core::merge_weights; each fold is the two-state rule, so merging S states
// equals merging them pairwise in any grouping up to rounding.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/parallel_for.h"
#include "backends/cpu/row_io.h"
#include "core/state.h"
#include "flashband/error.h"

namespace flashband::cpu {

void cpu_merge_states(DType dtype, int64_t n, int num_heads, int head_dim,
                      const MergeInput* states, int num_states, const MergeOutput& out) {
  if (n <= 0 || num_heads <= 0) return;
  if (head_dim <= 0 || num_states < 0)
    throw Error(ErrorCode::kInternal, "cpu_merge_states: head_dim " + std::to_string(head_dim) +
                                          ", num_states " + std::to_string(num_states));
  const int D = head_dim;
  const int64_t rows = n * num_heads;
  const int workers = worker_count(rows);
  std::vector<std::vector<float>> acc(workers, std::vector<float>(D)), in(workers, std::vector<float>(D));
  parallel_for(rows, [&](int64_t row, int worker) {
    const int64_t i = row / num_heads;
    const int h = static_cast<int>(row % num_heads);
    float* o = acc[worker].data();
    float* x = in[worker].data();
    std::fill_n(o, D, 0.0f);
    float lse = core::neg_inf();
    for (int k = 0; k < num_states; ++k) {
      const MergeInput& st = states[k];
      const float s_k = st.s[i * st.s_stride_n + h * st.s_stride_h];
      const core::MergeWeights mw = core::merge_weights(lse, s_k);
      // A zero weight must not touch the accumulator: an empty state's v may hold anything.
      if (mw.w_b == 0.0f) {
        if (mw.w_a != 1.0f) for (int d = 0; d < D; ++d) o[d] *= mw.w_a;
      } else {
        load_row(dtype, st.v, i * st.v_stride_n + h * st.v_stride_h, D, x);
        if (mw.w_a == 0.0f) {
          for (int d = 0; d < D; ++d) o[d] = mw.w_b * x[d];
        } else {
          for (int d = 0; d < D; ++d) o[d] = mw.w_a * o[d] + mw.w_b * x[d];
        }
      }
      lse = mw.lse;
    }
    store_row(dtype, out.v, i * out.v_stride_n + h * out.v_stride_h, D, o, 1.0f);
    if (out.s != nullptr) out.s[i * out.s_stride_n + h * out.s_stride_h] = lse;
  });
}

namespace {
MergeInput input_of(const TensorView& v, const TensorView& s, int state_dim) {
  // state_dim < 0: v [n, H, D], s [n, H]; else the state axis is dimension 1 and sliced by
  // the caller through the pointer.
  MergeInput in;
  in.v = v.data;
  in.s = static_cast<const float*>(s.data);
  in.v_stride_n = v.stride(0);
  in.v_stride_h = v.stride(state_dim < 0 ? 1 : 2);
  in.s_stride_n = s.stride(0);
  in.s_stride_h = s.stride(state_dim < 0 ? 1 : 2);
  return in;
}

MergeOutput output_of(const TensorView& v_out, const TensorView& s_out) {
  MergeOutput out;
  out.v = v_out.data;
  out.v_stride_n = v_out.stride(0);
  out.v_stride_h = v_out.stride(1);
  out.s = static_cast<float*>(s_out.data);
  if (out.s != nullptr) {
    out.s_stride_n = s_out.stride(0);
    out.s_stride_h = s_out.stride(1);
  }
  return out;
}
}  // namespace

void cpu_merge_states(const TensorView& v, const TensorView& s, const TensorView& v_out,
                      const TensorView& s_out) {
  const int num_states = static_cast<int>(v.size(1));
  std::vector<MergeInput> states;
  states.reserve(static_cast<size_t>(num_states));
  const size_t v_elem = dtype_size(v.dtype);
  for (int k = 0; k < num_states; ++k) {
    MergeInput in = input_of(v, s, 1);
    in.v = static_cast<const char*>(v.data) + static_cast<int64_t>(v_elem) * k * v.stride(1);
    in.s = static_cast<const float*>(s.data) + k * s.stride(1);
    states.push_back(in);
  }
  cpu_merge_states(v.dtype, v.size(0), static_cast<int>(v.size(2)), static_cast<int>(v.size(3)),
                   states.data(), num_states, output_of(v_out, s_out));
}

void cpu_merge_state(const TensorView& v_a, const TensorView& s_a, const TensorView& v_b,
                     const TensorView& s_b, const TensorView& v_out, const TensorView& s_out) {
  const MergeInput states[2] = {input_of(v_a, s_a, -1), input_of(v_b, s_b, -1)};
  cpu_merge_states(v_a.dtype, v_a.size(0), static_cast<int>(v_a.size(1)),
                   static_cast<int>(v_a.size(2)), states, 2, output_of(v_out, s_out));
}

}  // namespace flashband::cpu
