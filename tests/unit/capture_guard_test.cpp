// Options::cuda_graph: a plan's launch signature lists what a captured launch bakes in, and
// the batch classes refuse a plan whose launch would differ from a captured one. The capture
// itself needs a GPU (python/tests/test_cuda_streams.py replays one); here the signature
// and the guard's decisions, on plans built by hand and through the cpu backend.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <climits>
#include <cmath>

#include "run/capture_guard.h"
#include "core/mask.h"
#include "flashband/attention.h"
#include "plan/graph_window.h"
#include "plan/launch_signature.h"
#include "plan/make_plan.h"

namespace flashband::detail {
namespace {

// A plan as a GPU planner leaves it: index arrays at workspace addresses.
std::shared_ptr<Plan> gpu_like_plan() {
  auto p = std::make_shared<Plan>();
  p->backend = Backend::kSM80;
  p->variant = "sm80/decode/bf16/d128";
  p->batch = 4;
  p->page_size = 16;
  p->num_pages = 100;
  p->opts.cuda_graph = true;
  p->shape.device = Device::kCUDA;
  core::AttentionParams& a = p->params;
  a.op = Op::kPagedDecode;
  a.batch = 4;
  a.num_qo_heads = 8;
  a.num_kv_heads = 2;
  a.head_dim = 128;
  a.kv_storage = core::KVStorage::kPaged;
  a.page_size = 16;
  static int32_t workspace[64];
  a.kv_indptr = workspace;
  a.kv_lens = workspace + 8;
  a.page_indices = workspace + 16;
  a.last_page_len = workspace + 32;
  a.max_kv_len = 300;
  a.total_qo_tokens = 4;
  a.num_work_items = 8;
  a.sm_scale = 0.125f;
  return p;
}

TEST(LaunchSignature, EveryPlannedLaunchValueCounts) {
  const std::string base = launch_signature(*gpu_like_plan());
  const std::vector<std::pair<std::string, std::function<void(Plan&)>>> changes = {
      {"backend", [](Plan& p) { p.backend = Backend::kSM90; }},
      {"variant", [](Plan& p) { p.variant += "/tile128x128"; }},
      {"plan.batch", [](Plan& p) { p.batch = 5; }},
      {"kv_layout", [](Plan& p) { p.opts.kv_layout = KVLayout::kHND; }},
      {"return_lse", [](Plan& p) { p.opts.return_lse = true; }},
      {"plan.total_kv_tokens", [](Plan& p) { p.total_kv_tokens = 7; }},
      {"max_kv_len", [](Plan& p) { p.params.max_kv_len = 301; }},
      {"max_qo_len", [](Plan& p) { p.params.max_qo_len = 2; }},
      {"total_qo_tokens", [](Plan& p) { p.params.total_qo_tokens = 5; }},
      {"num_work_items", [](Plan& p) { p.params.num_work_items = 9; }},
      {"num_kv_splits", [](Plan& p) { p.params.num_kv_splits = 2; }},
      {"kv_lens", [](Plan& p) { p.params.kv_lens += 1; }},
      {"scratch_bytes", [](Plan& p) { p.params.scratch_bytes = 1024; }},
      {"window_left", [](Plan& p) { p.params.window_left = 31; }},
      {"window_right", [](Plan& p) { p.params.window_right = 3; }},
      {"sm_scale", [](Plan& p) { p.params.sm_scale = 0.126f; }},
      {"logits_soft_cap", [](Plan& p) { p.params.logits_soft_cap = 30.0f; }},
      {"causal", [](Plan& p) { p.params.causal = true; }},
      {"sm90.num_items", [](Plan& p) { p.state_signature = "sm90.num_items=3;"; }},
  };
  for (const auto& [field, change] : changes) {
    auto p = gpu_like_plan();
    change(*p);
    const std::string diff = signature_difference(base, launch_signature(*p));
    EXPECT_EQ(diff.substr(0, diff.find(':')), field) << diff;
  }
}

TEST(LaunchSignature, RunBoundValuesDoNot) {
  const std::string base = launch_signature(*gpu_like_plan());
  auto p = gpu_like_plan();
  // The run's tensors, strides and stream, and the page check run() makes.
  p->params.q = p.get();
  p->params.k_stride_n = 1024;
  p->params.k_num_pages = 100;
  p->params.stream = p.get();
  p->max_page_index = 99;  // the guard checks it against the captured cache instead
  p->num_pages = 200;      // only cudnn's key reads it (its state_signature)
  p->page_indices = {1, 2, 3};
  p->kv_lens = {5, 6, 7, 8};
  EXPECT_EQ(launch_signature(*p), base);
}

TEST(LaunchSignature, LongestLengthsCountWhereTheLaunchReadsThem) {
  auto longer = [](Backend backend, Op op, bool work_list) {
    std::string sig[2];
    for (int i = 0; i < 2; ++i) {
      auto p = gpu_like_plan();
      p->backend = backend;
      p->params.op = op;
      static int32_t items[4];
      p->params.work = work_list ? items : nullptr;
      p->params.max_kv_len = 300 + 100 * i;
      p->params.max_qo_len = 1 + i;
      sig[i] = launch_signature(*p);
    }
    return sig[0] != sig[1];
  };
  // Lengths from the workspace: an sm80 work list, cudnn's batch graphs (rounded in the key).
  EXPECT_FALSE(longer(Backend::kSM80, Op::kPagedDecode, true));
  EXPECT_FALSE(longer(Backend::kCUDNN, Op::kPagedDecode, false));
  EXPECT_FALSE(longer(Backend::kCUDNN, Op::kRaggedPrefill, false));
  // From the launch arguments: sm80 without a list, sm90, cudnn's single prefill (its rows).
  EXPECT_TRUE(longer(Backend::kSM80, Op::kRaggedPrefill, false));
  EXPECT_TRUE(longer(Backend::kSM90, Op::kPagedPrefill, true));
  EXPECT_TRUE(longer(Backend::kCUDNN, Op::kSinglePrefill, false));
  EXPECT_TRUE(longer(Backend::kCPU, Op::kPagedDecode, false));
}

TEST(LaunchSignature, HostStateCountsByValueNotAddress) {
  auto a = gpu_like_plan(), b = gpu_like_plan();
  for (auto* p : {a.get(), b.get()}) {
    p->backend_state = std::make_shared<int>(0);  // a new object per plan, as sm90 and cudnn
    p->params.work = p->backend_state.get();
    p->state_signature = "sm90.num_items=2;";
  }
  EXPECT_EQ(launch_signature(*a), launch_signature(*b));
  b->state_signature = "sm90.num_items=3;";
  EXPECT_EQ(signature_difference(launch_signature(*a), launch_signature(*b)), "sm90.num_items: 2 vs 3");
}

// What run() binds for a capture: a paged cache of `pages` pages (K and V alike).
core::AttentionParams bound(const Plan& plan, int64_t pages) {
  core::AttentionParams a = plan.params;
  a.k_num_pages = a.v_num_pages = pages;
  return a;
}

std::shared_ptr<const Capture> captured_run(int64_t cache_pages = 100) {
  std::shared_ptr<const Capture> captured;
  const std::shared_ptr<const Plan> plan = gpu_like_plan();
  note_capture(captured, plan, bound(*plan, cache_pages), true);
  return captured;
}

TEST(CaptureGuard, RemembersOnlyCapturedCudaGraphRuns) {
  std::shared_ptr<const Capture> captured;
  std::shared_ptr<const Plan> plan = gpu_like_plan();
  note_capture(captured, plan, bound(*plan, 100), false);
  EXPECT_EQ(captured, nullptr);
  auto no_option = gpu_like_plan();
  no_option->opts.cuda_graph = false;
  note_capture(captured, no_option, bound(*no_option, 100), true);
  EXPECT_EQ(captured, nullptr);
  auto k = bound(*plan, 100);
  k.v_num_pages = 90;  // the smaller pool bounds what a replay may read
  note_capture(captured, plan, k, true);
  ASSERT_NE(captured, nullptr);
  EXPECT_EQ(captured->plan, plan);
  EXPECT_EQ(captured->cache_pages, 90);
}

TEST(CaptureGuard, RefusesAPlanThatLaunchesDifferently) {
  std::shared_ptr<const Capture> captured = captured_run();
  // New page indices and lengths that leave every launch value: the capture stays valid.
  auto same = gpu_like_plan();
  same->page_indices = {9, 8};
  same->max_page_index = 99;
  EXPECT_NO_THROW(check_capture(captured, *same));
  EXPECT_NE(captured, nullptr);

  auto longer = gpu_like_plan();
  longer->params.max_kv_len = 4000;
  try {
    check_capture(captured, *longer);
    FAIL() << "a longer max_kv_len was accepted under a capture";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("cuda_graph"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("max_kv_len: 300 vs 4000"), std::string::npos) << e.what();
  }
  // The capture is forgotten: the next plan is free until run() is captured again.
  EXPECT_EQ(captured, nullptr);
  EXPECT_NO_THROW(check_capture(captured, *longer));
}

TEST(CaptureGuard, RefusesAPageThatTheCapturedCacheLacks) {
  // A replay skips run()'s check of the cache, so plan() makes it against the captured one.
  std::shared_ptr<const Capture> captured = captured_run(100);
  auto past = gpu_like_plan();
  past->max_page_index = 100;
  try {
    check_capture(captured, *past);
    FAIL() << "page 100 of a 100-page cache was accepted under a capture";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("page index 100 is past the captured cache's 100 pages"), std::string::npos)
        << e.what();
  }
  // Contiguous K/V has no pages to check.
  auto contiguous = gpu_like_plan();
  contiguous->params.kv_storage = core::KVStorage::kContiguous;
  std::shared_ptr<const Capture> ragged;
  note_capture(ragged, contiguous, bound(*contiguous, 0), true);
  EXPECT_NO_THROW(check_capture(ragged, *contiguous));
}

TEST(CaptureGuard, InstallsThePlanEvenWhenItRefuses) {
  std::shared_ptr<const Plan> plan;
  std::shared_ptr<const Capture> captured = captured_run();
  auto longer = gpu_like_plan();
  longer->params.num_work_items = 16;
  EXPECT_THROW(install_plan(plan, captured, longer), Error);
  EXPECT_EQ(plan, longer);  // the workspace holds it, so run() must use it
}

// A contiguous float32 host tensor.
TensorView view(float* data, std::initializer_list<int64_t> dims) {
  return TensorView::contiguous(data, DType::kF32, dims);
}

// Through the public API on the cpu backend: host runs are never captured, so plans with
// cuda_graph change freely; single_prefill refuses the option.
TEST(CaptureGuard, CpuPlansAreNeverCaptured) {
  const int32_t indptr_a[] = {0, 2}, indptr_b[] = {0, 3}, indices[] = {0, 1, 2}, last[] = {16};
  Options opts;
  opts.cuda_graph = true;
  opts.backend = Backend::kCPU;
  const BatchShape shape{2, 1, 64, DType::kF32, Device::kCPU, 0};
  std::vector<float> q(2 * 64), kv(3 * 16 * 64, 0.5f), out(2 * 64);
  BatchDecodePaged decode;
  const PagedKVCache cache{view(kv.data(), {3, 16, 1, 64}), view(kv.data(), {3, 16, 1, 64})};
  decode.plan({indptr_a, indices, last, 16, 3}, 1, shape, opts, {});
  decode.run(view(q.data(), {1, 2, 64}), cache, view(out.data(), {1, 2, 64}), nullptr);
  EXPECT_NO_THROW(decode.plan({indptr_b, indices, last, 16, 3}, 1, shape, opts, {}));

  try {
    single_prefill(view(q.data(), {1, 2, 64}), view(kv.data(), {16, 1, 64}), view(kv.data(), {16, 1, 64}),
                   view(out.data(), {1, 2, 64}), nullptr, opts);
    FAIL() << "single_prefill accepted cuda_graph";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("cuda_graph"), std::string::npos) << e.what();
  }
}

