// The sm80 backend as dispatch sees it. It launches from params alone (no state signature).
#include "backends/sm80/sm80_backend.h"
#include "backends/sm80/workspace.h"
#include "backends/cuda/merge.h"
#include "dispatch/backend.h"

namespace flashband::dispatch {
namespace {

std::size_t workspace_bytes(const WorkspaceSizes& s) {
  return sm80::sm80_workspace_bytes(s.max_batch, s.max_qo_tokens, s.num_qo_heads, s.head_dim) +
         sm80::sm80_page_index_bytes(s.max_page_indices);
}

std::size_t plan_bytes(const WorkspaceSizes& s) {
  return sm80::sm80_plan_bytes(s.max_batch, s.max_qo_tokens, s.num_qo_heads) +
         sm80::sm80_page_index_bytes(s.max_page_indices);
}

}  // namespace

extern const BackendOps kSm80BackendOps = {
    Backend::kSM80, register_sm80_kernels, detail::plan_sm80,
    nullptr, workspace_bytes, plan_bytes,
    nullptr, cuda::merge_state, cuda::merge_states};

}  // namespace flashband::dispatch
