// The cpu backend as dispatch sees it: its kernels and planner; it needs no workspace (its
// plans keep their arrays on the host).
#include "backends/cpu/cpu_backend.h"
#include "dispatch/backend.h"

namespace flashband::dispatch {

namespace {

// The host merges need no stream.
void merge_state(const TensorView& v_a, const TensorView& s_a, const TensorView& v_b, const TensorView& s_b,
                 const TensorView& v_out, const TensorView& s_out, void*) {
  cpu::cpu_merge_state(v_a, s_a, v_b, s_b, v_out, s_out);
}

void merge_states(const TensorView& v, const TensorView& s, const TensorView& v_out, const TensorView& s_out, void*) {
  cpu::cpu_merge_states(v, s, v_out, s_out);
}

}  // namespace

extern const BackendOps kCpuBackendOps = {Backend::kCPU, register_cpu_kernels, detail::plan_cpu, nullptr, nullptr,
                                          nullptr, nullptr, merge_state, merge_states};

}  // namespace flashband::dispatch