// plan() says what will run and why. Under cuda_graph an auto object keeps the backend its
// first plan chose; without it, and for an explicit backend, each plan selects anew.
TEST(CaptureGuard, AutoKeepsItsFirstBackendUnderCudaGraphs) {
  const int32_t indptr[] = {0, 2}, indices[] = {0, 1}, last[] = {16};
  const BatchShape shape{2, 1, 64, DType::kF32, Device::kCPU, 0};
  const PagedIndex pages{indptr, indices, last, 16, 2};
  auto plans = [&](bool graph, Backend backend) {
    Options opts;
    opts.cuda_graph = graph;
    opts.backend = backend;
    BatchDecodePaged decode;
    const RunInfo first = decode.plan(pages, 1, shape, opts, {});
    const RunInfo second = decode.plan(pages, 1, shape, opts, {});
    EXPECT_EQ(first.backend, Backend::kCPU);
    EXPECT_EQ(second.backend, Backend::kCPU);
    return std::make_pair(first.selection, second.selection);
  };
  const auto graph = plans(true, Backend::kAuto);
  EXPECT_EQ(graph.first, "auto (rule host: preference cpu) chose cpu");
  EXPECT_EQ(graph.second, "auto: kept cpu, chosen by this object's first cuda_graph plan: " + graph.first);
  const auto eager = plans(false, Backend::kAuto);
  EXPECT_EQ(eager.first, graph.first);
  EXPECT_EQ(eager.second, graph.first);
  const auto requested = plans(true, Backend::kCPU);
  EXPECT_EQ(requested.first, "requested");
  EXPECT_EQ(requested.second, "requested");
  // Only a backend auto chose is kept: an explicit first plan leaves auto free to choose.
  Options opts;
  opts.cuda_graph = true;
  opts.backend = Backend::kCPU;
  BatchDecodePaged decode;
  decode.plan(pages, 1, shape, opts, {});
  opts.backend = Backend::kAuto;
  EXPECT_EQ(decode.plan(pages, 1, shape, opts, {}).selection, graph.first);
  EXPECT_EQ(decode.plan(pages, 1, shape, opts, {}).selection, graph.second);
}

