// detail::plan_sm80: the work partition (work_plan.h) uploaded into the caller's workspace
// with one cudaMemcpyAsync on the plan's stream, and params aimed at it.
//
// Workspace layout: [qo_indptr | kv_indptr | kv_lens | last_page_len | mask_indptr | work items |
// page_indices] [split-KV partial O (float32) | partial LSE], regions 256-byte aligned; the
// partials in their own buffer beside a plan_data, else after the arrays (or, for
// cuda_graph plans, at the buffer's end).
#include <algorithm>

#include "backends/cuda/device_info.h"
#include "backends/cuda/upload.h"
#include "backends/sm80/sm80_backend.h"
#include "backends/sm80/split_policy.h"
#include "backends/sm80/work_plan.h"
#include "backends/sm80/workspace.h"
#include "plan/plan.h"

namespace flashband {

namespace sm80 {

std::size_t sm80_page_index_bytes(int64_t num_page_indices) {
  return cuda::align_up(static_cast<std::size_t>(std::max<int64_t>(num_page_indices, 0)) * sizeof(int32_t));
}

std::size_t sm80_plan_bytes(int max_batch, int64_t max_qo_tokens, int num_qo_heads) {
  const std::size_t b = static_cast<std::size_t>(std::max(max_batch, 0));
  // qo_indptr, kv_indptr, kv_lens, last_page_len; a custom mask's int64 mask_indptr.
  const std::size_t indices = 4 * cuda::align_up((b + 1) * sizeof(int32_t)) + cuda::align_up((b + 1) * sizeof(int64_t));
  // Row tiles hold 16 packed rows at the least (decode), plus one ragged tile per request
  // and kv head; a split plan is capped at kMaxSplitWorkItems.
  const int64_t rows = std::max<int64_t>(max_qo_tokens, 0) * num_qo_heads;
  const int64_t unsplit_items = rows / 16 + static_cast<int64_t>(b) * num_qo_heads;
  const int64_t items = std::max(unsplit_items, kMaxSplitWorkItems);
  const std::size_t work = cuda::align_up(static_cast<std::size_t>(items) * sizeof(WorkItem));
  return indices + work;
}

std::size_t sm80_workspace_bytes(int max_batch, int64_t max_qo_tokens, int num_qo_heads, int head_dim) {
  const int64_t rows = std::max<int64_t>(max_qo_tokens, 0) * num_qo_heads;
  const int64_t row_splits = std::min(rows * kMaxKVSplits, kMaxPartialRowSplits);
  const std::size_t partials = cuda::align_up(static_cast<std::size_t>(row_splits) * (head_dim + 1) * sizeof(float));
  return sm80_plan_bytes(max_batch, max_qo_tokens, num_qo_heads) + partials;
}

}  // namespace sm80

namespace detail {

void plan_sm80(Plan& plan, const Workspace& workspace) {
  core::AttentionParams& a = plan.params;
  a.work = nullptr;
  a.num_work_items = 0;
  a.num_kv_splits = 1;
  a.scratch = nullptr;
  a.scratch_bytes = 0;

  // No workspace: a single contiguous request runs from params alone (request.h).
  const WorkspaceRegions regions(workspace);
  if (regions.empty()) {
    if (plan.batch == 1 && a.kv_storage == core::KVStorage::kContiguous) {
      (void)sm80::tile_shape(sm80::planned_shape(plan), a.head_dim);  // names an unsupported head_dim
      a.qo_indptr = a.kv_indptr = a.kv_lens = a.page_indices = a.last_page_len = nullptr;
      a.mask_indptr = nullptr;  // the one request's bits start at byte 0 (custom_mask.h)
      return;
    }
    throw Error(ErrorCode::kInvalidArgument,
                "workspace: got none, the sm80 backend needs a device workspace for batch plans (size it with "
                "batch_workspace_bytes, or give plan_data of batch_plan_bytes beside it)");
  }

  const sm80::WorkPlan wp =
      sm80::make_work_plan(plan, cuda::multiprocessor_count(plan.shape.device_id), regions);
  unsigned char* base = regions.arrays();
  cuda::upload_async(base, wp.blob, a.stream);
  auto at = [&](std::size_t off) { return reinterpret_cast<const int32_t*>(base + off); };
  const bool paged = a.kv_storage == core::KVStorage::kPaged;
  a.qo_indptr = at(wp.off_qo_indptr);
  a.kv_indptr = at(wp.off_kv_indptr);
  a.kv_lens = at(wp.off_kv_lens);
  a.page_indices = !paged ? nullptr : plan.device_page_indices ? plan.device_page_indices : at(wp.off_page_indices);
  a.page_status = paged ? plan.page_status : nullptr;
  a.last_page_len = paged ? at(wp.off_last_page_len) : nullptr;
  a.mask_indptr = plan.opts.custom_mask ? reinterpret_cast<const int64_t*>(base + wp.off_mask_indptr) : nullptr;
  a.work = base + wp.off_work;
  a.num_work_items = static_cast<int>(wp.work.size());
  a.num_kv_splits = wp.num_kv_splits;
  if (wp.num_kv_splits > 1) {
    a.scratch = regions.data_at(wp.scratch_offset);
    a.scratch_bytes = wp.scratch_bytes;
  }
}

}  // namespace detail
}  // namespace flashband
