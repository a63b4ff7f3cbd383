#include "backends/sm80/work_plan.h"

#include <algorithm>
#include <string>

#include "backends/sm80/split_policy.h"
#include "core/mask.h"

namespace flashband::sm80 {

namespace {

// One packed row tile of one request (the same for every kv head).
struct RowTileSpan {
  int request;
  int row_tile;
  core::TileSpan span;  // visible KV tiles
};

}  // namespace

dispatch::KernelShape planned_shape(const detail::Plan& plan) {
  if (plan.kernel.launch) return plan.kernel.key.shape;
  return plan.problem.op == Op::kPagedDecode ? dispatch::KernelShape::kDecode : dispatch::KernelShape::kPrefill;
}

WorkPlan make_work_plan(const detail::Plan& plan, int sm_count, std::size_t workspace_bytes) {
  Workspace bytes_only;
  bytes_only.bytes = workspace_bytes;
  return make_work_plan(plan, sm_count, detail::WorkspaceRegions(bytes_only));
}

WorkPlan make_work_plan(const detail::Plan& plan, int sm_count, const detail::WorkspaceRegions& workspace) {
  const core::AttentionParams& a = plan.params;
  WorkPlan wp;
  wp.tile = tile_shape(planned_shape(plan), a.head_dim);
  const TileShape& tile = wp.tile;
  const bool paged = a.kv_storage == core::KVStorage::kPaged;
  const int B = plan.batch;
  const int H = a.num_qo_heads, Hk = a.num_kv_heads, group = H / Hk;

  // Row tiles and the KV tiles each can see.
  std::vector<RowTileSpan> tiles;
  int64_t total_tiles = 0, max_tiles = 0;
  for (int b = 0; b < B; ++b) {
    const int qo_len = plan.qo_indptr[b + 1] - plan.qo_indptr[b];
    const core::MaskSpec ms{qo_len, plan.kv_lens[b], a.causal, a.window_left, a.window_right};
    const int64_t rows = static_cast<int64_t>(qo_len) * group;
    const int num_row_tiles = static_cast<int>((rows + tile.block_m - 1) / tile.block_m);
    for (int m = 0; m < num_row_tiles; ++m) {
      const RowTile rt = row_tile_tokens(m * tile.block_m, (m + 1) * tile.block_m, group, qo_len);
      const core::TileSpan span = core::kv_tile_span(ms, rt.token_begin, rt.token_end, tile.block_n);
      tiles.push_back({b, m, span});
      total_tiles += span.end - span.begin;
      max_tiles = std::max<int64_t>(max_tiles, span.end - span.begin);
    }
  }
  const int64_t items = static_cast<int64_t>(tiles.size()) * Hk;
  const int64_t rows = a.total_qo_tokens * H;

  // Index arrays, then the work list, then the page indices: their count grows with the
  // cache, and nothing after them moves when it does (a cuda_graph capture keeps the
  // addresses of every array). What remains bounds the work list and the partials.
  wp.off_qo_indptr = wp.blob.append(plan.qo_indptr);
  wp.off_kv_indptr = wp.blob.append(plan.kv_indptr);
  wp.off_kv_lens = wp.blob.append(plan.kv_lens);
  if (paged) wp.off_last_page_len = wp.blob.append(plan.last_page_len);
  if (plan.opts.custom_mask)
    wp.off_mask_indptr = wp.blob.append(plan.mask_indptr.data(), plan.mask_indptr.size() * sizeof(int64_t));
  // Device page indices are read from the caller's array: none go to the workspace.
  const bool upload_pages = paged && plan.device_page_indices == nullptr;
  const std::size_t page_bytes = upload_pages ? cuda::align_up(plan.page_indices.size() * sizeof(int32_t)) : 0;
  const std::size_t index_bytes = cuda::align_up(wp.blob.size()) + page_bytes;
  auto partials = [&](int s) {
    return s > 1 ? cuda::align_up(static_cast<std::size_t>(rows) * s * (a.head_dim + 1) * sizeof(float)) : 0;
  };
  auto arrays = [&](int s) {
    return index_bytes + cuda::align_up(static_cast<std::size_t>(items) * s * sizeof(WorkItem));
  };
  if (!workspace.fits(arrays(1), 0))
    throw Error(ErrorCode::kInvalidArgument, "workspace: " + workspace.got() + ", this sm80 plan needs at least " +
                                                 workspace.need(arrays(1), 0) + " (index arrays and work list)");

  SplitInputs in;
  in.items = items;
  in.total_tiles = total_tiles * Hk;
  in.max_tiles = max_tiles;
  in.slots = static_cast<int64_t>(sm_count) * tile.ctas_per_sm;
  in.min_tiles_per_split = (kMinKeysPerSplit + tile.block_n - 1) / tile.block_n;
  int64_t max_splits = plan.opts.disable_split_kv ? 1 : kMaxKVSplits;
  if (items > 0) max_splits = std::min<int64_t>(max_splits, std::max<int64_t>(1, kMaxSplitWorkItems / items));
  if (rows > 0) max_splits = std::min<int64_t>(max_splits, std::max<int64_t>(1, kMaxPartialRowSplits / rows));
  while (max_splits > 1 && !workspace.fits(arrays(static_cast<int>(max_splits)), partials(static_cast<int>(max_splits))))
    --max_splits;
  in.max_splits = static_cast<int>(max_splits);
  const bool graph = plan.opts.cuda_graph;
  const int S = graph ? wave_kv_splits(in) : choose_kv_splits(in);
  wp.num_kv_splits = S;

  // Work items, longest first in 8 cost buckets; within a bucket in (request, head, row
  // tile) order so CTAs running together share their request's K/V in L2.
  struct Keyed {
    int bucket;
    WorkItem w;
  };
  std::vector<Keyed> keyed;
  keyed.reserve(static_cast<std::size_t>(items) * S);
  // `tiles` holds each request's row tiles together; the heads go between the request and
  // its row tiles, so the CTAs of one head's K/V run together. (Row tiles outside heads put
  // every head of a long request in flight at once, past L2: findings F23.)
  const int64_t max_cost = (max_tiles + S - 1) / S + 1;
  for (std::size_t first = 0, last = 0; first < tiles.size(); first = last) {
    while (last < tiles.size() && tiles[last].request == tiles[first].request) ++last;
    for (int h = 0; h < Hk; ++h)
      for (std::size_t i = first; i < last; ++i)
        for (int s = 0; s < S; ++s) {
          const RowTileSpan& t = tiles[i];
          const core::TileSpan piece = split_span(t.span, S, s);
          const int64_t cost = piece.end - piece.begin + 1;
          keyed.push_back({static_cast<int>(cost * 8 / (max_cost + 1)), {t.request, h, t.row_tile, s}});
        }
  }
  std::stable_sort(keyed.begin(), keyed.end(), [](const Keyed& x, const Keyed& y) { return x.bucket > y.bucket; });
  wp.work.resize(keyed.size());
  for (std::size_t i = 0; i < keyed.size(); ++i) wp.work[i] = keyed[i].w;
  wp.off_work = wp.blob.append(wp.work.data(), wp.work.size() * sizeof(WorkItem));
  if (upload_pages) wp.off_page_indices = wp.blob.append(plan.page_indices);
  if (S > 1) {
    wp.scratch_bytes = partials(S);
    wp.scratch_offset = workspace.scratch_offset(wp.blob.size(), wp.scratch_bytes, graph);
  }
  return wp;
}

}  // namespace flashband::sm80
