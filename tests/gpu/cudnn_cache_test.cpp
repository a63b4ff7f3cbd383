// The cudnn graph cache never serves a stale graph: two runs of the same shapes that differ
// only in sm_scale, window_left or causal each match the fp64 oracle, each change builds a
// new graph, and repeating a problem reuses its graph. FlashInfer's cudnn path once keyed
// without the scale; this is the test that would have caught it.
#include <gtest/gtest.h>

#include <cstddef>
#include <string>

#include "case.h"
#include "flashband/capability.h"
#include "flashband/config.h"
#include "gpu_backends.h"

#if FLASHBAND_WITH_CUDNN
#include "backends/cudnn/cudnn_backend.h"
#endif

namespace flashband::testing {
namespace {

#if FLASHBAND_WITH_CUDNN

Case single_case() {
  Case c;
  c.entry = EntryPoint::kSingle;
  c.qo_lens = {37};
  c.kv_lens = {129};  // qo <= kv: cuDNN refuses causal rows that see no key
  c.num_qo_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 128;
  c.dtype = DType::kF16;
  c.return_lse = true;
  c.backend = Backend::kCUDNN;
  c.device = Device::kCUDA;
  c.seed = 7;
  return c;
}

Case ragged_case() {
  Case c = single_case();
  c.entry = EntryPoint::kRagged;
  c.qo_lens = {17, 1, 40};
  c.kv_lens = {33, 64, 40};
  c.dtype = DType::kBF16;
  return c;
}

Case paged_case(EntryPoint entry) {
  Case c = ragged_case();
  c.entry = entry;
  c.layout = KVLayout::kHND;
  c.page_size = 16;
  return c;
}

// Runs a case, asserts it matched the oracle, and returns how many graphs it built.
std::size_t run_and_check(const Case& c) {
  const std::size_t before = cudnn_backend::graph_builds();
  const CaseResult r = run_case(c);
  EXPECT_TRUE(r.passed) << c.name() << ": " << r.failure << " (max abs err " << r.max_abs_err << ")";
  EXPECT_EQ(r.info.backend, Backend::kCUDNN) << c.name();
  if (c.window_left >= 0) EXPECT_TRUE(r.window_guard_ok) << c.name() << ": window changes nothing here";
  return cudnn_backend::graph_builds() - before;
}

class CudnnCache : public ::testing::Test {
 protected:
  void SetUp() override {
    FB_SKIP_WITHOUT_CUDA();
    // On a machine where cudnn cannot run at all (e.g. a known-bad cuDNN), there is no cache
    // to test; the capability table says why.
    const SupportAnswer a = supports(problem_of(single_case()), Backend::kCUDNN);
    if (!a.supported) GTEST_SKIP() << a.reason;
  }
};

TEST_F(CudnnCache, ScaleChangeBuildsANewGraph) {
  for (const Case& base : {single_case(), ragged_case()}) {
    Case a = base, b = base;
    a.sm_scale = 0.05f;
    b.sm_scale = 0.2f;
    run_and_check(a);                 // may build (or hit an earlier test's graph)
    EXPECT_EQ(run_and_check(b), 1u);  // a new scale is a new graph
    EXPECT_EQ(run_and_check(a), 0u);  // and the first one is still cached, unchanged
    EXPECT_EQ(run_and_check(b), 0u);
  }
}

TEST_F(CudnnCache, WindowChangeBuildsANewGraph) {
  for (const Case& base : {single_case(), ragged_case()}) {
    for (bool causal : {false, true}) {
      Case a = base, b = base, none = base;
      a.causal = b.causal = none.causal = causal;
      a.window_left = 8;
      b.window_left = 20;
      none.window_left = -1;
      run_and_check(a);
      EXPECT_EQ(run_and_check(b), 1u) << b.name();
      run_and_check(none);
      EXPECT_EQ(run_and_check(a), 0u) << a.name();
    }
  }
}

TEST_F(CudnnCache, CausalChangeBuildsANewGraph) {
  for (const Case& base : {single_case(), ragged_case()}) {
    Case a = base, b = base;
    a.causal = false;
    b.causal = true;
    a.sm_scale = b.sm_scale = 0.09f;  // a scale no other test uses: both graphs are new
    EXPECT_EQ(run_and_check(a), 1u) << a.name();
    EXPECT_EQ(run_and_check(b), 1u) << b.name();
    EXPECT_EQ(run_and_check(a), 0u) << a.name();
  }
}

TEST_F(CudnnCache, PagedScaleAndWindowChangesBuildNewGraphs) {
  for (EntryPoint entry : {EntryPoint::kPaged, EntryPoint::kDecode}) {
    Case a = paged_case(entry), b = paged_case(entry), w = paged_case(entry);
    a.sm_scale = 0.06f;
    b.sm_scale = 0.18f;
    w.sm_scale = 0.18f;
    w.window_left = 10;
    run_and_check(a);
    EXPECT_EQ(run_and_check(b), 1u) << b.name();
    EXPECT_EQ(run_and_check(w), 1u) << w.name();
    EXPECT_EQ(run_and_check(a), 0u) << a.name();
  }
}

TEST_F(CudnnCache, StackedCacheRunsOnTheSeparateCacheGraph) {
  for (EntryPoint entry : {EntryPoint::kPaged, EntryPoint::kDecode}) {
    Case separate = paged_case(entry), stacked = paged_case(entry);
    separate.sm_scale = stacked.sm_scale = 0.13f;
    stacked.stacked_kv = true;
    run_and_check(separate);
    EXPECT_EQ(run_and_check(stacked), 0u) << stacked.name();  // same graph, doubled page table
  }
}

TEST_F(CudnnCache, LseRequestIsPartOfTheKey) {
  Case a = single_case(), b = single_case();
  a.sm_scale = b.sm_scale = 0.07f;
  b.return_lse = false;
  EXPECT_EQ(run_and_check(a), 1u);
  EXPECT_EQ(run_and_check(b), 1u);
}

#else

TEST(CudnnCache, NotBuilt) { GTEST_SKIP() << "this build has no cudnn backend"; }

#endif

}  // namespace
}  // namespace flashband::testing
