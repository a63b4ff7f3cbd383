// The sm80 planner's host half, without a GPU: split policy, split spans, GQA row packing,
// the work list (every row tile, kv head and split exactly once; splits partition each row
// tile's visible KV span; longest first), the workspace bound, and workspace limits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <tuple>

#include "backends/sm80/split_policy.h"
#include "backends/sm80/work.h"
#include "backends/sm80/work_plan.h"
#include "backends/sm80/workspace.h"
#include "core/mask.h"
#include "flashband/error.h"

namespace flashband::sm80 {
namespace {

TEST(Sm80SplitSpan, PiecesPartitionTheSpanEvenly) {
  for (int begin : {0, 3})
    for (int n = 0; n <= 20; ++n)
      for (int S = 1; S <= 25; ++S) {
        const core::TileSpan span{begin, begin + n};
        int next = begin, lo = 1 << 30, hi = 0;
        for (int s = 0; s < S; ++s) {
          const core::TileSpan p = split_span(span, S, s);
          ASSERT_EQ(p.begin, next) << "n " << n << " S " << S << " s " << s;
          ASSERT_GE(p.end, p.begin);
          next = p.end;
          lo = std::min(lo, p.end - p.begin);
          hi = std::max(hi, p.end - p.begin);
        }
        ASSERT_EQ(next, begin + n);
        if (n > 0) ASSERT_LE(hi - lo, 1) << "n " << n << " S " << S;
      }
}

TEST(Sm80RowPacking, TokensOfARowTileMatchBruteForce) {
  for (int group : {1, 2, 3, 4, 7, 8, 32})
    for (int block_m : {16, 128})
      for (int qo = 0; qo <= 40; ++qo)
        for (int row0 = 0; row0 < qo * group + block_m; row0 += block_m) {
          int first = -1, last = -1;
          for (int r = row0; r < row0 + block_m && r < qo * group; ++r) {
            if (first < 0) first = r / group;
            last = r / group;
          }
          const RowTile t = row_tile_tokens(row0, row0 + block_m, group, qo);
          if (first < 0) {
            ASSERT_GE(t.token_begin, t.token_end);
          } else {
            ASSERT_EQ(t.token_begin, first);
            ASSERT_EQ(t.token_end, last + 1);
          }
        }
}

TEST(Sm80SplitPolicy, EnoughTilesMeansNoSplit) {
  SplitInputs in;
  in.items = 1024;
  in.total_tiles = 1024 * 32;
  in.max_tiles = 32;
  in.slots = 264;
  in.min_tiles_per_split = 4;
  EXPECT_EQ(choose_kv_splits(in), 1);
}

TEST(Sm80SplitPolicy, FewLongItemsSplitWithinLimits) {
  SplitInputs in;
  in.items = 8;  // decode, batch 1, 8 kv heads, 32k keys
  in.total_tiles = 8 * 512;
  in.max_tiles = 512;
  in.slots = 264;
  in.min_tiles_per_split = 4;
  const int s = choose_kv_splits(in);
  EXPECT_GE(s, 16);
  EXPECT_LE(s, kMaxKVSplits);
  EXPECT_LE(in.items * s, 2 * in.slots);  // no more than about one wave of CTAs
  in.max_splits = 5;
  EXPECT_LE(choose_kv_splits(in), 5);
  in.max_splits = kMaxKVSplits;
  in.max_tiles = 3;  // too short to be worth cutting
  in.total_tiles = 8 * 3;
  EXPECT_EQ(choose_kv_splits(in), 1);
}

// ---- make_work_plan -------------------------------------------------------------------

struct Problem {
  std::vector<int> qo, kv;
  int hq, hk, d;
  bool causal;
  int window;
  bool decode, paged;
  int page_size = 16;
  bool graph = false;  // Options::cuda_graph
  int window_right = -1;  // >= 1 without causal, as plans give it
};

detail::Plan make_plan(const Problem& pr) {
  detail::Plan p;
  const int B = static_cast<int>(pr.kv.size());
  p.batch = B;
  p.opts.cuda_graph = pr.graph;
  p.problem.op = pr.decode ? Op::kPagedDecode : (pr.paged ? Op::kPagedPrefill : Op::kRaggedPrefill);
  p.qo_indptr.assign(1, 0);
  p.kv_indptr.assign(1, 0);
  for (int b = 0; b < B; ++b) {
    p.qo_indptr.push_back(p.qo_indptr.back() + (pr.decode ? 1 : pr.qo[b]));
    p.kv_lens.push_back(pr.kv[b]);
    if (pr.paged) {
      const int pages = (pr.kv[b] + pr.page_size - 1) / pr.page_size;
      for (int i = 0; i < pages; ++i) p.page_indices.push_back(static_cast<int>(p.page_indices.size()) * 3 + 1);
      p.kv_indptr.push_back(p.kv_indptr.back() + pages);
      p.last_page_len.push_back(pages ? pr.kv[b] - (pages - 1) * pr.page_size : 0);
    } else {
      p.kv_indptr.push_back(p.kv_indptr.back() + pr.kv[b]);
    }
  }
  core::AttentionParams& a = p.params;
  a.batch = B;
  a.num_qo_heads = pr.hq;
  a.num_kv_heads = pr.hk;
  a.head_dim = pr.d;
  a.kv_storage = pr.paged ? core::KVStorage::kPaged : core::KVStorage::kContiguous;
  a.page_size = pr.page_size;
  a.causal = pr.causal;
  int max_kv = 0;
  for (int k : pr.kv) max_kv = std::max(max_kv, k);
  a.window_left = core::normalize_window(pr.window, max_kv);
  a.window_right = pr.window_right;
  a.total_qo_tokens = p.qo_indptr.back();
  return p;
}

std::vector<int32_t> read_ints(const cuda::IndexBlob& blob, std::size_t off, std::size_t n) {
  std::vector<int32_t> v(n);
  if (n) std::memcpy(v.data(), blob.data() + off, n * sizeof(int32_t));
  return v;
}

// A custom mask's byte offsets (plan.mask_indptr, int64) are staged beside the other index
// arrays, inside sm80_plan_bytes; without a mask nothing is staged for them.
TEST(Sm80WorkPlan, StagesCustomMaskOffsets) {
  const Problem pr{{5, 0, 17}, {9, 3, 70}, 4, 2, 128, false, -1, false, true};
  detail::Plan plan = make_plan(pr);
  const std::size_t bound = sm80_workspace_bytes(plan.batch, plan.params.total_qo_tokens, pr.hq, pr.d) +
                            sm80_page_index_bytes(static_cast<int64_t>(plan.page_indices.size()));
  const std::size_t plain_blob = make_work_plan(plan, 132, bound).blob.size();
  plan.opts.custom_mask = true;
  plan.mask_indptr = {0, 6, 6, 6 + (17 * 70 + 7) / 8};
  const WorkPlan wp = make_work_plan(plan, 132, bound);
  ASSERT_GT(wp.blob.size(), plain_blob);
  std::vector<int64_t> staged(plan.mask_indptr.size());
  std::memcpy(staged.data(), wp.blob.data() + wp.off_mask_indptr, staged.size() * sizeof(int64_t));
  EXPECT_EQ(staged, plan.mask_indptr);
  EXPECT_EQ(wp.off_mask_indptr % alignof(int64_t), 0u);
  EXPECT_LE(wp.blob.size(), sm80_plan_bytes(plan.batch, plan.params.total_qo_tokens, pr.hq) +
                                sm80_page_index_bytes(static_cast<int64_t>(plan.page_indices.size())));
}

void check_work_plan(const Problem& pr, int sm_count) {
  const detail::Plan plan = make_plan(pr);
  const std::size_t bound = sm80_workspace_bytes(plan.batch, plan.params.total_qo_tokens, pr.hq, pr.d) +
                            sm80_page_index_bytes(static_cast<int64_t>(plan.page_indices.size()));
  const WorkPlan wp = make_work_plan(plan, sm_count, bound);
  const int S = wp.num_kv_splits;
  ASSERT_GE(S, 1);
  ASSERT_LE(S, kMaxKVSplits);

  // The staged arrays are the plan's.
  EXPECT_EQ(read_ints(wp.blob, wp.off_qo_indptr, plan.qo_indptr.size()), plan.qo_indptr);
  EXPECT_EQ(read_ints(wp.blob, wp.off_kv_indptr, plan.kv_indptr.size()), plan.kv_indptr);
  EXPECT_EQ(read_ints(wp.blob, wp.off_kv_lens, plan.kv_lens.size()), plan.kv_lens);
  if (pr.paged) {
    EXPECT_EQ(read_ints(wp.blob, wp.off_page_indices, plan.page_indices.size()), plan.page_indices);
    EXPECT_EQ(read_ints(wp.blob, wp.off_last_page_len, plan.last_page_len.size()), plan.last_page_len);
  }
  ASSERT_EQ(wp.off_work % 16, 0u);
  ASSERT_LE(wp.off_work + wp.work.size() * sizeof(WorkItem), wp.blob.size());
  EXPECT_EQ(0, std::memcmp(wp.blob.data() + wp.off_work, wp.work.data(), wp.work.size() * sizeof(WorkItem)));
  if (S > 1) {
    EXPECT_LE(wp.scratch_offset + wp.scratch_bytes, bound);
    EXPECT_GE(wp.scratch_offset, wp.blob.size());  // the partials never overlap the arrays
  }
  EXPECT_LE(wp.blob.size(), bound);
  // plan_data of sm80_plan_bytes holds the arrays of the same plan, its splits included.
  Workspace separate;
  separate.plan_data = reinterpret_cast<void*>(std::uintptr_t{1} << 40);  // never dereferenced
  separate.data = reinterpret_cast<void*>(std::uintptr_t{1} << 41);
  separate.plan_bytes = sm80_plan_bytes(plan.batch, plan.params.total_qo_tokens, pr.hq) +
                        sm80_page_index_bytes(static_cast<int64_t>(plan.page_indices.size()));
  separate.bytes = bound;
  const WorkPlan beside = make_work_plan(plan, sm_count, detail::WorkspaceRegions(separate));
  EXPECT_EQ(beside.num_kv_splits, S);
  EXPECT_LE(beside.blob.size(), separate.plan_bytes);

  // Every (request, head, row tile, split) exactly once; splits cover each row tile's span.
  const int group = pr.hq / pr.hk;
  std::map<std::tuple<int, int, int, int>, int> seen;
  for (const WorkItem& w : wp.work) ++seen[{w.request, w.kv_head, w.row_tile, w.split}];
  std::size_t expected = 0;
  for (int b = 0; b < plan.batch; ++b) {
    const int qo = plan.qo_indptr[b + 1] - plan.qo_indptr[b];
    const int tiles = (qo * group + wp.tile.block_m - 1) / wp.tile.block_m;
    const core::MaskSpec ms{qo, plan.kv_lens[b], plan.params.causal, plan.params.window_left,
                            plan.params.window_right};
    for (int m = 0; m < tiles; ++m) {
      const RowTile rt = row_tile_tokens(m * wp.tile.block_m, (m + 1) * wp.tile.block_m, group, qo);
      const core::TileSpan span = core::kv_tile_span(ms, rt.token_begin, rt.token_end, wp.tile.block_n);
      // The span holds every key any row of the tile sees.
      for (int t = rt.token_begin; t < rt.token_end; ++t) {
        const core::KVRange r = core::row_kv_range(ms, t);
        if (!r.empty()) {
          ASSERT_GE(r.first, span.begin * wp.tile.block_n);
          ASSERT_LE(r.last, span.end * wp.tile.block_n);
        }
      }
      for (int h = 0; h < pr.hk; ++h)
        for (int s = 0; s < S; ++s) {
          ASSERT_EQ((seen[{b, h, m, s}]), 1) << "request " << b << " head " << h << " tile " << m << " split " << s;
          ++expected;
        }
    }
  }
  EXPECT_EQ(wp.work.size(), expected);
}

TEST(Sm80WorkPlan, CoversEveryRowTileHeadAndSplit) {
  const std::vector<Problem> problems = {
      {{13}, {77}, 2, 2, 64, false, -1, false, false},
      {{300}, {229}, 4, 1, 128, true, -1, false, false},
      {{17, 0, 9, 5}, {70, 13, 45, 0}, 4, 2, 256, true, 31, false, true, 5},
      {{}, {77, 1, 0, 45, 16}, 32, 8, 128, false, -1, true, true, 16},
      {{}, {4000}, 8, 1, 128, false, -1, true, true, 1},
      {{16}, {3000}, 2, 1, 64, true, 700, false, false},
      {{1, 64}, {1, 8191}, 2, 1, 64, true, -1, false, true, 128},
      {{0, 0}, {0, 5}, 7, 1, 64, false, 0, false, false},
      {{300, 40}, {300, 4000}, 4, 2, 128, false, 31, false, true, 16, false, 7},  // two-sided bands
      {{2000}, {2000}, 8, 1, 64, false, -1, false, false, 16, false, 100},
  };
  for (const Problem& pr : problems)
    for (int sms : {1, 108, 132}) {
      SCOPED_TRACE("problem with " + std::to_string(pr.kv.size()) + " requests, head_dim " + std::to_string(pr.d) +
                   ", " + std::to_string(sms) + " SMs");
      check_work_plan(pr, sms);
    }
}

TEST(Sm80WorkPlan, RandomBatchesStayWithinTheWorkspaceBound) {
  std::mt19937 rng(5);
  for (int iter = 0; iter < 200; ++iter) {
    Problem pr;
    const int B = 1 + static_cast<int>(rng() % 6);
    const int gqa[][2] = {{1, 1}, {4, 1}, {8, 2}, {7, 7}, {32, 8}};
    const auto& g = gqa[rng() % 5];
    pr.hq = g[0];
    pr.hk = g[1];
    pr.d = 64 << (rng() % 3);
    pr.decode = rng() % 3 == 0;
    pr.paged = pr.decode || rng() % 2;
    pr.page_size = 1 + static_cast<int>(rng() % 20);
    pr.causal = rng() % 2;
    pr.window = rng() % 3 == 0 ? static_cast<int>(rng() % 300) : -1;
    pr.graph = rng() % 2;
    for (int b = 0; b < B; ++b) {
      pr.kv.push_back(static_cast<int>(rng() % (rng() % 4 == 0 ? 6000 : 300)));
      pr.qo.push_back(static_cast<int>(rng() % 200));
    }
    SCOPED_TRACE("iteration " + std::to_string(iter));
    check_work_plan(pr, 132);
  }
}

// Split-KV is sized from the band, not from kv_len: a long request under a narrow
// two-sided band gives each row tile a few KV tiles, so it is not split, where the same
// request without the band is.
TEST(Sm80WorkPlan, SplitsFollowTheTwoSidedBand) {
  constexpr int kQo = 64, kKv = 32768, kLeft = 64, kRight = 16;  // kRight < kQo - 1: it clips
  const Problem full{{kQo}, {kKv}, 8, 8, 128, false, -1, false, false};
  Problem band = full;
  band.window = kLeft;
  band.window_right = kRight;
  const WorkPlan wide = make_work_plan(make_plan(full), 132, 1 << 30);
  const WorkPlan narrow = make_work_plan(make_plan(band), 132, 1 << 30);
  EXPECT_GT(wide.num_kv_splits, 1);
  EXPECT_EQ(narrow.num_kv_splits, 1);
  // Each row tile visits the keys of its rows' bands, p(first) - kLeft .. p(last) + kRight.
  const core::MaskSpec ms{kQo, kKv, false, kLeft, kRight};
  for (const WorkItem& w : narrow.work) {
    const RowTile rt = row_tile_tokens(w.row_tile * narrow.tile.block_m, (w.row_tile + 1) * narrow.tile.block_m, 1, kQo);
    const core::TileSpan span = core::kv_tile_span(ms, rt.token_begin, rt.token_end, narrow.tile.block_n);
    const int first = rt.token_begin + kKv - kQo - kLeft, last = rt.token_end - 1 + kKv - kQo + kRight;
    EXPECT_EQ(span.begin, first / narrow.tile.block_n);
    EXPECT_EQ(span.end, std::min(last, kKv - 1) / narrow.tile.block_n + 1);
  }
}

TEST(Sm80WorkPlan, LongestWorkFirst) {
  const detail::Plan plan = make_plan({{64, 512, 2048}, {64, 512, 2048}, 8, 8, 128, true, -1, false, false});
  const WorkPlan wp = make_work_plan(plan, 132, 1 << 30);
  auto cost = [&](const WorkItem& w) {
    const int qo = plan.qo_indptr[w.request + 1] - plan.qo_indptr[w.request];
    const core::MaskSpec ms{qo, plan.kv_lens[w.request], true, -1};
    const RowTile rt = row_tile_tokens(w.row_tile * wp.tile.block_m, (w.row_tile + 1) * wp.tile.block_m, 1, qo);
    const core::TileSpan s =
        split_span(core::kv_tile_span(ms, rt.token_begin, rt.token_end, wp.tile.block_n), wp.num_kv_splits, w.split);
    return s.end - s.begin;
  };
  // Costs fall in 8 buckets: an item may not be followed by one more than a bucket longer.
  int max_cost = 0;
  for (const WorkItem& w : wp.work) max_cost = std::max(max_cost, cost(w));
  for (std::size_t i = 1; i < wp.work.size(); ++i)
    ASSERT_LE(cost(wp.work[i]), cost(wp.work[i - 1]) + max_cost / 8 + 1) << "item " << i;
  EXPECT_EQ(cost(wp.work.front()), max_cost);
}

// Items of one cost bucket come in (request, kv head, row tile, split) order, so the CTAs
// running together read one head's K/V (L2) rather than every head's at once.
TEST(Sm80WorkPlan, EqualItemsRunHeadByHead) {
  const detail::Plan plan = make_plan({{8000, 6000}, {8000, 6000}, 8, 4, 128, false, -1, false, false});
  const WorkPlan wp = make_work_plan(plan, 132, 1 << 30);
  ASSERT_EQ(wp.num_kv_splits, 1);
  auto key = [](const WorkItem& w) { return std::make_tuple(w.request, w.kv_head, w.row_tile, w.split); };
  for (std::size_t i = 1; i < wp.work.size(); ++i)
    ASSERT_LT(key(wp.work[i - 1]), key(wp.work[i])) << "item " << i;
  EXPECT_EQ(wp.work.size(), std::size_t{4 * (125 + 94)});  // 2 query heads a row: 16000 and 12000 rows
}

TEST(Sm80WorkPlan, ManyRowTilesDoNotSplit) {
  const detail::Plan plan = make_plan({{}, std::vector<int>(256, 2048), 32, 8, 128, false, -1, true, true});
  EXPECT_EQ(make_work_plan(plan, 132, 1 << 30).num_kv_splits, 1);
}

TEST(Sm80WorkPlan, SmallWorkspaceMeansFewerSplitsOrAnError) {
  const detail::Plan plan = make_plan({{}, {8000}, 32, 8, 128, false, -1, true, true});
  const WorkPlan roomy = make_work_plan(plan, 132, 1 << 26);
  ASSERT_GT(roomy.num_kv_splits, 2);
  const std::size_t tight = roomy.scratch_offset + roomy.scratch_bytes / 2;
  const WorkPlan small = make_work_plan(plan, 132, tight);
  EXPECT_LT(small.num_kv_splits, roomy.num_kv_splits);
  if (small.num_kv_splits > 1) EXPECT_LE(small.scratch_offset + small.scratch_bytes, tight);
  try {
    make_work_plan(plan, 132, 64);
    FAIL() << "expected an error for a 64-byte workspace";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("workspace"), std::string::npos) << e.what();
  }
}

TEST(Sm80WorkPlan, PlanDataBoundsTheArraysAndDataTheSplits) {
  const detail::Plan plan = make_plan({{}, {8000}, 32, 8, 128, false, -1, true, true});
  const WorkPlan roomy = make_work_plan(plan, 132, 1 << 26);
  ASSERT_GT(roomy.num_kv_splits, 2);
  const std::size_t arrays = cuda::align_up(roomy.blob.size());
  auto separate = [&](std::size_t array_bytes, std::size_t scratch_bytes) {
    Workspace ws;
    ws.plan_bytes = array_bytes;
    ws.bytes = scratch_bytes;
    ws.plan_data = reinterpret_cast<void*>(std::uintptr_t{1} << 40);  // never dereferenced
    ws.data = reinterpret_cast<void*>(std::uintptr_t{1} << 41);
    return detail::WorkspaceRegions(ws);
  };
  // The same plan when each part has the room it needs: the arrays need not leave room for
  // the scratch.
  EXPECT_EQ(make_work_plan(plan, 132, separate(arrays, roomy.scratch_bytes)).num_kv_splits, roomy.num_kv_splits);
  // Less scratch: fewer splits, within it.
  const WorkPlan small = make_work_plan(plan, 132, separate(arrays, roomy.scratch_bytes / 2));
  EXPECT_LT(small.num_kv_splits, roomy.num_kv_splits);
  EXPECT_LE(small.scratch_bytes, roomy.scratch_bytes / 2);
  // No scratch: no splits; arrays that do not fit: an error naming both buffers.
  EXPECT_EQ(make_work_plan(plan, 132, separate(arrays, 0)).num_kv_splits, 1);
  try {
    make_work_plan(plan, 132, separate(64, 1 << 26));
    FAIL() << "expected an error for 64 bytes of plan_data";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("plan_data"), std::string::npos) << e.what();
  }
}

