// batch_workspace_bytes and batch_plan_bytes: the most any backend's plan can ask of the
// caller's workspace, so one buffer serves whichever backend `auto` picks.
#include <algorithm>

#include "flashband/attention.h"
#include "flashband/config.h"
#if FLASHBAND_WITH_SM80
#include "backends/sm80/workspace.h"
#endif
#if FLASHBAND_WITH_SM90
#include "backends/sm90/sm90_backend.h"
#endif
#if FLASHBAND_WITH_CUDNN
#include "backends/cudnn/cudnn_backend.h"
#endif

namespace flashband {

namespace {
// cuDNN's own scratch is known only once a graph is built; its fp16/bf16 SDPA forward
// engines have needed none so far, this leaves room for ones that do.
constexpr std::size_t kCudnnGraphSlack = std::size_t{16} << 20;
}  // namespace

// Parameters a build without some backend does not read.
#define FB_MAYBE [[maybe_unused]]

std::size_t batch_workspace_bytes(FB_MAYBE int max_batch, FB_MAYBE int64_t max_qo_tokens, FB_MAYBE int num_qo_heads,
                                  FB_MAYBE int head_dim, Device device, FB_MAYBE int64_t max_page_indices) {
  if (device == Device::kCPU) return 0;  // the cpu backend reads the plan's host arrays
  std::size_t bytes = 0;
#if FLASHBAND_WITH_SM80
  bytes = std::max(bytes, sm80::sm80_workspace_bytes(max_batch, max_qo_tokens, num_qo_heads, head_dim) +
                              sm80::sm80_page_index_bytes(max_page_indices));
#endif
#if FLASHBAND_WITH_SM90
  bytes = std::max(bytes, sm90::sm90_workspace_bytes(max_batch, max_qo_tokens, num_qo_heads, head_dim) +
                              sm90::sm90_page_index_bytes(max_page_indices));
#endif
#if FLASHBAND_WITH_CUDNN
  const int width = static_cast<int>(std::min<int64_t>(2 * max_page_indices, 1 << 30));
  bytes = std::max(bytes, cudnn_backend::cudnn_workspace_bytes(max_batch, width, kCudnnGraphSlack));
#endif
  return bytes;
}

std::size_t batch_plan_bytes(FB_MAYBE int max_batch, FB_MAYBE int64_t max_qo_tokens, FB_MAYBE int num_qo_heads,
                             FB_MAYBE int head_dim, Device device, FB_MAYBE int64_t max_page_indices,
                             FB_MAYBE int64_t max_request_pages) {
  if (device == Device::kCPU) return 0;
  std::size_t bytes = 0;
#if FLASHBAND_WITH_SM80
  bytes = std::max(bytes, sm80::sm80_plan_bytes(max_batch, max_qo_tokens, num_qo_heads) +
                              sm80::sm80_page_index_bytes(max_page_indices));
#endif
#if FLASHBAND_WITH_SM90
  bytes = std::max(bytes, sm90::sm90_plan_bytes(max_batch, max_qo_tokens, head_dim) +
                              sm90::sm90_page_index_bytes(max_page_indices));
#endif
#if FLASHBAND_WITH_CUDNN
  // page_table_width: at most twice the longest request's pages.
  const int64_t pages = max_request_pages >= 0 ? std::min(max_request_pages, max_page_indices) : max_page_indices;
  const int width = static_cast<int>(std::min<int64_t>(2 * pages, 1 << 30));
  bytes = std::max(bytes, cudnn_backend::cudnn_workspace_bytes(max_batch, width, 0));
#endif
  return bytes;
}

#undef FB_MAYBE

}  // namespace flashband
