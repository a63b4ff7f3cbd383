// The cudnn backend's graph key: every value baked into a cuDNN graph must change the key, so
// a cached graph can never serve a problem it was not built for (FlashInfer's cudnn path once
// served a stale scale). Also the host-side refusals and the known-bad version windows.
// Host-only: no GPU and no cuDNN call is needed.
#include <gtest/gtest.h>

#include "flashband/config.h"

#if FLASHBAND_WITH_CUDNN

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "backends/cudnn/graph_build.h"
#include "backends/cudnn/graph_key.h"
#include "dispatch/cudnn_known_bad.h"
#include "backends/cudnn/problem_checks.h"
#include "backends/cudnn/workspace_layout.h"
#include "flashband/error.h"

namespace flashband::cudnn_backend {
namespace {

// A paged prefill problem in which every field is set to a distinctive, non-default value.
core::AttentionParams paged_params() {
  core::AttentionParams p;
  p.op = Op::kPagedPrefill;
  p.dtype = DType::kBF16;
  p.batch = 3;
  p.num_qo_heads = 8;
  p.num_kv_heads = 2;
  p.head_dim = 128;
  p.q_stride_n = 8 * 128;
  p.q_stride_h = 128;
  p.o_stride_n = 8 * 128;
  p.o_stride_h = 128;
  p.lse_stride_n = 8;
  p.lse_stride_h = 1;
  p.kv_storage = core::KVStorage::kPaged;
  p.page_size = 16;
  p.k_stride_page = 16 * 2 * 128;
  p.k_stride_n = 2 * 128;
  p.k_stride_h = 128;
  p.v_stride_page = 16 * 2 * 128;
  p.v_stride_n = 2 * 128;
  p.v_stride_h = 128;
  p.causal = true;
  p.window_left = 40;
  p.sm_scale = 0.125f;
  p.max_qo_len = 50;
  p.max_kv_len = 300;
  p.total_qo_tokens = 120;
  return p;
}

GraphKeyContext paged_ctx() {
  GraphKeyContext c;
  c.return_lse = true;
  c.num_pages = 64;
  c.device_id = 0;
  return c;
}

struct Mutation {
  const char* name;
  std::function<void(core::AttentionParams&, GraphKeyContext&)> apply;
};

// One mutation per value a graph bakes in; each must produce a different key.
std::vector<Mutation> mutations() {
  using P = core::AttentionParams;
  using C = GraphKeyContext;
  return {
      {"device", [](P&, C& c) { c.device_id = 1; }},
      {"return_lse", [](P&, C& c) { c.return_lse = false; }},
      {"sinks", [](P&, C& c) { c.sinks = true; }},
      {"num_pages", [](P&, C& c) { c.num_pages = 65; }},
      {"op ragged", [](P& p, C&) { p.op = Op::kRaggedPrefill; }},
      {"op decode", [](P& p, C&) { p.op = Op::kPagedDecode; }},
      {"op single", [](P& p, C&) { p.op = Op::kSinglePrefill; }},
      {"dtype", [](P& p, C&) { p.dtype = DType::kF16; }},
      {"batch", [](P& p, C&) { p.batch = 4; }},
      {"num_qo_heads", [](P& p, C&) { p.num_qo_heads = 16; }},
      {"num_kv_heads", [](P& p, C&) { p.num_kv_heads = 4; }},
      {"head_dim", [](P& p, C&) { p.head_dim = 64; }},
      {"max_qo_len across a bucket", [](P& p, C&) { p.max_qo_len = 65; }},
      {"max_kv_len across a bucket", [](P& p, C&) { p.max_kv_len = 513; }},
      {"q_stride_n", [](P& p, C&) { p.q_stride_n += 8; }},
      {"q_stride_h", [](P& p, C&) { p.q_stride_h += 8; }},
      {"o_stride_n", [](P& p, C&) { p.o_stride_n += 8; }},
      {"o_stride_h", [](P& p, C&) { p.o_stride_h += 8; }},
      {"lse_stride_n", [](P& p, C&) { p.lse_stride_n += 1; }},
      {"lse_stride_h", [](P& p, C&) { p.lse_stride_h += 1; }},
      {"k_stride_page (stacked cache)", [](P& p, C&) { p.k_stride_page *= 2; }},
      {"k_stride_n", [](P& p, C&) { p.k_stride_n += 8; }},
      {"k_stride_h", [](P& p, C&) { p.k_stride_h += 8; }},
      {"v_stride_page", [](P& p, C&) { p.v_stride_page *= 2; }},
      {"v_stride_n", [](P& p, C&) { p.v_stride_n += 8; }},
      {"v_stride_h", [](P& p, C&) { p.v_stride_h += 8; }},
      {"page_size", [](P& p, C&) { p.page_size = 32; }},
      {"causal", [](P& p, C&) { p.causal = false; }},
      {"window_left", [](P& p, C&) { p.window_left = 41; }},
      {"window off", [](P& p, C&) { p.window_left = -1; }},
      {"window_right (a band instead of causal)", [](P& p, C&) { p.causal = false; p.window_right = 3; }},
      {"sm_scale", [](P& p, C&) { p.sm_scale = 0.126f; }},
      {"sm_scale by one ulp", [](P& p, C&) { p.sm_scale = std::nextafter(0.125f, 1.0f); }},
      {"logits_soft_cap", [](P& p, C&) { p.logits_soft_cap = 30.0f; }},
  };
}

TEST(CudnnGraphKey, EveryBakedValueChangesTheKey) {
  const GraphKey base = make_graph_key(paged_params(), paged_ctx());
  EXPECT_EQ(base, make_graph_key(paged_params(), paged_ctx()));
  EXPECT_EQ(base.hash(), make_graph_key(paged_params(), paged_ctx()).hash());
  for (const Mutation& m : mutations()) {
    core::AttentionParams p = paged_params();
    GraphKeyContext c = paged_ctx();
    m.apply(p, c);
    const GraphKey k = make_graph_key(p, c);
    EXPECT_NE(base, k) << m.name;
    EXPECT_NE(base.hash(), k.hash()) << m.name;
    EXPECT_NE(base.to_string(), k.to_string()) << m.name;
    EXPECT_FALSE(first_difference(base, k).empty()) << m.name;
  }
}

TEST(CudnnGraphKey, RaggedKeyTracksKvStridesAndLengths) {
  core::AttentionParams p = paged_params();
  p.op = Op::kRaggedPrefill;
  p.kv_storage = core::KVStorage::kContiguous;
  const GraphKey base = make_graph_key(p, paged_ctx());
  EXPECT_TRUE(base.ragged_kv());
  EXPECT_TRUE(base.ragged_q());
  EXPECT_FALSE(base.paged());
  EXPECT_EQ(base.page_table_width, 0);
  // HND ragged K/V: the head stride holds the total KV token count.
  core::AttentionParams q = p;
  q.k_stride_h = 128 * 1000;
  EXPECT_NE(base, make_graph_key(q, paged_ctx()));
  q = p;
  q.max_kv_len = 1000;
  EXPECT_NE(base, make_graph_key(q, paged_ctx()));
}

TEST(CudnnGraphKey, SinglePrefillKeysExactLengths) {
  core::AttentionParams p = paged_params();
  p.op = Op::kSinglePrefill;
  p.batch = 1;
  p.max_qo_len = 33;
  p.max_kv_len = 77;
  const GraphKey a = make_graph_key(p, paged_ctx());
  EXPECT_EQ(a.s_q, 33);
  EXPECT_EQ(a.s_kv, 77);
  EXPECT_FALSE(a.padding_mask());
  p.max_qo_len = 34;
  EXPECT_NE(a, make_graph_key(p, paged_ctx()));
  p.max_qo_len = 33;
  p.max_kv_len = 78;
  EXPECT_NE(a, make_graph_key(p, paged_ctx()));
}

TEST(CudnnGraphKey, BucketsShareGraphsWithinAPowerOfTwo) {
  core::AttentionParams p = paged_params();
  const GraphKey a = make_graph_key(p, paged_ctx());
  p.max_qo_len = 64;   // same bucket as 50
  p.max_kv_len = 512;  // same bucket as 300
  EXPECT_EQ(a, make_graph_key(p, paged_ctx()));
  EXPECT_EQ(a.s_q, 64);
  EXPECT_EQ(a.s_kv, 512);
  EXPECT_EQ(a.page_table_width, 32);
  EXPECT_EQ(bucket_length(0), 1);
  EXPECT_EQ(bucket_length(1), 1);
  EXPECT_EQ(bucket_length(2), 2);
  EXPECT_EQ(bucket_length(3), 4);
  EXPECT_EQ(bucket_length(1024), 1024);
  EXPECT_EQ(bucket_length(1025), 2048);
}

// A cuda_graph plan keeps a window that hides nothing (plan/graph_window.h); within the
// graph's s_kv it builds the unwindowed graph, the one an eager plan gets.
TEST(CudnnGraphKey, AWindowBeyondTheBucketBuildsTheUnwindowedGraph) {
  core::AttentionParams p = paged_params();  // max_kv_len 300: s_kv 512
  p.window_left = -1;
  const GraphKey unwindowed = make_graph_key(p, paged_ctx());
  for (int window : {511, 1000, 1 << 30}) {
    p.window_left = window;
    EXPECT_EQ(make_graph_key(p, paged_ctx()), unwindowed) << "window " << window;
  }
  p.window_left = 510;  // clips requests of 512 keys, which the bucket admits
  EXPECT_EQ(make_graph_key(p, paged_ctx()).window_left, 510);
}

// The same for window_right within the graph's s_q (max_qo_len 50: s_q 64).
TEST(CudnnGraphKey, AWindowRightBeyondTheBucketBuildsTheGraphWithoutIt) {
  core::AttentionParams p = paged_params();
  p.causal = false;
  const GraphKey without = make_graph_key(p, paged_ctx());
  for (int window_right : {63, 100, 1 << 30}) {
    p.window_right = window_right;
    EXPECT_EQ(make_graph_key(p, paged_ctx()), without) << "window_right " << window_right;
  }
  p.window_right = 62;  // clips row 0 of a 64-row request, which the bucket admits
  EXPECT_EQ(make_graph_key(p, paged_ctx()).window_right, 62);
}

TEST(CudnnGraphKey, PageTableCoversTheLongestRequest) {
  core::AttentionParams p = paged_params();
  for (int page_size : {1, 3, 16, 17, 64}) {
    for (int max_kv : {1, 15, 16, 17, 300, 4097}) {
      p.page_size = page_size;
      p.max_kv_len = max_kv;
      const GraphKey k = make_graph_key(p, paged_ctx());
      EXPECT_GE(static_cast<int64_t>(k.page_table_width) * page_size, max_kv);
      EXPECT_EQ(k.s_kv, static_cast<int64_t>(k.page_table_width) * page_size);
      EXPECT_LE(k.page_table_width, 2 * ((max_kv + page_size - 1) / page_size));
    }
  }
}

TEST(CudnnGraphKey, DecodeHasOneQueryRow) {
  core::AttentionParams p = paged_params();
  p.op = Op::kPagedDecode;
  const GraphKey k = make_graph_key(p, paged_ctx());
  EXPECT_EQ(k.s_q, 1);
  EXPECT_FALSE(k.ragged_q());
  EXPECT_TRUE(k.paged());
  EXPECT_TRUE(k.padding_mask());
}

TEST(CudnnGraphKey, StridesOfUnitExtentsDoNotSplitGraphs) {
  // MQA (one KV head): the head stride addresses nothing, so views that differ only there
  // (as DLPack producers do) run on the same graph.
  core::AttentionParams p = paged_params();
  p.num_kv_heads = 1;
  const GraphKey a = make_graph_key(p, paged_ctx());
  p.k_stride_h = 12345;
  p.v_stride_h = 777;
  EXPECT_EQ(a, make_graph_key(p, paged_ctx()));
  // Without LSE, its strides do not matter either.
  GraphKeyContext c = paged_ctx();
  c.return_lse = false;
  p = paged_params();
  const GraphKey b = make_graph_key(p, c);
  p.lse_stride_n = 999;
  EXPECT_EQ(b, make_graph_key(p, c));
}

TEST(CudnnGraphKey, ToStringNamesScaleAndWindow) {
  const std::string s = make_graph_key(paged_params(), paged_ctx()).to_string();
  EXPECT_NE(s.find("scale_bits=0.125"), std::string::npos) << s;
  EXPECT_NE(s.find("window_left=40"), std::string::npos) << s;
  EXPECT_NE(s.find("causal=1"), std::string::npos) << s;
  EXPECT_NE(s.find("layout=paged"), std::string::npos) << s;
}

TEST(CudnnGraphKey, FirstDifferenceNamesTheField) {
  core::AttentionParams p = paged_params();
  const GraphKey a = make_graph_key(p, paged_ctx());
  p.k_stride_page *= 2;
  const std::string d = first_difference(a, make_graph_key(p, paged_ctx()));
  EXPECT_EQ(d.rfind("k_stride_page", 0), 0u) << d;
  EXPECT_TRUE(first_difference(a, a).empty());
}

TEST(CudnnGraphKey, StackedCacheRunsOnTheSeparateCacheGraph) {
  const GraphKey planned = make_graph_key(paged_params(), paged_ctx());
  EXPECT_EQ(page_stride_multiple(planned, planned), 1);
  core::AttentionParams p = paged_params();
  p.k_stride_page *= 2;  // [P, 2, page, Hk, D]: K and V pages interleave
  p.v_stride_page *= 2;
  EXPECT_EQ(page_stride_multiple(planned, make_graph_key(p, paged_ctx())), 2);
  p.v_stride_page /= 2;  // only K doubled: not a stacked cache
  EXPECT_EQ(page_stride_multiple(planned, make_graph_key(p, paged_ctx())), 0);
  p = paged_params();
  p.k_stride_page *= 3;
  p.v_stride_page *= 3;
  EXPECT_EQ(page_stride_multiple(planned, make_graph_key(p, paged_ctx())), 0);
  p = paged_params();
  p.k_stride_page *= 2;
  p.v_stride_page *= 2;
  p.sm_scale = 0.5f;  // any other difference still refuses
  EXPECT_EQ(page_stride_multiple(planned, make_graph_key(p, paged_ctx())), 0);
  core::AttentionParams r = paged_params();
  r.op = Op::kRaggedPrefill;
  const GraphKey ragged = make_graph_key(r, paged_ctx());
  EXPECT_EQ(page_stride_multiple(ragged, ragged), 0);  // only paged graphs
}

TEST(CudnnGraphKey, CanonicalStridesFollowTheLayout) {
  core::AttentionParams p;
  p.op = Op::kPagedDecode;
  p.num_qo_heads = 8;
  p.num_kv_heads = 2;
  p.head_dim = 64;
  p.page_size = 16;
  fill_canonical_strides(p, KVLayout::kHND, 0);
  EXPECT_EQ(p.q_stride_n, 8 * 64);
  EXPECT_EQ(p.q_stride_h, 64);
  EXPECT_EQ(p.lse_stride_n, 8);
  EXPECT_EQ(p.lse_stride_h, 1);
  EXPECT_EQ(p.k_stride_page, 2 * 16 * 64);
  EXPECT_EQ(p.k_stride_h, 16 * 64);
  EXPECT_EQ(p.k_stride_n, 64);

  core::AttentionParams r;
  r.op = Op::kRaggedPrefill;
  r.num_qo_heads = 4;
  r.num_kv_heads = 4;
  r.head_dim = 128;
  fill_canonical_strides(r, KVLayout::kHND, 1000);
  EXPECT_EQ(r.k_stride_h, 1000 * 128);
  EXPECT_EQ(r.k_stride_n, 128);
  EXPECT_EQ(r.k_stride_page, 0);
  r.k_stride_n = r.k_stride_h = r.v_stride_n = r.v_stride_h = 0;
  fill_canonical_strides(r, KVLayout::kNHD, 1000);
  EXPECT_EQ(r.k_stride_n, 4 * 128);
  EXPECT_EQ(r.k_stride_h, 128);
  // Strides already set (a known tensor) are kept.
  r.q_stride_n = 3 * 4 * 128;
  fill_canonical_strides(r, KVLayout::kNHD, 1000);
  EXPECT_EQ(r.q_stride_n, 3 * 4 * 128);
}

// --- The graphs themselves (graph_build.h), checked by cudnn-frontend without a device ---

// Every layout the backend builds, with canonical strides for both KV layouts, every mask
// combination, LSE and sinks on and off, GQA: cudnn-frontend's validation (its SDPA support surface and
// shape inference) must accept the graph for Hopper.
TEST(CudnnGraphBuild, EveryLayoutPassesFrontendValidationOnHost) {
  int checked = 0;
  for (Op op : {Op::kSinglePrefill, Op::kRaggedPrefill, Op::kPagedPrefill, Op::kPagedDecode}) {
    for (KVLayout layout : {KVLayout::kNHD, KVLayout::kHND}) {
      for (DType dtype : {DType::kF16, DType::kBF16}) {
        for (int head_dim : kRegisteredHeadDims) {
          for (int mask = 0; mask < 4; ++mask) {
            for (int outputs = 0; outputs < 4; ++outputs) {
              core::AttentionParams p;
              p.op = op;
              p.dtype = dtype;
              p.batch = op == Op::kSinglePrefill ? 1 : 3;
              p.num_qo_heads = 8;
              p.num_kv_heads = 2;
              p.head_dim = head_dim;
              p.page_size = 16;
              p.max_qo_len = op == Op::kPagedDecode ? 1 : 45;
              p.max_kv_len = 100;
              p.total_qo_tokens = op == Op::kPagedDecode ? 3 : 80;
              p.causal = mask & 1;
              p.window_left = (mask & 2) ? 17 : -1;
              p.sm_scale = 0.1f;
              fill_canonical_strides(p, layout, 250);
              GraphKeyContext c;
              c.return_lse = outputs & 1;
              c.sinks = (outputs & 2) && op != Op::kPagedDecode;  // see SinksNeedMoreThanOneQueryRow
              c.num_pages = 40;
              const GraphKey key = make_graph_key(p, c);
              EXPECT_EQ(validate_on_host(key, 90), "") << key.to_string();
              ++checked;
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 4 * 2 * 2 * 3 * 4 * 4);
}

TEST(CudnnGraphBuild, FrontendRefusalsComeBackAsMessages) {
  core::AttentionParams p = paged_params();
  p.head_dim = 100;  // not a multiple of 8
  fill_canonical_strides(p, KVLayout::kHND, 0);
  const std::string msg = validate_on_host(make_graph_key(p, paged_ctx()), 90);
  EXPECT_NE(msg.find("hidden_dim"), std::string::npos) << msg;
  // Without a padding mask cuDNN has no bottom-right causal for s_q > s_kv: the reason
  // check_problem refuses such single prefills before any graph is built.
  core::AttentionParams d = paged_params();
  d.op = Op::kSinglePrefill;
  d.batch = 1;
  d.max_qo_len = 50;
  d.max_kv_len = 30;
  const std::string causal_msg = validate_on_host(make_graph_key(d, paged_ctx()), 90);
  EXPECT_NE(causal_msg.find("Bottom right causal mask does not support"), std::string::npos) << causal_msg;
}

// --- Refusals (problem_checks.h) ---

detail::Plan ragged_plan(std::vector<int32_t> qo_lens, std::vector<int32_t> kv_lens, bool causal, int window) {
  detail::Plan plan;
  core::AttentionParams& p = plan.params;
  p.op = Op::kRaggedPrefill;
  p.dtype = DType::kF16;
  p.batch = static_cast<int>(qo_lens.size());
  p.num_qo_heads = 4;
  p.num_kv_heads = 4;
  p.head_dim = 128;
  p.causal = causal;
  p.window_left = window;
  p.sm_scale = 0.1f;
  plan.batch = p.batch;
  plan.qo_indptr = {0};
  plan.kv_indptr = {0};
  for (std::size_t b = 0; b < qo_lens.size(); ++b) {
    plan.qo_indptr.push_back(plan.qo_indptr.back() + qo_lens[b]);
    plan.kv_indptr.push_back(plan.kv_indptr.back() + kv_lens[b]);
    p.max_qo_len = std::max(p.max_qo_len, qo_lens[b]);
    p.max_kv_len = std::max(p.max_kv_len, kv_lens[b]);
  }
  plan.kv_lens = kv_lens;
  p.total_qo_tokens = plan.qo_indptr.back();
  plan.total_kv_tokens = plan.kv_indptr.back();
  return plan;
}

ErrorCode code_of(const std::function<void()>& f, std::string* message) {
  try {
    f();
  } catch (const Error& e) {
    if (message) *message = e.what();
    return e.code();
  }
  return ErrorCode::kInternal;  // "no error" marker for these tests
}

TEST(CudnnProblemChecks, AcceptsOrdinaryBatches) {
  EXPECT_NO_THROW(check_problem(ragged_plan({5, 0, 7}, {9, 3, 7}, true, -1)));
  EXPECT_NO_THROW(check_problem(ragged_plan({5, 7}, {3, 7}, false, 2)));  // non-causal window, qo > kv
}

TEST(CudnnProblemChecks, RefusesFullyMaskedRows) {
  std::string msg;
  EXPECT_EQ(code_of([] { check_problem(ragged_plan({5, 4}, {9, 0}, false, -1)); }, &msg), ErrorCode::kUnsupported);
  EXPECT_NE(msg.find("kv_len 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("request 1"), std::string::npos) << msg;
  EXPECT_EQ(code_of([] { check_problem(ragged_plan({5, 8}, {9, 7}, true, -1)); }, &msg), ErrorCode::kUnsupported);
  EXPECT_NE(msg.find("causal with qo_len 8 > kv_len 7"), std::string::npos) << msg;
  EXPECT_EQ(code_of([] { check_problem(ragged_plan({8}, {7}, true, 3)); }, &msg), ErrorCode::kUnsupported);
}

TEST(CudnnProblemChecks, RefusesSoftCapDtypeAndHeadDim) {
  std::string msg;
  detail::Plan plan = ragged_plan({5}, {9}, false, -1);
  plan.params.logits_soft_cap = 30.0f;
  EXPECT_EQ(code_of([&] { check_problem(plan); }, &msg), ErrorCode::kUnsupported);
  EXPECT_NE(msg.find("logits_soft_cap"), std::string::npos) << msg;
  plan = ragged_plan({5}, {9}, false, -1);
  plan.params.dtype = DType::kF32;
  EXPECT_EQ(code_of([&] { check_problem(plan); }, &msg), ErrorCode::kUnsupported);
  EXPECT_NE(msg.find("dtype"), std::string::npos) << msg;
  for (int d : {0, 60, 264, 512}) {
    plan = ragged_plan({5}, {9}, false, -1);
    plan.params.head_dim = d;
    EXPECT_EQ(code_of([&] { check_problem(plan); }, &msg), ErrorCode::kUnsupported) << d;
    EXPECT_NE(msg.find("head_dim " + std::to_string(d)), std::string::npos) << msg;
  }
}

// cudnn-frontend validates a sink_token graph with s_q = 1 as its decode mode and refuses it
// (EveryLayoutPassesFrontendValidationOnHost's decode keys leave sinks out for that reason).
TEST(CudnnProblemChecks, SinksNeedMoreThanOneQueryRow) {
  detail::Plan plan = ragged_plan({1, 1}, {9, 7}, true, -1);
  plan.opts.sinks = true;
  std::string msg;
  EXPECT_EQ(code_of([&] { check_problem(plan); }, &msg), ErrorCode::kUnsupported);
  EXPECT_NE(msg.find("sinks"), std::string::npos) << msg;
  EXPECT_NE(msg.find("decode mode"), std::string::npos) << msg;
  plan = ragged_plan({2, 1}, {9, 7}, true, -1);
  plan.opts.sinks = true;
  EXPECT_NO_THROW(check_problem(plan));
  plan = ragged_plan({1, 1}, {9, 7}, true, -1);
  EXPECT_NO_THROW(check_problem(plan));
  // The frontend's own verdict on such a key, which the check above anticipates.
  fill_canonical_strides(plan.params, KVLayout::kNHD, plan.total_kv_tokens);
  GraphKeyContext c;
  c.sinks = true;
  EXPECT_NE(validate_on_host(make_graph_key(plan.params, c), 90).find("sink_token"), std::string::npos);
}

TEST(CudnnProblemChecks, SinglePrefillWindowNeedsQoNotAboveKv) {
  detail::Plan plan = ragged_plan({9}, {5}, false, 2);
  plan.params.op = Op::kSinglePrefill;
  std::string msg;
  EXPECT_EQ(code_of([&] { check_problem(plan); }, &msg), ErrorCode::kUnsupported);
  EXPECT_NE(msg.find("window_left 2"), std::string::npos) << msg;
  plan.params.window_left = -1;
  EXPECT_NO_THROW(check_problem(plan));
}

TEST(CudnnProblemChecks, DecodeRefusesEmptyCache) {
  detail::Plan plan = ragged_plan({1, 1}, {4, 0}, false, -1);
  plan.params.op = Op::kPagedDecode;
  EXPECT_EQ(code_of([&] { check_problem(plan); }, nullptr), ErrorCode::kUnsupported);
}

TEST(CudnnProblemChecks, RaggedOffsetsMustFitInt32) {
  EXPECT_NO_THROW(check_offset_range("q", 1 << 20, 2047));
  std::string msg;
  EXPECT_EQ(code_of([] { check_offset_range("k", 1 << 20, 4096); }, &msg), ErrorCode::kUnsupported);
  EXPECT_NE(msg.find("k with 1048576 rows"), std::string::npos) << msg;
}

// --- Known-bad versions (dispatch/cudnn_known_bad.h) ---

TEST(CudnnKnownBad, WindowsMatchTheirScope) {
  BadWindowProblem p;
  p.version = 91000;
  p.sm = 90;
  EXPECT_NE(find_known_bad(p), nullptr);
  p.version = 91001;
  EXPECT_NE(find_known_bad(p), nullptr);
  p.version = 91002;
  EXPECT_EQ(find_known_bad(p), nullptr);

  p.version = 91400;
  p.window_left = 10;
  p.s_kv = 2048;
  EXPECT_NE(find_known_bad(p), nullptr);
  p.causal = true;  // causal windows are fine on 9.14.0
  EXPECT_EQ(find_known_bad(p), nullptr);
  p.causal = false;
  p.s_kv = 1024;
  EXPECT_EQ(find_known_bad(p), nullptr);

  p = BadWindowProblem{};
  p.version = 91800;
  p.sm = 80;
  p.ragged = true;
  EXPECT_NE(find_known_bad(p), nullptr);
  p.version = 91801;
  EXPECT_EQ(find_known_bad(p), nullptr);
  p.version = 91800;
  p.sm = 90;
  EXPECT_EQ(find_known_bad(p), nullptr);
}

TEST(CudnnKnownBad, VersionCheckNamesTheVersion) {
  BadWindowProblem p;
  p.version = 90800;
  p.sm = 90;
  std::string msg;
  EXPECT_EQ(code_of([&] { check_version(p); }, &msg), ErrorCode::kUnsupported);
  EXPECT_NE(msg.find("9.8.0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("9.10.2"), std::string::npos) << msg;
  p.version = 91900;
  EXPECT_NO_THROW(check_version(p));
}

// --- Workspace layout (workspace_layout.h) ---

TEST(CudnnWorkspace, LayoutHoldsEveryArrayWithoutOverlap) {
  const GraphKey k = make_graph_key(paged_params(), paged_ctx());
  const WorkspaceLayout l = workspace_layout(k, 1000);
  const std::size_t b = static_cast<std::size_t>(k.batch);
  struct Span {
    std::size_t at, ints;
  };
  std::vector<Span> spans = {{l.seq_len_q, b},     {l.seq_len_kv, b},   {l.ragged_q, b + 1},
                             {l.ragged_o, b + 1},  {l.ragged_stats, b + 1},
                             {l.page_table, b * static_cast<std::size_t>(k.page_table_width)},
                             {l.page_table_x2, b * static_cast<std::size_t>(k.page_table_width)}};
  for (const Span& s : spans) {
    ASSERT_NE(s.at, kAbsent);
    EXPECT_EQ(s.at % 16, 0u);
    EXPECT_LE(s.at + s.ints * 4, l.index_bytes);
  }
  for (std::size_t i = 0; i < spans.size(); ++i)
    for (std::size_t j = i + 1; j < spans.size(); ++j)
      EXPECT_TRUE(spans[i].at + spans[i].ints * 4 <= spans[j].at || spans[j].at + spans[j].ints * 4 <= spans[i].at);
  EXPECT_EQ(l.ragged_k, kAbsent);
  EXPECT_EQ(l.cudnn % kWorkspaceAlign, 0u);
  EXPECT_GE(l.cudnn, l.index_bytes);
  EXPECT_EQ(l.total, l.cudnn + 1000);
  EXPECT_EQ(required_bytes(l), l.total + kWorkspaceAlign - 1);

  core::AttentionParams single = paged_params();
  single.op = Op::kSinglePrefill;
  single.batch = 1;
  EXPECT_EQ(required_bytes(workspace_layout(make_graph_key(single, paged_ctx()), 0)), 0u);
}

}  // namespace
}  // namespace flashband::cudnn_backend

#else

TEST(CudnnGraphKey, NotBuilt) { GTEST_SKIP() << "this build has no cudnn backend"; }

#endif
