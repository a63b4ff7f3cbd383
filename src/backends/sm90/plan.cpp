// detail::plan_sm90: builds the work list (query tile x KV split, longest first in cost
// buckets), picks the number of KV splits, and uploads index arrays and the work list into
// the caller's workspace with one cudaMemcpyAsync on the plan's stream. A single request
// without splits needs no work list (the kernel derives its tiles), so single_prefill runs
// without a workspace.
//
// Workspace layout: [qo_indptr | kv_indptr | kv_lens | page_indices | last_page_len |
// work items] [split-KV partial O (float32) | partial LSE], regions 256-byte aligned.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/device_info.h"
#include "backends/cuda/upload.h"
#include "backends/sm90/compiled_kernels.h"
#include "backends/sm90/sm90_backend.h"
#include "backends/sm90/tile_rule.h"
#include "backends/sm90/work_list.h"
#include "flashband/error.h"
#include "plan/plan.h"
#include "plan/workspace_regions.h"

namespace flashband {

namespace sm90 {

namespace {

std::size_t partial_bytes(int64_t row_splits, int head_dim) {
  return cuda::align_up(static_cast<std::size_t>(row_splits) * head_dim * sizeof(float)) +
         cuda::align_up(static_cast<std::size_t>(row_splits) * sizeof(float));
}

// Each item's request's byte offset into the custom mask: the request is the last one that
// starts at or before the item's first token (items come only from requests with rows, and
// empty requests share their start with the next one).
std::vector<int64_t> item_mask_offsets(const std::vector<WorkItem>& items, const std::vector<int32_t>& qo_indptr,
                                       const std::vector<int64_t>& mask_indptr) {
  std::vector<int64_t> offsets;
  offsets.reserve(items.size());
  for (const WorkItem& it : items) {
    const auto b = std::upper_bound(qo_indptr.begin(), qo_indptr.end(), it.qo_start) - qo_indptr.begin() - 1;
    offsets.push_back(mask_indptr[static_cast<std::size_t>(b)]);
  }
  return offsets;
}

}  // namespace

std::size_t sm90_page_index_bytes(int64_t num_page_indices) {
  return cuda::align_up(static_cast<std::size_t>(std::max<int64_t>(num_page_indices, 0)) * sizeof(int32_t));
}

std::size_t sm90_plan_bytes(int max_batch, int64_t max_qo_tokens, int head_dim) {
  // The plan may take either tile variant (use_wide_tiles): the shorter query tile gives the
  // most work items.
  const TileShape narrow = tile_shape(head_dim, false), wide = tile_shape(head_dim, true);
  if (narrow.block_m == 0) return 0;
  const int min_block_m = std::min(narrow.block_m, wide.block_m);
  const std::size_t b = static_cast<std::size_t>(std::max(max_batch, 0));
  const std::size_t indices = 3 * cuda::align_up((b + 1) * sizeof(int32_t)) + cuda::align_up(b * sizeof(int32_t));
  // Unsplit: one item per query tile (one extra per request for ragged ends). Split: the
  // wave rule keeps items x heads x splits within one wave of multiprocessors;
  // splits_by_makespan may want more for one or two rounds of units, and plan_sm90 lowers
  // its split limit to what the workspace holds.
  const int64_t unsplit_items = max_qo_tokens / min_block_m + static_cast<int64_t>(b);
  const int64_t items = std::max<int64_t>(unsplit_items, kMaxMultiprocessors);
  const std::size_t work = cuda::align_up(static_cast<std::size_t>(items) * sizeof(WorkItem));
  // With a custom mask, each item's mask offset (int64) beside it.
  const std::size_t mask_offsets = cuda::align_up(static_cast<std::size_t>(items) * sizeof(int64_t));
  return indices + work + mask_offsets;
}

std::size_t sm90_workspace_bytes(int max_batch, int64_t max_qo_tokens, int num_qo_heads, int head_dim) {
  const TileShape narrow = tile_shape(head_dim, false), wide = tile_shape(head_dim, true);
  if (narrow.block_m == 0) return 0;
  // Split partial states: (token, head) rows x splits <= units x splits x kBlockM, with the
  // taller tile giving the most rows per unit.
  const int max_block_m = std::max(narrow.block_m, wide.block_m);
  const int64_t row_splits = std::min<int64_t>(max_qo_tokens * num_qo_heads * kMaxKVSplits,
                                               static_cast<int64_t>(kMaxMultiprocessors) * max_block_m);
  return sm90_plan_bytes(max_batch, max_qo_tokens, head_dim) + partial_bytes(row_splits, head_dim);
}

}  // namespace sm90

namespace detail {

void plan_sm90(Plan& plan, const Workspace& workspace) {
  core::AttentionParams& a = plan.params;
  const bool paged = a.kv_storage == core::KVStorage::kPaged;
  const int B = plan.batch;
  const int H = a.num_qo_heads;
  const int num_sms = cuda::multiprocessor_count(plan.shape.device_id);

  sm90::WorkListInput in;
  in.batch = B;
  in.qo_indptr = plan.qo_indptr.data();
  in.kv_start = plan.kv_indptr.data();
  in.kv_lens = plan.kv_lens.data();
  in.causal = a.causal;
  in.window_left = a.window_left;
  in.window_right = a.window_right;
  in.num_qo_heads = H;
  in.num_sms = num_sms;
  in.custom_mask = plan.opts.custom_mask;
  in.fp8_kv = is_fp8(a.kv_dtype);

  const WorkspaceRegions regions(workspace);
  const bool have_workspace = !regions.empty();
  const int split_limit = have_workspace && !plan.opts.disable_split_kv ? sm90::kMaxKVSplits : 1;
  // The rule's choice, looked up once: the launch runs this row's kernel.
  const sm90::KernelChoice choice =
      sm90::choose_kernel(in, a.head_dim, paged, a.page_size, a.logits_soft_cap > 0.0f, split_limit);
  const sm90::TileShape tile = sm90::tile_shape(a.head_dim, choice.wide);
  if (tile.block_m == 0)
    throw Error(ErrorCode::kUnsupported, "backend 'sm90' does not support head_dim " + std::to_string(a.head_dim) +
                                             " (supports 64, 128, 256)");
  const sm90::CompiledKernel* kernel =
      sm90::find_kernel(a.dtype, a.head_dim, a.kv_storage, choice.wide, choice.mask, in.fp8_kv);
  if (kernel == nullptr)
    throw Error(ErrorCode::kInternal, "sm90: the tile rule chose a kernel this build does not compile (" +
                                          plan.variant + ", " + (choice.wide ? "wide" : "narrow") + " tile, mask kind " +
                                          sm90::mask_kind_name(choice.mask) + ")");

  auto state = std::make_shared<sm90::PlanState>();
  state->total_kv_tokens = paged ? 0 : plan.kv_indptr[B];
  state->num_sms = num_sms;
  state->block_m = tile.block_m;
  state->block_n = tile.block_n;
  state->kernel = kernel;
  state->mask_bytes = plan.mask_indptr.empty() ? 0 : plan.mask_indptr.back();
  plan.variant += "/tile" + std::to_string(tile.block_m) + "x" + std::to_string(tile.block_n);
  if (kernel->mask == sm90::MaskKind::kCausal) plan.variant += "/causal";
  if (kernel->fp8_kv) plan.variant += "/fp8kv";

  in.block_m = tile.block_m;
  in.block_n = tile.block_n;
  const int64_t query_tiles = sm90::query_tile_count(in);

  a.work = state.get();
  a.num_work_items = static_cast<int>(query_tiles);
  a.num_kv_splits = 1;
  a.scratch = nullptr;
  a.scratch_bytes = 0;
  plan.backend_state = state;

  if (query_tiles == 0) {  // no query rows: run() launches nothing
    a.qo_indptr = a.kv_indptr = a.kv_lens = a.page_indices = a.last_page_len = nullptr;
    return;
  }
  if (!have_workspace) {
    // One contiguous request: the kernel needs no device arrays.
    if (B == 1 && !paged) {
      a.qo_indptr = a.kv_indptr = a.kv_lens = a.page_indices = a.last_page_len = nullptr;
      state->num_items = static_cast<int>(query_tiles);
      return;
    }
    throw Error(ErrorCode::kInvalidArgument,
                "workspace: got none, the sm90 backend needs a device workspace for batch and paged plans (size it "
                "with batch_workspace_bytes, or give plan_data of batch_plan_bytes beside it)");
  }

  cuda::IndexBlob blob;
  const std::size_t off_qo = blob.append(plan.qo_indptr);
  const std::size_t off_kv = blob.append(plan.kv_indptr);
  const std::size_t off_lens = blob.append(plan.kv_lens);
  std::size_t off_pages = 0, off_last = 0;
  if (paged) {
    off_pages = blob.append(plan.page_indices);
    off_last = blob.append(plan.last_page_len);
  }
  const std::size_t index_bytes = cuda::align_up(blob.size());
  const int64_t rows = a.total_qo_tokens * H;
  const std::size_t offset_bytes = plan.opts.custom_mask ? sizeof(int64_t) : 0;
  auto arrays = [&](int s) {
    return index_bytes + cuda::align_up(static_cast<std::size_t>(query_tiles) * s * sizeof(sm90::WorkItem)) +
           cuda::align_up(static_cast<std::size_t>(query_tiles) * s * offset_bytes);
  };
  auto partials = [&](int s) { return s > 1 ? sm90::partial_bytes(rows * s, a.head_dim) : 0; };
  if (!regions.fits(arrays(1), 0))
    throw Error(ErrorCode::kInvalidArgument, "workspace: " + regions.got() + ", this sm90 plan needs at least " +
                                                 regions.need(arrays(1), 0) + " (index arrays and work list)");

  int max_splits = split_limit;
  while (max_splits > 1 && !regions.fits(arrays(max_splits), partials(max_splits))) --max_splits;
  const int S = sm90::splits_by_makespan(in, sm90::wave_splits(in, max_splits, sm90::kMinKVTilesPerSplit), max_splits,
                                         sm90::kMinKVTilesPerSplit, sm90::split_merge_steps(a.head_dim));
  in.num_splits = S;

  unsigned char* base = regions.arrays();
  auto at = [&](std::size_t off) { return reinterpret_cast<const int32_t*>(base + off); };
  a.qo_indptr = at(off_qo);
  a.kv_indptr = at(off_kv);
  a.kv_lens = at(off_lens);
  a.page_indices = paged ? at(off_pages) : nullptr;
  a.last_page_len = paged ? at(off_last) : nullptr;

  // A single request without splits derives its tiles in the kernel; the rest need a list.
  if (B == 1 && S == 1) {
    state->num_items = static_cast<int>(query_tiles);
  } else {
    state->host_items = sm90::build_work_list(in);
    const std::size_t off_work =
        blob.append(state->host_items.data(), state->host_items.size() * sizeof(sm90::WorkItem));
    state->items = reinterpret_cast<const sm90::WorkItem*>(base + off_work);
    state->num_items = static_cast<int>(state->host_items.size());
    if (plan.opts.custom_mask) {
      state->host_mask_offsets = sm90::item_mask_offsets(state->host_items, plan.qo_indptr, plan.mask_indptr);
      const std::size_t off_masks = blob.append(state->host_mask_offsets.data(),
                                                state->host_mask_offsets.size() * sizeof(int64_t));
      state->mask_offsets = reinterpret_cast<const int64_t*>(base + off_masks);
    }
  }
  cuda::upload_async(base, blob, a.stream);

  a.num_work_items = state->num_items;
  a.num_kv_splits = S;
  state->num_splits = S;
  if (S > 1) {
    unsigned char* scratch = regions.scratch(blob.size());
    const std::size_t o_bytes = cuda::align_up(static_cast<std::size_t>(rows) * S * a.head_dim * sizeof(float));
    state->partial_o = reinterpret_cast<float*>(scratch);
    state->partial_lse = reinterpret_cast<float*>(scratch + o_bytes);
    a.scratch = scratch;
    a.scratch_bytes = regions.scratch_room(blob.size());
  }
}

// Every field of PlanState that make_kernel_params and the merge read (not host_items: the
// kernel reads the uploaded copy). A new field fails this until it is listed (unless it
// fits into padding).
static_assert(sizeof(sm90::PlanState) == 128, "state_signature_sm90: list the new PlanState field");

std::string state_signature_sm90(const Plan& plan) {
  const auto* st = static_cast<const sm90::PlanState*>(plan.backend_state.get());
  if (!st) return {};
  auto ptr = [](const void* p) { return std::to_string(reinterpret_cast<std::uintptr_t>(p)); };
  return "sm90.items=" + ptr(st->items) + ";sm90.num_items=" + std::to_string(st->num_items) +
         ";sm90.total_kv_tokens=" + std::to_string(st->total_kv_tokens) + ";sm90.num_sms=" +
         std::to_string(st->num_sms) + ";sm90.num_splits=" + std::to_string(st->num_splits) +
         ";sm90.block_m=" + std::to_string(st->block_m) + ";sm90.block_n=" + std::to_string(st->block_n) +
         ";sm90.kernel=" + st->kernel->name + ";sm90.partial_o=" + ptr(st->partial_o) +
         ";sm90.partial_lse=" + ptr(st->partial_lse) + ";sm90.mask_offsets=" + ptr(st->mask_offsets) +
         ";sm90.mask_bytes=" + std::to_string(st->mask_bytes) + ";";
}

}  // namespace detail
}  // namespace flashband
