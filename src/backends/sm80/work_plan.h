// The host half of plan_sm80, free of CUDA calls so tests can run it without a GPU: the
// work list, the number of KV splits and the workspace layout, staged in an IndexBlob that
// plan_sm80 then copies to the device in one cudaMemcpyAsync.
#pragma once
#include <cstddef>
#include <vector>

#include "backends/cuda/upload.h"
#include "backends/sm80/tile_config.h"
#include "backends/sm80/work.h"
#include "plan/plan.h"
#include "plan/workspace_regions.h"

namespace flashband::sm80 {

struct WorkPlan {
  TileShape tile;
  cuda::IndexBlob blob;  // index arrays then the work list, as laid out in the workspace
  std::size_t off_qo_indptr = 0, off_kv_indptr = 0, off_kv_lens = 0;
  std::size_t off_page_indices = 0, off_last_page_len = 0;  // paged only
  std::size_t off_mask_indptr = 0;  // custom mask only: plan.mask_indptr (int64 byte offsets)
  std::size_t off_work = 0;
  std::vector<WorkItem> work;  // the list in launch order (also inside blob)
  int num_kv_splits = 1;
  std::size_t scratch_offset = 0;  // split-KV partials' offset in data (WorkspaceRegions::scratch_offset), when num_kv_splits > 1
  std::size_t scratch_bytes = 0;   // what the partials need
};

// Plans `plan` (host fields and params' semantics filled; kernel selected) for a GPU with
// `sm_count` multiprocessors and the room `workspace` offers: splits only as far as their
// partial states fit beside the arrays. Throws Error(kInvalidArgument) naming the workspace
// when even the index arrays and the unsplit work list do not fit.
WorkPlan make_work_plan(const detail::Plan& plan, int sm_count, const detail::WorkspaceRegions& workspace);
// The same for `workspace_bytes` in one buffer.
WorkPlan make_work_plan(const detail::Plan& plan, int sm_count, std::size_t workspace_bytes);

// The kernel shape plan_sm80 plans for (the selected kernel's, else from the op).
dispatch::KernelShape planned_shape(const detail::Plan& plan);

}  // namespace flashband::sm80
