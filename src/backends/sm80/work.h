// The work partition shared by the planner (host) and the kernels (device): one work item
// per (request, kv head, packed row tile, kv split), and how a split cuts a row tile's KV
// range. Both sides call these functions, so the planner's costs and the kernel's loops
// cannot disagree.
#pragma once
#include <cstdint>

#include "core/fast_divmod.h"
#include "core/hd.h"
#include "core/mask.h"

namespace flashband::sm80 {

// 16 bytes, read by a CTA as one int4.
struct WorkItem {
  int32_t request;
  int32_t kv_head;
  int32_t row_tile;  // packed rows [row_tile * kBlockM, +kBlockM) of the request
  int32_t split;     // index in [0, num_kv_splits)
};
static_assert(sizeof(WorkItem) == 16, "work items are loaded as int4");

// GQA packing: packed row r of a request is query token r / group and query head
// kv_head * group + r % group, so one K/V tile serves the whole group.
struct RowTile {
  int token_begin;
  int token_end;  // exclusive, clipped to qo_len
};
// The group as an int (host) or as a FastDivmod (device, where a division by a runtime int
// is some 20 instructions, run once per CTA for each division).
FB_HD constexpr int group_size(int group) { return group; }
FB_HD int group_size(const core::FastDivmod& group) { return group.divisor; }
FB_HD constexpr int group_div(int n, int group) { return n / group; }
FB_HD int group_div(int n, const core::FastDivmod& group) { return group.div(n); }

template <class Group>
FB_HD constexpr RowTile row_tile_tokens(int row_begin, int row_end, const Group& group, int qo_len) {
  const int rows = qo_len * group_size(group);
  if (row_end > rows) row_end = rows;
  if (row_end <= row_begin) return {0, 0};
  return {group_div(row_begin, group), group_div(row_end - 1, group) + 1};
}

// Whether packed rows `step` apart (a power of two) always share a query head, so that
// their tokens are step / group apart: the group divides the step.
FB_HD constexpr bool group_divides(int group, int step) { return group <= step && (group & (group - 1)) == 0; }

// KV tiles [begin, end) of split `split` out of `num_splits`: the row tile's visible span
// cut into nearly equal contiguous pieces (sizes differ by at most one tile). A split past
// the span's length is empty and yields the empty state.
FB_HD constexpr core::TileSpan split_span(core::TileSpan span, int num_splits, int split) {
  const int n = span.end - span.begin;
  if (n <= 0 || num_splits <= 1) return span;
  const int b = span.begin + static_cast<int>(static_cast<int64_t>(n) * split / num_splits);
  const int e = span.begin + static_cast<int>(static_cast<int64_t>(n) * (split + 1) / num_splits);
  return {b, e};
}

}  // namespace flashband::sm80
