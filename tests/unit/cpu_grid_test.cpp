// The cpu backend through the public API, judged by the fp64 oracle (tests/common): the grid
// the GPU backends run (tests/common/oracle_grid.h) with float32 besides, the two-sided window
// grid, every dtype x head dim x layout and page size x layout x stacked cache once, plus named
// edge cases (empty requests, fully masked rows, odd lengths, page size 1, padded outputs).
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "case.h"
#include "band_grid.h"
#include "case_steps.h"
#include "compare.h"
#include "oracle_grid.h"
#include "flashband/error.h"

namespace flashband::testing {
namespace {

std::vector<Case> grid_cases() {
  const DType dtypes[] = {DType::kF16, DType::kBF16, DType::kF32};
  const int dims[] = {64, 128, 256};
  const KVLayout layouts[] = {KVLayout::kNHD, KVLayout::kHND};
  const int page_sizes[] = {1, 5, 16};

  // The grid the GPU backends run too, with float32 besides.
  std::vector<Case> cases = oracle_grid({DType::kF16, DType::kBF16, DType::kF32});

  // The two-sided window: window_right x window_left x causal x entry point (causal takes
  // only -1 and 0; a wider right bound beside it is refused: BandGrid.CausalWithWindowRightIsRefusedByName).
  for (const Case& c : band_cases({DType::kF16, DType::kBF16, DType::kF32})) cases.push_back(c);

  // Every dtype x head dim x layout once, on single prefill with a causal window.
  for (DType dt : dtypes)
    for (int d : dims)
      for (KVLayout lay : layouts) {
        Case c;
        c.entry = EntryPoint::kSingle;
        c.qo_lens = {65};
        c.kv_lens = {129};
        c.causal = true;
        c.window_left = 31;
        c.dtype = dt;
        c.head_dim = d;
        c.layout = lay;
        c.num_qo_heads = 4;
        c.num_kv_heads = 2;
        cases.push_back(c);
      }

  // Every page size x layout x stacked/separate, for paged prefill and decode.
  for (EntryPoint e : {EntryPoint::kPaged, EntryPoint::kDecode})
    for (int ps : page_sizes)
      for (KVLayout lay : layouts)
        for (bool stacked : {false, true}) {
          Case c;
          c.entry = e;
          c.qo_lens = {16, 1, 33};
          c.kv_lens = {48, 17, 33};  // 48 fills its pages exactly at page size 1 and 16
          c.causal = true;
          c.page_size = ps;
          c.layout = lay;
          c.stacked_kv = stacked;
          c.dtype = DType::kBF16;
          c.num_qo_heads = 4;
          c.num_kv_heads = 2;
          cases.push_back(c);
        }

  // Named edge cases.
  auto add = [&](Case c) { cases.push_back(c); };
  {
    Case c;  // GQA 32/8 and MQA 8/1
    c.entry = EntryPoint::kPaged;
    c.qo_lens = {7, 40};
    c.kv_lens = {100, 40};
    c.num_qo_heads = 32;
    c.num_kv_heads = 8;
    c.causal = true;
    c.page_size = 16;
    add(c);
    c.entry = EntryPoint::kDecode;
    c.num_qo_heads = 8;
    c.num_kv_heads = 1;
    add(c);
  }
  {
    Case c;  // soft cap with an explicit scale large enough for the cap to bite
    c.entry = EntryPoint::kRagged;
    c.qo_lens = {31, 64};
    c.kv_lens = {97, 64};
    c.num_qo_heads = 4;
    c.num_kv_heads = 2;
    c.sm_scale = 0.3f;
    c.logits_soft_cap = 3.0f;
    c.dtype = DType::kF32;
    add(c);
    c.causal = true;
    c.window_left = 15;
    c.dtype = DType::kBF16;
    add(c);
  }
  {
    Case c;  // fully masked rows: causal with qo_len > kv_len, and kv_len 0
    c.entry = EntryPoint::kSingle;
    c.qo_lens = {50};
    c.kv_lens = {10};
    c.causal = true;
    add(c);
    c.window_left = 3;
    add(c);
    c.window_left = -1;
    c.kv_lens = {0};
    c.causal = false;
    add(c);
  }
  {
    Case c;  // batches of only empty requests
    c.entry = EntryPoint::kRagged;
    c.qo_lens = {0, 0};
    c.kv_lens = {5, 0};
    add(c);
    c.entry = EntryPoint::kPaged;
    c.qo_lens = {3, 2};
    c.kv_lens = {0, 0};
    add(c);
    c.entry = EntryPoint::kDecode;
    add(c);
  }
  {
    Case c;  // tile sizes +- 1 and primes, page size 1 with a single key
    c.entry = EntryPoint::kRagged;
    c.qo_lens = {63, 64, 65, 1};
    c.kv_lens = {63, 64, 65, 127};
    c.causal = true;
    c.dtype = DType::kF16;
    c.head_dim = 128;
    add(c);
    c.entry = EntryPoint::kDecode;
    c.kv_lens = {1, 2, 3, 97};
    c.page_size = 1;
    c.window_left = 1;
    add(c);
  }
  {
    Case c;  // the smallest window that matters: w = kv_len - 2 hides key 0 of the last row
    c.entry = EntryPoint::kSingle;
    c.qo_lens = {5};
    c.kv_lens = {5};
    c.window_left = 3;
    c.head_dim = 64;
    c.num_qo_heads = 4;
    c.num_kv_heads = 4;
    add(c);
    c.return_lse = false;  // and without the LSE output
    c.window_left = -1;
    add(c);
  }

  {
    Case c;  // head dims that are not a multiple of the cpu backend's 16-wide inner loops
    c.entry = EntryPoint::kRagged;
    c.qo_lens = {40, 9};
    c.kv_lens = {90, 9};
    c.causal = true;
    c.window_left = 31;
    c.head_dim = 72;
    c.num_qo_heads = 4;
    c.num_kv_heads = 2;
    c.dtype = DType::kF32;
    add(c);
    c.head_dim = 5;
    c.layout = KVLayout::kHND;
    add(c);
  }
  {
    Case c;  // outputs with padding between tokens: written rows only, the padding untouched
    c.entry = EntryPoint::kPaged;
    c.qo_lens = {33, 7};
    c.kv_lens = {60, 7};
    c.causal = true;
    c.num_qo_heads = 2;
    c.head_dim = 64;
    c.out_token_pad = 3;
    add(c);
  }

  // Unique names (parameterised tests require them).
  std::vector<Case> unique;
  std::set<std::string> seen;
  for (const Case& c : cases)
    if (seen.insert(c.name()).second) unique.push_back(c);
  return unique;
}

class CpuGrid : public ::testing::TestWithParam<Case> {};

TEST_P(CpuGrid, MatchesOracle) {
  const Case& c = GetParam();
  const CaseResult r = run_case(c);
  EXPECT_TRUE(r.passed) << r.failure << "\n  max_abs_err " << r.max_abs_err << ", frob " << r.frob_rel_err
                        << ", lse " << r.lse_max_err;
  EXPECT_EQ(r.info.backend, Backend::kCPU);
  const Tolerance tol = tolerance_for(c.dtype);
  EXPECT_LE(r.frob_rel_err, tol.frob);
  EXPECT_LE(r.lse_max_err, tol.lse);
}

INSTANTIATE_TEST_SUITE_P(Cases, CpuGrid, ::testing::ValuesIn(grid_cases()),
                         [](const ::testing::TestParamInfo<Case>& p) { return p.param.name(); });

// The axes the grid promises, checked on the grid itself so that a later edit cannot drop one.
TEST(CpuGridCoverage, EveryAxisValueAndEveryCausalWindowPairPerEntryPoint) {
  const std::vector<Case> cases = grid_cases();
  std::set<std::string> have;
  for (const Case& c : cases) {
    const bool paged = c.entry == EntryPoint::kPaged || c.entry == EntryPoint::kDecode;
    have.insert(std::string("dtype ") + dtype_name(c.dtype));
    have.insert("dim " + std::to_string(c.head_dim));
    have.insert(std::string("layout ") + kv_layout_name(c.layout));
    if (paged) have.insert("page " + std::to_string(c.page_size));
    const int w = c.window_left >= kNoOpWindow ? kNoOpWindow : c.window_left;
    have.insert(std::string(entry_point_name(c.entry)) + (c.causal ? " causal " : " full ") + std::to_string(w));
    if (c.logits_soft_cap > 0) have.insert("soft cap");
    if (c.num_qo_heads != c.num_kv_heads) have.insert("gqa");
  }
  std::vector<std::string> want = {"dtype float16", "dtype bfloat16", "dtype float32", "dim 64", "dim 128",
                                   "dim 256", "layout NHD", "layout HND", "page 1", "page 5", "page 16",
                                   "soft cap", "gqa"};
  for (const char* e : {"single", "ragged", "paged", "decode"})
    for (const char* m : {" full ", " causal "})
      for (int w : kGridWindows) want.push_back(e + std::string(m) + std::to_string(w));
  for (const std::string& s : want) EXPECT_TRUE(have.count(s)) << "grid lacks " << s;
}

TEST(BandGrid, EveryEntryCausalWindowLeftAndWindowRight) {
  std::set<std::string> have;
  for (const Case& c : band_cases({DType::kF16}))
    have.insert(std::string(entry_point_name(c.entry)) + (c.causal ? " causal " : " full ") +
                std::to_string(c.window_left) + " " + std::to_string(c.window_right));
  for (const char* e : {"single", "ragged", "paged", "decode"})
    for (bool causal : {false, true})
      for (int wl : kBandLefts)
        for (int wr : kBandRights)
          if (!causal || wr <= 0)
            EXPECT_TRUE(have.count(e + std::string(causal ? " causal " : " full ") + std::to_string(wl) + " " +
                                   std::to_string(wr)))
                << "band grid lacks " << e << " causal " << causal << " " << wl << " " << wr;
}

// The guard inside run_case needs window_right to change the result by > 0.1: the band
// grid must actually exercise the right bound, on every entry point that can clip.
TEST(BandGrid, WindowRightClipsOnEveryPrefillEntryPoint) {
  std::set<std::string> clipped;
  for (const Case& c : band_cases({DType::kF16}))
    if (c.window_right > 0 && window_changes_visibility(c, {c.window_left, c.window_right}, {c.window_left, -1}))
      clipped.insert(std::string(entry_point_name(c.entry)) + " " + std::to_string(c.window_right));
  for (const char* e : {"single", "ragged", "paged"})
    for (int wr : {1, 7, 128}) EXPECT_TRUE(clipped.count(e + std::string(" ") + std::to_string(wr))) << e << " " << wr;
}

TEST(BandGrid, CausalWithWindowRightIsRefusedByName) {
  Case c;
  c.entry = EntryPoint::kRagged;
  c.qo_lens = {9};
  c.kv_lens = {9};
  c.causal = true;
  c.window_right = 1;
  try {
    run_case(c);
    FAIL() << "causal=true with window_right 1 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("window_right: got 1 with causal=true"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace flashband::testing
