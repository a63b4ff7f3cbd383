// The sm90 backend as dispatch sees it; its launch reads the plan's PlanState, so captured
// plans compare a state signature.
#include "backends/sm90/sm90_backend.h"
#include "backends/cuda/merge.h"
#include "dispatch/backend.h"

namespace flashband::dispatch {
namespace {

std::size_t workspace_bytes(const WorkspaceSizes& s) {
  return sm90::sm90_workspace_bytes(s.max_batch, s.max_qo_tokens, s.num_qo_heads, s.head_dim) +
         sm90::sm90_page_index_bytes(s.max_page_indices);
}

std::size_t plan_bytes(const WorkspaceSizes& s) {
  return sm90::sm90_plan_bytes(s.max_batch, s.max_qo_tokens, s.head_dim) +
         sm90::sm90_page_index_bytes(s.max_page_indices);
}

}  // namespace

extern const BackendOps kSm90BackendOps = {
    Backend::kSM90, register_sm90_kernels, detail::plan_sm90,
    detail::state_signature_sm90, workspace_bytes, plan_bytes,
    nullptr, cuda::merge_state, cuda::merge_states};

}  // namespace flashband::dispatch
