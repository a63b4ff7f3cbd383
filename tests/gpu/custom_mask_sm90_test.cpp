// Packed custom masks on the sm90 backend (issue 66) against the fp64 oracle: the shared mask
// grid (tests/common/mask_grid.h); mask densities 0, 0.5 and 1 over single, ragged and paged
// prefill (gathered and TMA pages, every head dim, GQA, windows on either side, soft cap,
// ragged batches with empty requests and rows that see no key); patterned masks whose KV
// tiles are all visible, all hidden or mixed for a warp's rows (the kernel's three paths,
// custom_mask.h); tree-verify masks (64 draft rows over an all-visible prefix) and long
// requests that the planner cuts into KV splits. Each case first shows that its mask matters
// (the references with and without it differ by 5x the dtype's atol or more, unless stated),
// so a kernel that ignored the bits fails.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "case.h"
#include "case_steps.h"
#include "compare.h"
#include "gpu_backends.h"
#include "mask_grid.h"

namespace flashband::testing {
namespace {

// ---- the shared grid, as the cpu runs it ----------------------------------------------------

class Sm90MaskGrid : public ::testing::TestWithParam<Case> {};

TEST_P(Sm90MaskGrid, MatchesOracle) {
  FB_SKIP_WITHOUT_CUDA();
  const Case c = on_backend(GetParam(), Backend::kSM90);
  FB_SKIP_UNSUPPORTED(c, !c.kv_dtype);  // sm90 reads fp8 K/V on paged prefill only (issue 65)
  const CaseResult r = run_case(c);
  EXPECT_TRUE(r.passed) << r.failure << " (max_abs_err " << r.max_abs_err << ", lse " << r.lse_max_err
                        << ", variant " << r.info.variant << ")";
  EXPECT_TRUE(r.mask_guard_ok);
  EXPECT_EQ(r.info.backend, Backend::kSM90);
}

INSTANTIATE_TEST_SUITE_P(Grid, Sm90MaskGrid, ::testing::ValuesIn(custom_mask_cases({DType::kF16, DType::kBF16})),
                         [](const auto& info) { return param_name(Backend::kSM90, info.param); });

// ---- densities, patterns, tree verify, splits -------------------------------------------

// Bit (row, key) of a request of qo_len x kv_len; null: the case's random mask (mask_density).
using Visible = std::function<bool(int row, int key, int qo_len, int kv_len)>;

struct MaskCase {
  Case c;
  const char* pattern = "random";
  Visible visible;
  bool must_split = false;  // the plan must cut the keys (else the case tests no merge)
  bool guard = true;        // the mask must change the reference by >= 5 atol
  std::string name() const { return param_name(Backend::kSM90, c) + "_" + pattern + (must_split ? "_split" : ""); }
};
void PrintTo(const MaskCase& m, std::ostream* os) { *os << m.name(); }

// Tree-verify: `draft` rows, one per node of a binary tree in heap order (node i's parent is
// (i - 1) / 2), after a prefix that every row sees; a row sees the draft keys of its node's
// path to the root.
Visible tree_verify(int draft) {
  return [draft](int row, int key, int, int kv_len) {
    const int prefix = kv_len - draft;
    if (key < prefix) return true;
    for (int node = row; node >= 0; node = node == 0 ? -1 : (node - 1) / 2)
      if (key - prefix == node) return true;
    return false;
  };
}

// Per 16 rows (a warp's) and 64 keys: visible where (key block + row block) % 3 != 0, so a
// 64-key tile is all visible or all hidden for a warp, wider tiles mixed.
bool blocks(int row, int key, int, int) { return (key / 64 + row / 16) % 3 != 0; }
// Bands of 256 keys alternately visible and hidden for every row: 64- and 128-key tiles are
// all one or the other, 80- and 176-key tiles cross bands.
bool bands(int, int key, int, int) { return (key / 256) % 2 == 0; }

std::vector<MaskCase> sm90_mask_cases() {
  std::vector<MaskCase> cases;
  const int dims[] = {64, 128, 256};
  const int heads[][2] = {{4, 1}, {8, 2}, {2, 2}, {6, 3}};
  const int page_sizes[] = {1, 5, 16, 64, 128};  // 64 and 128: TMA pages
  const int windows[][2] = {{-1, -1}, {40, -1}, {-1, 25}, {60, 10}};
  int k = 0;
  auto shape = [&](Case& c, EntryPoint e) {
    c.entry = e;
    if (e == EntryPoint::kSingle) {
      c.qo_lens = {200};
      c.kv_lens = {333};  // odd: row i's bits start at every alignment
    } else {
      // An empty request, one without keys (its rows see nothing), qo_len > kv_len.
      c.qo_lens = {130, 0, 77, 300, 5};
      c.kv_lens = {500, 9, 0, 261, 3};
    }
    c.head_dim = dims[k % 3];
    c.num_qo_heads = heads[(k / 3) % 4][0];
    c.num_kv_heads = heads[(k / 3) % 4][1];
    c.dtype = k % 2 ? DType::kBF16 : DType::kF16;
    c.layout = (k / 2) % 2 ? KVLayout::kHND : KVLayout::kNHD;
    c.page_size = page_sizes[k % 5];
    c.stacked_kv = e == EntryPoint::kPaged && (k / 5) % 2 == 1;
    c.seed = 6600 + k;
  };
  // Densities 0 (every row sees nothing), 0.5 and 1 (row 0 of each request of 3 rows or more
  // still sees nothing: case.h), each head dim, windows and soft cap rotated through.
  for (EntryPoint e : {EntryPoint::kSingle, EntryPoint::kRagged, EntryPoint::kPaged})
    for (double density : {0.0, 0.5, 1.0})
      for (int d = 0; d < 3; ++d) {
        MaskCase m;
        shape(m.c, e);
        m.c.mask_density = density;
        m.c.window_left = windows[k % 4][0];
        m.c.window_right = windows[k % 4][1];
        if (k % 3 == 1) m.c.logits_soft_cap = 20.0f;
        cases.push_back(m);
        ++k;
      }
  // Patterns that give the warps whole visible tiles, whole hidden ones and mixed ones.
  for (EntryPoint e : {EntryPoint::kSingle, EntryPoint::kRagged, EntryPoint::kPaged})
    for (int d = 0; d < 3; ++d)
      for (bool windowed : {false, true}) {
        MaskCase m;
        shape(m.c, e);
        m.c.mask_density = 0.5;  // replaced by the pattern
        m.c.qo_lens = e == EntryPoint::kSingle ? std::vector<int>{300} : std::vector<int>{300, 0, 64, 129};
        m.c.kv_lens = e == EntryPoint::kSingle ? std::vector<int>{1100} : std::vector<int>{1100, 5, 700, 1024};
        m.pattern = (k % 2) ? "blocks" : "bands";
        m.visible = (k % 2) ? Visible(blocks) : Visible(bands);
        if (windowed) {
          m.c.window_left = 300;
          m.c.window_right = 200;
        }
        if (k % 4 == 3) m.c.logits_soft_cap = 20.0f;
        cases.push_back(m);
        ++k;
      }
  // Tree verify: 64 draft rows over a prefix. A short prefix shows the mask's effect; the long
  // ones run the prefix as full tiles and are cut into KV splits (few query tiles and heads).
  for (EntryPoint e : {EntryPoint::kSingle, EntryPoint::kRagged, EntryPoint::kPaged})
    for (int d = 0; d < 3; ++d) {
      MaskCase m;
      shape(m.c, e);
      m.c.mask_density = 0.5;
      m.c.num_qo_heads = 4;
      m.c.num_kv_heads = 1;
      m.pattern = "tree";
      m.visible = tree_verify(64);
      if (e == EntryPoint::kSingle) {
        m.c.qo_lens = {64};
        m.c.kv_lens = {300 + 64};
      } else if (d == 0) {
        m.c.qo_lens = {64, 64, 64};
        m.c.kv_lens = {1000 + 64, 2047 + 64, 300 + 64};
        m.guard = false;  // 63 hidden draft keys among thousands: a small effect; oracle only
      } else {
        m.c.qo_lens = {64};
        m.c.kv_lens = {4000 + 64};
        m.must_split = true;
        m.guard = false;
      }
      cases.push_back(m);
      ++k;
    }
  // Random masks over long requests that the planner splits: the merge of partial states
  // whose keys the mask thinned, and splits whose keys it hides entirely (density 0).
  for (EntryPoint e : {EntryPoint::kRagged, EntryPoint::kPaged})
    for (double density : {0.0, 0.5}) {
      MaskCase m;
      shape(m.c, e);
      m.c.dtype = DType::kF16;
      m.c.num_qo_heads = 2;
      m.c.num_kv_heads = 1;
      m.c.qo_lens = {100};
      m.c.kv_lens = {6000};
      m.c.mask_density = density;
      m.must_split = true;
      cases.push_back(m);
      ++k;
    }
  return cases;
}

struct Outcome {
  Comparison cmp;
  double mask_effect = 0.0;  // max |reference - reference without the mask|
  RunInfo info;
};

Outcome run_masked(const MaskCase& m, const Case& c) {
  std::vector<RequestData> data = make_case_data(c);
  if (m.visible)
    for (RequestData& d : data)
      for (int i = 0; i < d.qo_len; ++i)
        for (int j = 0; j < d.kv_len; ++j)
          d.mask[static_cast<std::size_t>(i) * d.kv_len + j] = m.visible(i, j, d.qo_len, d.kv_len);
  const ApiOutputs api = run_api(c, data);
  const Window window{c.window_left, c.window_right};
  const Reference ref = make_reference(c, data, window);
  std::vector<RequestData> unmasked = data;
  for (RequestData& d : unmasked) d.mask.clear();
  Outcome o;
  o.cmp = compare_attention(tolerance_for(c.dtype), c.num_qo_heads, c.head_dim, api.out, ref.out, api.lse, ref.lse,
                            ref.empty);
  o.mask_effect = max_abs_diff(ref.out, make_reference(c, unmasked, window).out);
  o.info = api.info;
  return o;
}

class Sm90CustomMask : public ::testing::TestWithParam<MaskCase> {};

TEST_P(Sm90CustomMask, MatchesOracle) {
  FB_SKIP_WITHOUT_CUDA();
  const MaskCase& m = GetParam();
  const Case c = on_backend(m.c, Backend::kSM90);
  FB_SKIP_UNSUPPORTED(c, true);
  const Outcome o = run_masked(m, c);
  if (m.guard)
    EXPECT_GE(o.mask_effect, 5 * tolerance_for(c.dtype).atol)
        << "the mask changes the reference too little for this case to show that it is applied";
  EXPECT_TRUE(o.cmp.passed) << o.cmp.failure << " (max_abs_err " << o.cmp.max_abs_err << ", lse "
                            << o.cmp.lse_max_err << ", variant " << o.info.variant << ", splits "
                            << o.info.num_kv_splits << ")";
  EXPECT_EQ(o.info.backend, Backend::kSM90);
  if (m.must_split) EXPECT_GT(o.info.num_kv_splits, 1) << "the planner did not split this case; lengthen it";
}

INSTANTIATE_TEST_SUITE_P(Cases, Sm90CustomMask, ::testing::ValuesIn(sm90_mask_cases()),
                         [](const auto& info) { return info.param.name(); });

}  // namespace
}  // namespace flashband::testing