// Under cuda_graph a captured launch keeps its arrays' addresses, its grid (work items) and
// its split count, and later plans of the same batch over longer caches must launch alike
// (FlashInfer's decode loop: plan() every step, replay one graph per batch size). So every
// offset, the work list's length, the splits and the partials' place stay while the pages
// grow, past many 64-index steps of the page-index array; only the arrays' contents change.
TEST(Sm80WorkPlan, GraphPlansLaunchAlikeAsTheCacheGrows) {
  struct Growth {
    Problem start;
    int step;             // keys added to every request per plan
    bool eager_varies;    // whether eager plans' split counts follow this growth
  };
  const std::vector<Growth> growths = {
      {{{}, {33, 1, 200, 64, 17}, 32, 8, 128, false, -1, true, true, 1, true}, 9, true},
      {{{}, {33, 1, 200, 64, 17}, 8, 2, 128, false, -1, true, true, 16, true}, 7, true},
      {{{}, {5000}, 8, 1, 64, false, -1, true, true, 16, true}, 40, true},
      // Chunked prefill: 512-query chunks over a growing cache.
      {{{512, 512}, {512, 512}, 8, 1, 128, true, -1, false, true, 16, true}, 512, false},
  };
  Workspace separate;
  separate.plan_data = reinterpret_cast<void*>(std::uintptr_t{1} << 40);  // never dereferenced
  separate.data = reinterpret_cast<void*>(std::uintptr_t{1} << 41);
  separate.plan_bytes = 1 << 20;
  separate.bytes = 64 << 20;
  const detail::WorkspaceRegions one_buffer_regions(Workspace{reinterpret_cast<void*>(std::uintptr_t{1} << 42), 64 << 20});
  for (const Growth& g : growths)
    for (const detail::WorkspaceRegions& regions : {one_buffer_regions, detail::WorkspaceRegions(separate)}) {
      SCOPED_TRACE("first length " + std::to_string(g.start.kv[0]) + ", page size " +
                   std::to_string(g.start.page_size) + (regions.separate() ? ", plan_data" : ", one buffer"));
      Problem pr = g.start;
      const detail::Plan first_plan = make_plan(pr);
      const WorkPlan first = make_work_plan(first_plan, 132, regions);
      ASSERT_GT(first.num_kv_splits, 1);  // the partials' place is checked too
      std::set<int> eager_splits;
      for (int i = 0; i < 60; ++i) {
        for (int& k : pr.kv) k += g.step;
        const detail::Plan plan = make_plan(pr);
        const WorkPlan wp = make_work_plan(plan, 132, regions);
        ASSERT_EQ(wp.off_qo_indptr, first.off_qo_indptr) << "plan " << i;
        ASSERT_EQ(wp.off_kv_indptr, first.off_kv_indptr) << "plan " << i;
        ASSERT_EQ(wp.off_kv_lens, first.off_kv_lens) << "plan " << i;
        ASSERT_EQ(wp.off_last_page_len, first.off_last_page_len) << "plan " << i;
        ASSERT_EQ(wp.off_page_indices, first.off_page_indices) << "plan " << i;
        ASSERT_EQ(wp.off_work, first.off_work) << "plan " << i;
        ASSERT_EQ(wp.work.size(), first.work.size()) << "plan " << i;
        ASSERT_EQ(wp.num_kv_splits, first.num_kv_splits) << "plan " << i;
        ASSERT_EQ(wp.scratch_offset, first.scratch_offset) << "plan " << i;
        ASSERT_EQ(wp.scratch_bytes, first.scratch_bytes) << "plan " << i;
        ASSERT_GE(wp.scratch_offset, regions.separate() ? 0 : wp.blob.size()) << "plan " << i;
        EXPECT_EQ(read_ints(wp.blob, wp.off_page_indices, plan.page_indices.size()), plan.page_indices);
        Problem eager = pr;
        eager.graph = false;
        eager_splits.insert(make_work_plan(make_plan(eager), 132, regions).num_kv_splits);
      }
      // The pages outgrew 64-index steps, and eager plans follow the lengths: without the
      // graph layout and split count these launches would differ.
      EXPECT_GT(make_plan(pr).page_indices.size(), first_plan.page_indices.size() + 64);
      if (g.eager_varies) EXPECT_GT(eager_splits.size(), 1u);
    }
}

