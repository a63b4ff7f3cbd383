// batch_workspace_bytes and batch_plan_bytes: the most any backend's plan can ask of the
// caller's workspace, so one buffer serves whichever backend `auto` picks.
#include <algorithm>

#include <string>

#include "validate/validate.h"
#include "dispatch/backend.h"
#include "flashband/attention.h"

namespace flashband {

namespace {
// The largest factors the backends' size formulas apply to these counts (sm80 splits a row
// up to 64 ways, a partial row holds head_dim + 1 floats, a work item is 16 bytes, cuDNN's
// page tables hold 2 x 2 entries per request page): sizes whose every such product stays
// under kMaxBytes are computed without overflow by each backend's formula.
constexpr int64_t kMaxBytes = int64_t{1} << 62;
constexpr int64_t kRowFactor = 64 * 4;     // splits x float
constexpr int64_t kPageFactor = 2 * 2 * 4; // width 2 x pages, 2 tables, int32

// a + b for counts already known to be >= 0, or a value past kMaxBytes where the sum would
// overflow (found by the fuzz harness: max_qo_tokens near INT64_MAX).
int64_t capped_sum(int64_t a, int64_t b) {
  int64_t s;
  return __builtin_add_overflow(a, b, &s) ? kMaxBytes + 1 : s;
}

bool product_fits(std::initializer_list<int64_t> factors) {
  int64_t p = 1;
  for (int64_t f : factors)
    if (__builtin_mul_overflow(p, f, &p) || p > kMaxBytes) return false;
  return true;
}

// Refuses negative counts and sizes past what a byte count can hold, naming them, on every
// device (a cpu answer of 0 must not hide a call that a GPU build refuses).
void check_counts(int max_batch, int64_t max_qo_tokens, int num_qo_heads, int head_dim, int64_t max_page_indices,
                  int64_t max_request_pages) {
  validate::count_at_least("max_batch", max_batch, 0);
  validate::count_at_least("max_qo_tokens", max_qo_tokens, 0);
  validate::count_at_least("num_qo_heads", num_qo_heads, 0);
  validate::count_at_least("head_dim", head_dim, 0);
  validate::count_at_least("max_page_indices", max_page_indices, 0);
  validate::count_at_least("max_request_pages", max_request_pages, -1);
  const auto too_large = [](const std::string& what) {
    throw Error(ErrorCode::kInvalidArgument, what + ": the workspace for these sizes exceeds 2^62 bytes");
  };
  if (!product_fits({capped_sum(max_qo_tokens, max_batch), num_qo_heads, int64_t{head_dim} + 1, kRowFactor}))
    too_large("max_qo_tokens x num_qo_heads x head_dim: " + std::to_string(max_qo_tokens) + " x " +
              std::to_string(num_qo_heads) + " x " + std::to_string(head_dim));
  if (!product_fits({int64_t{max_batch} + 1, capped_sum(max_page_indices, 1), kPageFactor}))
    too_large("max_batch x max_page_indices: " + std::to_string(max_batch) + " x " + std::to_string(max_page_indices));
}

// The most any built GPU backend asks for (`bytes_of` picks workspace or plan_data bytes);
// 0 on the host, whose cpu backend reads the plan's host arrays.
std::size_t most_of_gpu_backends(Device device, const dispatch::WorkspaceSizes& sizes,
                                 std::size_t (*dispatch::BackendOps::*bytes_of)(const dispatch::WorkspaceSizes&)) {
  if (device == Device::kCPU) return 0;
  std::size_t bytes = 0;
  for (const dispatch::BackendOps* ops : dispatch::built_backend_ops())
    if (ops->*bytes_of) bytes = std::max(bytes, (ops->*bytes_of)(sizes));
  return bytes;
}

}  // namespace

std::size_t batch_workspace_bytes(int max_batch, int64_t max_qo_tokens, int num_qo_heads, int head_dim, Device device,
                                  int64_t max_page_indices) {
  check_counts(max_batch, max_qo_tokens, num_qo_heads, head_dim, max_page_indices, -1);
  return most_of_gpu_backends(device, {max_batch, max_qo_tokens, num_qo_heads, head_dim, max_page_indices, -1},
                              &dispatch::BackendOps::workspace_bytes);
}

std::size_t batch_plan_bytes(int max_batch, int64_t max_qo_tokens, int num_qo_heads, int head_dim, Device device,
                             int64_t max_page_indices, int64_t max_request_pages) {
  check_counts(max_batch, max_qo_tokens, num_qo_heads, head_dim, max_page_indices, max_request_pages);
  return most_of_gpu_backends(device,
                              {max_batch, max_qo_tokens, num_qo_heads, head_dim, max_page_indices, max_request_pages},
                              &dispatch::BackendOps::plan_bytes);
}

}  // namespace flashband
