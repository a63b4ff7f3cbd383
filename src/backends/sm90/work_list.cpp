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

int tiles(const WorkItem& w) { return w.n_end - w.n_begin; }

}  // namespace

void order_items(std::vector<WorkItem>& items, std::vector<int>& request, int num_buckets) {
  std::vector<int> perm(items.size());
  for (std::size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int>(i);
  int longest = 0;
  for (const WorkItem& w : items) longest = std::max(longest, tiles(w));
  auto bucket = [&](int i) {
    return num_buckets > 0 ? static_cast<int64_t>(tiles(items[i])) * num_buckets / (longest + 1) : tiles(items[i]);
  };
  std::stable_sort(perm.begin(), perm.end(), [&](int x, int y) {
    const int64_t bx = bucket(x), by = bucket(y);
    if (bx != by) return bx > by;
    if (request[x] != request[y]) return request[x] < request[y];
    return tiles(items[x]) > tiles(items[y]);
  });
  std::vector<WorkItem> w(items.size());
  std::vector<int> r(items.size());
  for (std::size_t i = 0; i < perm.size(); ++i) {
    w[i] = items[perm[i]];
    r[i] = request[perm[i]];
  }
  items.swap(w);
  request.swap(r);
}

int64_t snake_makespan(const std::vector<WorkItem>& items, int num_qo_heads, int grid) {
  const int64_t units = static_cast<int64_t>(items.size()) * num_qo_heads;
  if (units == 0 || grid <= 0) return 0;
  const int g = static_cast<int>(std::min<int64_t>(grid, units));
  std::vector<int64_t> load(g, 0);
  for (int64_t u = 0; u < units; ++u) {
    const int64_t round = u / g, pos = u % g;
    load[(round & 1) ? g - 1 - pos : pos] += tiles(items[u / num_qo_heads]) + 1;
  }
  return *std::max_element(load.begin(), load.end());
}

int order_buckets(const std::vector<WorkItem>& items, const std::vector<int>& request, const WorkListInput& in) {
  if (in.num_sms <= 0 || items.empty()) return 0;
  int longest = 0;
  for (const WorkItem& w : items) longest = std::max(longest, tiles(w));
  auto makespan = [&](int buckets) {
    std::vector<WorkItem> w = items;
    std::vector<int> r = request;
    order_items(w, r, buckets);
    return snake_makespan(w, in.num_qo_heads, in.num_sms);
  };
  const int64_t best = makespan(0);
  for (int buckets = 1; buckets <= longest; buckets *= 2)
    if (makespan(buckets) * 50 <= best * 51) return buckets;
  return 0;
}

std::vector<WorkItem> build_work_list(const WorkListInput& in) {
  std::vector<WorkItem> items;
  std::vector<int> request;
  for (int b = 0; b < in.batch; ++b) {
    const core::MaskSpec m = request_mask(in, b);
    const int m_blocks = (m.qo_len + in.block_m - 1) / in.block_m;
    for (int mb = 0; mb < m_blocks; ++mb) {
      const core::TileSpan span = query_tile_span(in, m, mb);
      for (int s = 0; s < in.num_splits; ++s) {
        const core::TileSpan part = in.num_splits > 1 ? split_span(span, in.num_splits, s) : span;
        items.push_back({in.qo_indptr[b], m.qo_len, in.kv_start[b], m.kv_len, mb, part.begin, part.end,
                         in.num_splits > 1 ? s : -1});
        request.push_back(b);
      }
    }
  }
  order_items(items, request, order_buckets(items, request, in));
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