// Options::disable_split_kv: one split whatever the lengths, eager or under cuda_graph.
TEST(Sm80WorkPlan, DisableSplitKvKeepsOneSplit) {
  for (bool graph : {false, true}) {
    Problem pr{{}, {8000}, 32, 8, 128, false, -1, true, true, 16, graph};
    detail::Plan plan = make_plan(pr);
    ASSERT_GT(make_work_plan(plan, 132, 1 << 26).num_kv_splits, 2);
    plan.opts.disable_split_kv = true;
    const WorkPlan wp = make_work_plan(plan, 132, 1 << 26);
    EXPECT_EQ(wp.num_kv_splits, 1);
    EXPECT_EQ(wp.scratch_bytes, 0u);
    EXPECT_EQ(wp.work.size(), std::size_t{8});  // one row tile per kv head
  }
}

TEST(Sm80SplitPolicy, AWaveOfSplitsUnderCudaGraphs) {
  SplitInputs in;
  in.slots = 264;
  in.items = 8;
  EXPECT_EQ(wave_kv_splits(in), 33);
  in.max_splits = 20;
  EXPECT_EQ(wave_kv_splits(in), 20);
  in.items = 264;
  EXPECT_EQ(wave_kv_splits(in), 1);
  in.items = 0;
  EXPECT_EQ(wave_kv_splits(in), 1);
}

TEST(Sm80TileShape, UnsupportedHeadDimIsNamed) {
  try {
    tile_shape(dispatch::KernelShape::kPrefill, 96);
    FAIL() << "expected an error for head_dim 96";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("head_dim 96"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace flashband::sm80