// Device page indices: only backends whose runs read them accept them (not cpu), with or
// without host indices beside them; with neither a plan names the missing array.
TEST(CaptureGuard, DevicePageIndicesAreRefusedByTheCpuBackend) {
  const int32_t indptr[] = {0, 2}, indices[] = {0, 1}, last[] = {16};
  const BatchShape shape{2, 1, 64, DType::kF32, Device::kCPU, 0};
  PagedIndex pages{indptr, indices, last, 16, 2};
  pages.device_indices = indices;  // any non-null pointer: the refusal comes first
  for (const int32_t* host : {indices, static_cast<const int32_t*>(nullptr)}) {
    pages.indices = host;
    for (Backend backend : {Backend::kAuto, Backend::kCPU}) {
      Options opts;
      opts.backend = backend;
      BatchDecodePaged decode;
      try {
        decode.plan(pages, 1, shape, opts, {});
        FAIL() << "the cpu backend accepted device page indices";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
        EXPECT_NE(std::string(e.what()).find("paged_kv_indices from a device array"), std::string::npos) << e.what();
      }
    }
  }
  pages.device_indices = nullptr;
  pages.indices = nullptr;
  Options opts;
  BatchDecodePaged decode;
  try {
    decode.plan(pages, 1, shape, opts, {});
    FAIL() << "a plan without page indices was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("paged_kv_indices: is null"), std::string::npos) << e.what();
  }
}

