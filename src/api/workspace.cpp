// batch_workspace_bytes: the most any backend's plan can ask of the caller's workspace.
#include <algorithm>

#include "flashband/attention.h"
#include "flashband/config.h"

namespace flashband {

std::size_t batch_workspace_bytes(int max_batch, int64_t max_qo_tokens, int num_qo_heads, int head_dim,
                                  Device device) {
  if (device == Device::kCPU) return 0;  // the cpu backend reads the plan's host arrays
  std::size_t bytes = 0;
  (void)max_batch;
  (void)max_qo_tokens;
  (void)num_qo_heads;
  (void)head_dim;
  return bytes;
}

}  // namespace flashband
