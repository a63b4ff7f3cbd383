// The cudnn backend as dispatch sees it; its launch reads the plan's RunState (the graph),
// so captured plans compare a state signature.
#include <algorithm>

#include "backends/cudnn/cudnn_backend.h"
#include "backends/cudnn/cudnn_version.h"
#include "dispatch/backend.h"

namespace flashband::dispatch {
namespace {

// cuDNN's own scratch is known only once a graph is built; its fp16/bf16 SDPA forward
// engines have needed none so far, this leaves room for ones that do.
constexpr std::size_t kCudnnGraphSlack = std::size_t{16} << 20;

// Page-table width: at most twice the pages of the longest request (page_table_width).
int width_for(int64_t pages) { return static_cast<int>(std::min<int64_t>(2 * pages, 1 << 30)); }

std::size_t workspace_bytes(const WorkspaceSizes& s) {
  return cudnn_backend::cudnn_workspace_bytes(s.max_batch, width_for(s.max_page_indices), kCudnnGraphSlack);
}

// plan_data holds the index arrays alone; cuDNN's own workspace stays in the scratch.
std::size_t plan_bytes(const WorkspaceSizes& s) {
  const int64_t pages =
      s.max_request_pages >= 0 ? std::min(s.max_request_pages, s.max_page_indices) : s.max_page_indices;
  return cudnn_backend::cudnn_workspace_bytes(s.max_batch, width_for(pages), 0);
}

}  // namespace

extern const BackendOps kCudnnBackendOps = {Backend::kCUDNN, register_cudnn_kernels, detail::plan_cudnn,
                                            detail::state_signature_cudnn, workspace_bytes, plan_bytes,
                                            cudnn_backend::runtime_version};

}  // namespace flashband::dispatch