// A window wider than every request hides nothing, and other plans drop it (the unmasked
// kernels serve them). A cuda_graph plan keeps it, so the plan of the same batch once its
// requests outgrow the window selects the same (masked) kernel with the same argument.
TEST(CaptureGuard, GraphPlansKeepAWindowTheRequestsHaveNotReached) {
  auto window_of = [](int kv_len, int window_left, bool graph) {
    const int32_t indptr[] = {0, (kv_len + 15) / 16};
    std::vector<int32_t> indices(indptr[1]);
    for (int i = 0; i < indptr[1]; ++i) indices[i] = i;
    const int32_t last[] = {kv_len - (indptr[1] - 1) * 16};
    const PagedIndex pages{indptr, indices.data(), last, 16, indptr[1]};
    PlanRequest r;
    r.op = Op::kPagedDecode;
    r.batch = 1;
    r.pages = &pages;
    r.shape = BatchShape{2, 1, 64, DType::kF32, Device::kCPU, 0};
    r.opts.backend = Backend::kCPU;
    r.opts.window_left = window_left;
    r.opts.cuda_graph = graph;
    const auto plan = prepare_plan(r);
    EXPECT_EQ(plan->kernel.key.needs_mask, core::needs_mask(false, plan->params.window_left, plan->params.window_right));
    return plan->params.window_left;
  };
  EXPECT_EQ(window_of(50, 100, false), -1);
  EXPECT_EQ(window_of(500, 100, false), 100);
  EXPECT_EQ(window_of(50, 100, true), 100);
  EXPECT_EQ(window_of(500, 100, true), 100);
  EXPECT_EQ(window_of(50, INT_MAX, true), kMaxGraphWindow);
  EXPECT_EQ(window_of(50, -1, true), -1);
  EXPECT_EQ(window_of(50, 0, true), 0);

  // The cap never hides a key: it stays at least max_kv_len - 1.
  EXPECT_EQ(graph_window(kMaxGraphWindow + 5, 100), kMaxGraphWindow);
  EXPECT_EQ(graph_window(kMaxGraphWindow + 5, kMaxGraphWindow + 3), kMaxGraphWindow + 2);
  EXPECT_EQ(graph_window(kMaxGraphWindow + 5, INT_MAX), kMaxGraphWindow + 5);
  EXPECT_EQ(graph_window(INT_MAX, INT_MAX), INT_MAX - 1);
}

