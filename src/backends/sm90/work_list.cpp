#include "backends/sm90/work_list.h"

#include <algorithm>

namespace flashband::sm90 {

namespace {

core::MaskSpec request_mask(const WorkListInput& in, int b) {
  return {in.qo_indptr[b + 1] - in.qo_indptr[b], in.kv_lens[b], in.causal, in.window_left};
}

core::TileSpan query_tile_span(const WorkListInput& in, const core::MaskSpec& m, int m_block) {
  const int row_begin = m_block * in.block_m;
  return core::kv_tile_span(m, row_begin, row_begin + in.block_m, in.block_n);
}

}  // namespace

std::vector<WorkItem> build_work_list(const WorkListInput& in) {
  std::vector<WorkItem> items;
  for (int b = 0; b < in.batch; ++b) {
    const core::MaskSpec m = request_mask(in, b);
    const int m_blocks = (m.qo_len + in.block_m - 1) / in.block_m;
    for (int mb = 0; mb < m_blocks; ++mb) {
      const core::TileSpan span = query_tile_span(in, m, mb);
      for (int s = 0; s < in.num_splits; ++s) {
        const core::TileSpan part = in.num_splits > 1 ? split_span(span, in.num_splits, s) : span;
        items.push_back({in.qo_indptr[b], m.qo_len, in.kv_start[b], m.kv_len, mb, part.begin, part.end,
                         in.num_splits > 1 ? s : -1});
      }
    }
  }
  std::stable_sort(items.begin(), items.end(), [](const WorkItem& a, const WorkItem& b) {
    return (a.n_end - a.n_begin) > (b.n_end - b.n_begin);
  });
  return items;
}

int max_kv_tiles(const WorkListInput& in) {
  int best = 0;
  for (int b = 0; b < in.batch; ++b) {
    const core::MaskSpec m = request_mask(in, b);
    const int m_blocks = (m.qo_len + in.block_m - 1) / in.block_m;
    for (int mb = 0; mb < m_blocks; ++mb) {
      const core::TileSpan span = query_tile_span(in, m, mb);
      best = std::max(best, span.end - span.begin);
    }
  }
  return best;
}

int choose_num_splits(int64_t units, int max_tiles, int num_sms, int max_splits, int min_tiles_per_split) {
  // Enough query tiles to fill most of the machine: splitting only adds the merge.
  if (units <= 0 || units * 2 > num_sms) return 1;
  int splits = static_cast<int>(num_sms / units);  // whole waves: no straggling partial wave
  splits = std::min(splits, max_tiles / std::max(1, min_tiles_per_split));
  splits = std::min(splits, max_splits);
  return std::max(1, splits);
}

}  // namespace flashband::sm90
