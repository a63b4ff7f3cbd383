// The sm90 work list: one item per (request, query tile, KV split), ordered longest-first in
// cost buckets so that a persistent grid that takes items round-robin finishes its long
// ones early (an approximation of longest-processing-time scheduling) while the query tiles
// of a request run close together. Every query head of an item is a
// separate unit of work: unit w is item w / num_qo_heads, head w % num_qo_heads, so the heads
// of one GQA group run side by side and share their K/V tiles in L2.
#pragma once
#include <cstdint>
#include <vector>

#include "core/hd.h"
#include "core/mask.h"

namespace flashband::sm90 {

struct alignas(16) WorkItem {
  int32_t qo_start;  // first token of the request in Q / O / LSE
  int32_t qo_len;
  int32_t kv_start;  // contiguous: first token in K / V; paged: first entry in page_indices
  int32_t kv_len;
  int32_t m_block;   // query tile of the request: rows [m_block * kBlockM, +kBlockM)
  int32_t n_begin;   // KV tiles [n_begin, n_end) of width kBlockN this item visits
  int32_t n_end;
  int32_t split;     // -1: writes O and LSE; >= 0: writes partial state number `split`
};
static_assert(sizeof(WorkItem) == 32, "WorkItem is loaded as two 16-byte vectors");

// The KV tiles a query tile must visit (core::kv_tile_span), cut into `num_splits` chunks of
// whole tiles; chunk `split` may be empty.
FB_HD constexpr core::TileSpan split_span(core::TileSpan span, int num_splits, int split) {
  const int n = span.end > span.begin ? span.end - span.begin : 0;
  const int per = (n + num_splits - 1) / num_splits;
  int b = span.begin + split * per;
  int e = b + per;
  if (e > span.end) e = span.end;
  if (b > e) b = e;
  return {b, e};
}

struct WorkListInput {
  int batch = 0;
  const int32_t* qo_indptr = nullptr;  // [batch + 1]
  const int32_t* kv_start = nullptr;   // [batch]: kv_indptr (tokens, or pages when paged)
  const int32_t* kv_lens = nullptr;    // [batch]
  bool causal = false;
  int window_left = -1;
  int window_right = -1;  // so every query tile's KV span follows the band (core::kv_tile_span)
  // A packed custom mask (read by the tile rule alone, which keeps it on the narrow tiles'
  // runtime-mask kernels: tile_shapes.h compiles_custom_mask).
  bool custom_mask = false;
  // fp8 K/V (e4m3 / e5m2): only the paged narrow runtime-mask tiles have fp8 rows
  // (kernel_list.h), so the tile rule picks those (tile_rule.cpp choose_kernel).
  bool fp8_kv = false;
  int block_m = 0;
  int block_n = 0;
  int num_splits = 1;  // 1: items write O directly
  // The persistent grid the list is ordered for (units = items x num_qo_heads, grid =
  // min(units, num_sms)); num_sms = 0 orders strictly longest-first.
  int num_qo_heads = 1;
  int num_sms = 0;
  // Unsplit lists of more than two rounds of units: items of a bucket trade places where
  // the snake's makespan drops (build_work_list; balance_snake in work_list.cpp), which
  // the makespans below then see too. false: the bucket order as it is.
  bool balance = true;
};

// Items for every non-empty request. Requests with qo_len = 0 get none; every query row of
// the others is covered by exactly one item per split, including rows that see no key
// (their item has an empty span and writes 0 / -inf).
//
// Order: longest-first in K cost buckets (bucket = tiles * K / (longest + 1)), and inside a
// bucket by request, then longest-first. Strict longest-first (one bucket per length)
// balances the persistent grid best, but under a causal mask it runs one query tile of
// every request and head side by side, so a batch whose K/V exceeds L2 reads it from DRAM
// once per query tile (findings F16). Fewer buckets put the
// query tiles of one request together, so the CTAs running at the same time share its K/V tiles in L2; the planner takes the fewest buckets
// whose makespan under the persistent schedule (snake_makespan) stays within 2% of strict
// longest-first's. With in.balance, no KV splits and more than two rounds of units, items
// of one bucket then trade places, each trade within a round of positions, where that
// lowers the snake's makespan by 1.5% or more: the snake deals units to CTAs by position
// alone, so the bucket order leaves some CTAs a few long units more than others (model:
// 2k causal at B x S = 16k 2-4% over the list scheduling bound), and trades this close keep
// the requests that run together about as they were.
std::vector<WorkItem> build_work_list(const WorkListInput& in);

// Makespan of the persistent schedule (schedule.h: round r takes the next `grid` units,
// alternating direction) in KV steps, counting one extra step per unit for its start and
// end.
int64_t snake_makespan(const std::vector<WorkItem>& items, int num_qo_heads, int grid);

// Query tiles of the batch at in.block_m rows (work items before KV splits).
int64_t query_tile_count(const WorkListInput& in);

// snake_makespan of the list build_work_list gives `in` with `num_splits` KV splits (in's
// own num_splits is not read), on a grid of min(units, in.num_sms).
int64_t makespan_with_splits(WorkListInput in, int num_splits);

// makespan_with_splits at the wave rule's split count (wave_splits). The plan may split a
// one-round problem further (splits_by_makespan).
int64_t planned_makespan(const WorkListInput& in, int max_splits, int min_tiles_per_split);

// Longest KV span (in tiles) over the query tiles of the batch.
int max_kv_tiles(const WorkListInput& in);

// How many KV splits to use: enough to give `num_sms` multiprocessors one wave of work
// when the query tiles alone (`units` = items x heads) leave most of them idle, but never
// fewer than `min_tiles_per_split` KV tiles per split nor more than `max_splits`.
int choose_num_splits(int64_t units, int max_tiles, int num_sms, int max_splits, int min_tiles_per_split = 4);

// choose_num_splits for `in`'s units (query tiles x heads), longest span and in.num_sms.
int wave_splits(const WorkListInput& in, int max_splits, int min_tiles_per_split);

// choose_num_splits counts units, not their lengths: a causal batch of one round of units
// (more than half the multiprocessors) runs as long as its longest unit, however short the
// rest. For problems of at most two rounds this weighs the split counts from `splits` (the
// wave rule's) to kMaxSplitsByMakespan (at least min_tiles_per_split KV tiles a split, at
// most max_splits) by makespan_with_splits plus merge_steps for the merge that follows a
// split run, and returns the cheapest where it is at least 10% below `splits`'s cost, else
// `splits`: it only ever splits more. in.num_splits is not read.
constexpr int kMaxSplitsByMakespan = 8;
// The merge launch that follows a split run, in KV steps of the run, fitted by whole-call
// time at D = 128 (findings F18).
constexpr int kSplitMergeSteps = 8;
// The merge at a head dim: it reads every split's float32 partial state (4 D + 4 bytes a
// row), so it grows with D, while a KV step of the tiles each head dim runs takes about
// the same time (findings F18).
constexpr int split_merge_steps(int head_dim) { return kSplitMergeSteps * head_dim / 128; }
int splits_by_makespan(const WorkListInput& in, int splits, int max_splits, int min_tiles_per_split,
                       int merge_steps);

}  // namespace flashband::sm90
