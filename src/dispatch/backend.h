// One backend as the layers above the backends see it: its kernels, its planner, what a
// captured plan's launch reads besides params, and the workspace it needs. Each backend fills
// one BackendOps in its own folder (src/backends/<name>/backend_ops.cpp); src/dispatch/
// backends.cpp lists those the build has, so dispatch, plan and api name no backend.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "flashband/attention.h"
#include "flashband/options.h"

namespace flashband {
namespace detail {
struct Plan;  // plan/plan.h
}

namespace dispatch {

class Registry;  // dispatch/registry.h

// The maxima batch_workspace_bytes / batch_plan_bytes size for, already checked (>= 0, and
// every product within 2^62 bytes). max_request_pages is -1 when unknown.
struct WorkspaceSizes {
  int max_batch = 0;
  int64_t max_qo_tokens = 0;
  int num_qo_heads = 0;
  int head_dim = 0;
  int64_t max_page_indices = 0;
  int64_t max_request_pages = -1;
};

struct BackendOps {
  Backend id = Backend::kCPU;
  void (*register_kernels)(Registry& r) = nullptr;
  // Given a plan whose host fields and params' semantics are filled, aims params' index
  // pointers at backend memory and adds any work partition. GPU backends copy into
  // `workspace` with cudaMemcpyAsync on params.stream.
  void (*plan)(detail::Plan& plan, const Workspace& workspace) = nullptr;
  // Plan::state_signature (what a captured launch reads besides params); null when the
  // backend launches from params alone.
  std::string (*state_signature)(const detail::Plan& plan) = nullptr;
  // Bytes a plan of at most these sizes needs: workspace and plan_data (null: none, the
  // host backend).
  std::size_t (*workspace_bytes)(const WorkspaceSizes& sizes) = nullptr;
  std::size_t (*plan_bytes)(const WorkspaceSizes& sizes) = nullptr;
  // The version of the library the backend calls at run time, as that library numbers it
  // (cudnn: cudnnGetVersion()); null for backends that call none.
  int (*runtime_version)() = nullptr;
  // The public merge_state / merge_states on validated views of this backend's device (cpu:
  // host memory, GPU backends: CUDA memory); null where another backend of that device has them.
  void (*merge_state)(const TensorView& v_a, const TensorView& s_a, const TensorView& v_b, const TensorView& s_b,
                      const TensorView& v_out, const TensorView& s_out, void* stream) = nullptr;
  void (*merge_states)(const TensorView& v, const TensorView& s, const TensorView& v_out, const TensorView& s_out,
                       void* stream) = nullptr;
};

// The backends this build has, cpu first.
const std::vector<const BackendOps*>& built_backend_ops();
// Null when this build lacks `b` (or for kAuto).
const BackendOps* backend_ops(Backend b);
// The built backend that merges states on device `d`; null when none does (no GPU backend).
const BackendOps* merge_ops(Device d);

}  // namespace dispatch
}  // namespace flashband
