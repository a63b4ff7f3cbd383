#include "backends/sm90/work_list.h"

#include <algorithm>

namespace flashband::sm90 {

namespace {

core::MaskSpec request_mask(const WorkListInput& in, int b) {
  return {in.qo_indptr[b + 1] - in.qo_indptr[b], in.kv_lens[b], in.causal, in.window_left, in.window_right};
}

core::TileSpan query_tile_span(const WorkListInput& in, const core::MaskSpec& m, int m_block) {
  const int row_begin = m_block * in.block_m;
  return core::kv_tile_span(m, row_begin, row_begin + in.block_m, in.block_n);
}

int tiles(const WorkItem& w) { return w.n_end - w.n_begin; }

// Item indices by request, longest first inside a request (items come in request order).
std::vector<int> request_order(const std::vector<WorkItem>& items, const std::vector<int>& request) {
  std::vector<int> order(items.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  for (std::size_t b = 0; b < order.size();) {
    std::size_t e = b;
    while (e < order.size() && request[e] == request[b]) ++e;
    std::stable_sort(order.begin() + b, order.begin() + e,
                     [&](int x, int y) { return tiles(items[x]) > tiles(items[y]); });
    b = e;
  }
  return order;
}

// The cost bucket of an item of `tiles` KV tiles: num_buckets buckets over 0..longest
// tiles, or one per length with num_buckets = 0.
int cost_bucket(int tiles, int num_buckets, int longest) {
  return num_buckets > 0 ? static_cast<int>(static_cast<int64_t>(tiles) * num_buckets / (longest + 1)) : tiles;
}

// `base` re-sorted (stably, by counting) into cost buckets, the largest first (strictly
// longest-first with num_buckets = 0). Linear in the items: plan() runs this per candidate
// on every call.
std::vector<int> bucket_order(const std::vector<WorkItem>& items, const std::vector<int>& base, int num_buckets,
                              int longest) {
  const int K = num_buckets > 0 ? num_buckets : longest + 1;
  auto bucket = [&](int i) { return cost_bucket(tiles(items[i]), num_buckets, longest); };
  std::vector<std::size_t> start(K + 1, 0);
  for (int i : base) ++start[bucket(i)];
  std::size_t at = 0;  // bucket K-1 first
  for (int k = K - 1; k >= 0; --k) {
    const std::size_t n = start[k];
    start[k] = at;
    at += n;
  }
  std::vector<int> order(base.size());
  for (int i : base) order[start[bucket(i)]++] = i;
  return order;
}

// Calls f(lo, count) for each run of CTAs lo ... lo + count - 1 that take units of list
// position p (units p * heads ... + heads - 1 of the snake on g CTAs: schedule.h), in
// order; a run ends where a round does.
template <class F>
void for_each_cta_run(int64_t p, int heads, int64_t g, F&& f) {
  for (int64_t u = p * heads, end = u + heads; u < end;) {
    const int64_t round = u / g, pos = u - round * g, take = std::min(end - u, g - pos);
    f((round & 1) ? g - pos - take : pos, take);
    u += take;
  }
}

// snake_makespan of the items taken in `order`: each item's heads are a run of units,
// which covers a contiguous range of CTAs in each round it touches, added through a
// difference array (time linear in items + rounds, not units).
int64_t makespan(const std::vector<WorkItem>& items, const std::vector<int>& order, int num_qo_heads, int grid) {
  const int64_t units = static_cast<int64_t>(order.size()) * num_qo_heads;
  if (units == 0 || grid <= 0) return 0;
  const int64_t g = std::min<int64_t>(grid, units);
  std::vector<int64_t> diff(static_cast<std::size_t>(g) + 1, 0);
  for (std::size_t p = 0; p < order.size(); ++p) {
    const int64_t cost = tiles(items[order[p]]) + 1;
    for_each_cta_run(static_cast<int64_t>(p), num_qo_heads, g, [&](int64_t lo, int64_t count) {
      diff[lo] += cost;
      diff[lo + count] -= cost;
    });
  }
  int64_t best = 0, load = 0;
  for (int64_t c = 0; c < g; ++c) best = std::max(best, load += diff[c]);
  return best;
}

// The fewest buckets (powers of two) whose makespan is within 2% of strict longest-first's;
// 0 (strict) when none is.
int choose_buckets(const std::vector<WorkItem>& items, const std::vector<int>& base, const WorkListInput& in,
                   int longest) {
  if (in.num_sms <= 0) return 0;
  if (static_cast<int64_t>(items.size()) * in.num_qo_heads <= in.num_sms) return 1;  // one round: order is moot
  const int64_t strict = makespan(items, bucket_order(items, base, 0, longest), in.num_qo_heads, in.num_sms);
  for (int buckets = 1; buckets <= longest; buckets *= 2)
    if (makespan(items, bucket_order(items, base, buckets, longest), in.num_qo_heads, in.num_sms) * 50 <= strict * 51)
      return buckets;
  return 0;
}

// Adds `delta` to the load of every CTA that runs one of position p's units.
void add_position_load(std::vector<int64_t>& load, int64_t p, int heads, int64_t g, int64_t delta) {
  for_each_cta_run(p, heads, g, [&](int64_t lo, int64_t count) {
    for (int64_t c = lo; c < lo + count; ++c) load[static_cast<std::size_t>(c)] += delta;
  });
}

// Local search on the snake's makespan (build_work_list): take a unit of the most loaded
// CTA, trade its item for a shorter one of the same cost bucket at most a round of
// positions away, keep the trade if no CTA ends up later than the makespan before it
// (trades that keep it are kept too, so an item can drift a few rounds over several).
// Deterministic (a fixed-seed generator), a bounded number of tries of O(heads + grid)
// each. num_buckets, longest: as bucket_order took them (0: any two items may trade).
void balance_snake(const std::vector<WorkItem>& items, std::vector<int>& order, int num_buckets, int longest,
                   int heads, int num_sms) {
  const int64_t n = static_cast<int64_t>(order.size()), units = n * heads;
  const int64_t g = std::min<int64_t>(num_sms, units);
  // One or two rounds: the split rule (splits_by_makespan) plans those. Past 64 rounds a
  // unit is under 2% of a CTA's work.
  if (g <= 0 || units <= 2 * g || units > 64 * g) return;
  const int64_t rounds = (units + g - 1) / g, window = std::max<int64_t>(1, g / heads);
  std::vector<int64_t> load(static_cast<std::size_t>(g), 0);
  int64_t total = 0, longest_unit = 0;
  for (int64_t p = 0; p < n; ++p) {
    const int64_t cost = tiles(items[order[p]]) + 1;
    add_position_load(load, p, heads, g, cost);
    total += cost * heads;
    longest_unit = std::max(longest_unit, cost);
  }
  const int64_t bound = std::max((total + g - 1) / g, longest_unit);
  auto critical = [&] { return std::max_element(load.begin(), load.end()) - load.begin(); };
  int64_t worst = critical(), best = load[static_cast<std::size_t>(worst)];
  const int64_t before = best;
  const std::vector<int> unbalanced = order;
  // A position's bucket never changes (trades stay inside one), so an item's is its place's.
  auto bucket = [&](int t) { return num_buckets > 0 ? cost_bucket(t, num_buckets, longest) : 0; };
  uint32_t state = 0x9e3779b9u;
  auto next = [&](int64_t range) {  // xorshift32, uniform enough for picking positions
    state ^= state << 13, state ^= state >> 17, state ^= state << 5;
    return static_cast<int64_t>(state % static_cast<uint32_t>(range));
  };
  for (int tries = 0; tries < 512 && best > bound; ++tries) {
    const int64_t round = next(rounds);
    const int64_t u = round * g + ((round & 1) ? g - 1 - worst : worst);  // worst's unit that round
    if (u >= units) continue;
    const int64_t i = u / heads, lo = std::max<int64_t>(0, i - window), hi = std::min(n - 1, i + window);
    const int64_t j = lo + next(hi - lo + 1);
    const int ti = tiles(items[order[i]]), tj = tiles(items[order[j]]);
    if (tj >= ti || bucket(tj) != bucket(ti)) continue;
    add_position_load(load, i, heads, g, tj - ti);
    add_position_load(load, j, heads, g, ti - tj);
    const int64_t c = critical();
    if (load[static_cast<std::size_t>(c)] <= best) {
      std::swap(order[i], order[j]);
      worst = c, best = load[static_cast<std::size_t>(c)];
    } else {
      add_position_load(load, i, heads, g, ti - tj);
      add_position_load(load, j, heads, g, tj - ti);
    }
  }
  // Kept for a modelled gain of 1.5% or more: below it a balanced list measured slower
  // (findings F17).
  if (best * 1000 > before * 985) order = unbalanced;
}

}  // namespace

int64_t snake_makespan(const std::vector<WorkItem>& items, int num_qo_heads, int grid) {
  std::vector<int> order(items.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  return makespan(items, order, num_qo_heads, grid);
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
  int longest = 0;
  for (const WorkItem& w : items) longest = std::max(longest, tiles(w));
  const std::vector<int> base = request_order(items, request);
  std::vector<WorkItem> ordered;
  ordered.reserve(items.size());
  const int buckets = choose_buckets(items, base, in, longest);
  std::vector<int> order = bucket_order(items, base, buckets, longest);
  // Split lists keep the bucket order: the split rule (splits_by_makespan) weighs split
  // counts by their makespans, fitted to measurements of that order.
  // Strict longest-first (buckets = 0) has no requests to keep together: any item within
  // the window may trade.
  if (in.balance && in.num_splits == 1) balance_snake(items, order, buckets, longest, in.num_qo_heads, in.num_sms);
  for (int i : order) ordered.push_back(items[i]);
  return ordered;
}

int64_t query_tile_count(const WorkListInput& in) {
  int64_t query_tiles = 0;
  for (int b = 0; b < in.batch; ++b)
    query_tiles += (in.qo_indptr[b + 1] - in.qo_indptr[b] + in.block_m - 1) / in.block_m;
  return query_tiles;
}

int64_t makespan_with_splits(WorkListInput in, int num_splits) {
  in.num_splits = num_splits;
  const std::vector<WorkItem> items = build_work_list(in);
  const int64_t units = static_cast<int64_t>(items.size()) * in.num_qo_heads;
  return snake_makespan(items, in.num_qo_heads, static_cast<int>(std::min<int64_t>(units, in.num_sms)));
}

int wave_splits(const WorkListInput& in, int max_splits, int min_tiles_per_split) {
  return choose_num_splits(query_tile_count(in) * in.num_qo_heads, max_kv_tiles(in), in.num_sms, max_splits,
                           min_tiles_per_split);
}

int64_t planned_makespan(const WorkListInput& in, int max_splits, int min_tiles_per_split) {
  return makespan_with_splits(in, wave_splits(in, max_splits, min_tiles_per_split));
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

int splits_by_makespan(const WorkListInput& in, int splits, int max_splits, int min_tiles_per_split,
                       int merge_steps) {
  const int64_t units = query_tile_count(in) * in.num_qo_heads;
  if (units == 0 || in.num_sms <= 0 || units > 2 * static_cast<int64_t>(in.num_sms)) return splits;
  auto cost = [&](int s) { return makespan_with_splits(in, s) + (s > 1 ? merge_steps : 0); };
  const int limit = std::min({kMaxSplitsByMakespan, max_splits, max_kv_tiles(in) / std::max(1, min_tiles_per_split)});
  const int64_t base = cost(splits);
  int best = splits;
  int64_t best_cost = base;
  for (int s = splits + 1; s <= limit; ++s) {
    const int64_t c = cost(s);
    if (c < best_cost) best = s, best_cost = c;
  }
  return best_cost * 10 <= base * 9 ? best : splits;
}

}  // namespace flashband::sm90