// The right bound in a plan: causal is window_right 0, so a plan gives it once (causal, or
// window_right >= 1 without it); one that clips no row (>= max qo_len - 1) is dropped,
// except under cuda_graph, as for window_left.
TEST(CaptureGuard, PlansCarryTheRightBoundOnceAndGraphPlansKeepIt) {
  struct Bound {
    bool causal;
    int window_right;
  };
  auto bound_of = [](int qo_len, bool causal, int window_right, bool graph) {
    const int32_t qo_indptr[] = {0, qo_len}, kv_indptr[] = {0, 300};
    PlanRequest r;
    r.op = Op::kRaggedPrefill;
    r.batch = 1;
    r.qo_indptr = qo_indptr;
    r.kv_indptr = kv_indptr;
    r.shape = BatchShape{2, 1, 64, DType::kF32, Device::kCPU, 0};
    r.opts.backend = Backend::kCPU;
    r.opts.causal = causal;
    r.opts.window_right = window_right;
    r.opts.cuda_graph = graph;
    const auto plan = prepare_plan(r);
    const core::AttentionParams& a = plan->params;
    EXPECT_EQ(plan->kernel.key.needs_mask, core::needs_mask(a.causal, a.window_left, a.window_right));
    EXPECT_EQ(plan->problem.window_right, a.window_right);
    return Bound{a.causal, a.window_right};
  };
  auto expect = [](Bound got, bool causal, int window_right) {
    EXPECT_EQ(got.causal, causal);
    EXPECT_EQ(got.window_right, window_right);
  };
  expect(bound_of(50, false, -1, false), false, -1);
  expect(bound_of(50, false, 0, false), true, -1);  // non-causal window_right 0 is causal
  expect(bound_of(50, true, 0, false), true, -1);
  expect(bound_of(50, true, -1, false), true, -1);
  expect(bound_of(50, false, 7, false), false, 7);
  expect(bound_of(50, false, 48, false), false, 48);  // clips row 0's last key
  expect(bound_of(50, false, 49, false), false, -1);  // qo_len - 1: clips nothing
  expect(bound_of(1, false, 5, false), false, -1);    // one row, as in decode
  expect(bound_of(50, false, 49, true), false, 49);   // graph plans keep it
  expect(bound_of(1, false, 5, true), false, 5);
  expect(bound_of(50, false, INT_MAX, true), false, kMaxGraphWindow);
}

// The kept window computes what no window computes (cpu backend, the oracle's semantics).
TEST(CaptureGuard, AKeptWindowChangesNothing) {
  const int kv_len = 40, d = 64;
  const int32_t indptr[] = {0, 3}, indices[] = {2, 0, 1}, last[] = {kv_len - 32};
  const BatchShape shape{2, 1, d, DType::kF32, Device::kCPU, 0};
  std::vector<float> q(2 * d), kv(3 * 16 * d), out(2 * d), expected(2 * d);
  for (std::size_t i = 0; i < q.size(); ++i) q[i] = std::sin(0.37f * static_cast<float>(i));
  for (std::size_t i = 0; i < kv.size(); ++i) kv[i] = std::cos(0.11f * static_cast<float>(i));
  const PagedKVCache cache{view(kv.data(), {3, 16, 1, d}), view(kv.data(), {3, 16, 1, d})};
  auto run = [&](int window_left, bool graph, std::vector<float>& o) {
    Options opts;
    opts.backend = Backend::kCPU;
    opts.window_left = window_left;
    opts.cuda_graph = graph;
    BatchDecodePaged decode;
    decode.plan({indptr, indices, last, 16, 3}, 1, shape, opts, {});
    decode.run(view(q.data(), {1, 2, d}), cache, view(o.data(), {1, 2, d}), nullptr);
  };
  run(-1, false, expected);
  for (int window : {kv_len - 1, kv_len, 1000, INT_MAX}) {
    run(window, true, out);
    EXPECT_EQ(out, expected) << "window " << window;
  }
  run(10, true, out);  // a window that clips still clips
  EXPECT_NE(out, expected);
}

}  // namespace
}  // namespace flashband::detail
