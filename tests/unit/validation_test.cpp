// SPEC.md "Bad input": every bad argument is refused before anything runs, the message names
// the argument, and no output is written.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

#include "validate/validate.h"
#include "flashband/attention.h"

namespace flashband {
namespace {

constexpr float kSentinel = 12345.0f;

// Host float32 buffers for one small problem, outputs filled with a sentinel.
struct Buffers {
  int qo = 5, kv = 7, hq = 4, hk = 2, d = 8;
  std::vector<float> q, k, v, o, lse;
  Buffers() : q(qo * hq * d, 0.5f), k(kv * hk * d, 0.25f), v(kv * hk * d, 1.0f), o(qo * hq * d, kSentinel),
              lse(qo * hq, kSentinel) {}
  TensorView tq() { return TensorView::contiguous(q.data(), DType::kF32, {qo, hq, d}); }
  TensorView tk() { return TensorView::contiguous(k.data(), DType::kF32, {kv, hk, d}); }
  TensorView tv() { return TensorView::contiguous(v.data(), DType::kF32, {kv, hk, d}); }
  TensorView to() { return TensorView::contiguous(o.data(), DType::kF32, {qo, hq, d}); }
  TensorView tl() { return TensorView::contiguous(lse.data(), DType::kF32, {qo, hq}); }
  bool outputs_untouched() const {
    for (float x : o)
      if (x != kSentinel) return false;
    for (float x : lse)
      if (x != kSentinel) return false;
    return true;
  }
};

Options lse_opts() {
  Options o;
  o.return_lse = true;
  return o;
}

// Runs `call`, expecting an Error whose message contains `needle`, and untouched outputs.
void expect_refused(Buffers& b, const std::function<void()>& call, const std::string& needle,
                    ErrorCode code = ErrorCode::kInvalidArgument) {
  try {
    call();
    ADD_FAILURE() << "accepted; expected an error naming '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "message: " << e.what();
  }
  EXPECT_TRUE(b.outputs_untouched()) << "an output was written despite the error";
}

TEST(Validation, GoodInputRuns) {
  Buffers b;
  TensorView lse = b.tl();
  EXPECT_NO_THROW(single_prefill(b.tq(), b.tk(), b.tv(), b.to(), &lse, lse_opts()));
  EXPECT_FALSE(b.outputs_untouched());
}

TEST(Validation, OptionValues) {
  Buffers b;
  TensorView lse = b.tl();
  auto run = [&](Options o) { return [&b, &lse, o] { single_prefill(b.tq(), b.tk(), b.tv(), b.to(), &lse, o); }; };
  Options o = lse_opts();
  o.window_left = -2;
  expect_refused(b, run(o), "window_left: got -2");
  o = lse_opts();
  o.window_right = -2;
  expect_refused(b, run(o), "window_right: got -2, allowed: -1 (no right bound) or >= 0");
  o.window_right = 3;  // causal is window_right 0: a wider bound beside it is ambiguous
  o.causal = true;
  expect_refused(b, run(o), "window_right: got 3 with causal=true");
  for (int agrees : {-1, 0}) {  // both mean the causal bound (fresh buffers: this one writes)
    Buffers fresh;
    TensorView fresh_lse = fresh.tl();
    o.window_right = agrees;
    EXPECT_NO_THROW(single_prefill(fresh.tq(), fresh.tk(), fresh.tv(), fresh.to(), &fresh_lse, o))
        << "window_right " << agrees << " with causal=true";
  }
  o = lse_opts();
  o.logits_soft_cap = -1.0f;
  expect_refused(b, run(o), "logits_soft_cap");
  o.logits_soft_cap = std::numeric_limits<float>::quiet_NaN();
  expect_refused(b, run(o), "logits_soft_cap");
  o.logits_soft_cap = 1e-40f;  // sm_scale / cap overflows float32
  expect_refused(b, run(o), "logits_soft_cap");
  o = lse_opts();
  for (float bad : {0.0f, -0.5f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    o.sm_scale = bad;
    expect_refused(b, run(o), "sm_scale");
  }
  o = lse_opts();
  int dummy_stream = 0;
  o.stream = &dummy_stream;
  expect_refused(b, run(o), "stream");
}

TEST(Validation, ShapesAndDtypes) {
  Buffers b;
  TensorView lse = b.tl();
  const Options o = lse_opts();
  // GQA: 4 query heads over 3 kv heads.
  {
    std::vector<float> k3(b.kv * 3 * b.d, 1.0f), v3(k3);
    auto k = TensorView::contiguous(k3.data(), DType::kF32, {b.kv, 3, b.d});
    auto v = TensorView::contiguous(v3.data(), DType::kF32, {b.kv, 3, b.d});
    expect_refused(b, [&] { single_prefill(b.tq(), k, v, b.to(), &lse, o); }, "num_qo_heads");
  }
  // dtype mismatch between q and k.
  {
    TensorView k = b.tk();
    k.dtype = DType::kF16;
    expect_refused(b, [&] { single_prefill(b.tq(), k, b.tv(), b.to(), &lse, o); }, "k: dtype float16");
  }
  // head_dim mismatch.
  {
    TensorView v = b.tv();
    v.shape[2] = 4;
    expect_refused(b, [&] { single_prefill(b.tq(), b.tk(), v, b.to(), &lse, o); }, "v:");
  }
  // out shape.
  {
    TensorView out = b.to();
    out.shape[0] = 4;
    expect_refused(b, [&] { single_prefill(b.tq(), b.tk(), b.tv(), out, &lse, o); }, "out:");
  }
  // int32 q.
  {
    TensorView q = b.tq();
    q.dtype = DType::kI32;
    expect_refused(b, [&] { single_prefill(q, b.tk(), b.tv(), b.to(), &lse, o); }, "q: dtype int32");
  }
  // head dim that the cpu backend does not support (1..512).
  {
    std::vector<float> q(1 * 1 * 600, 1.0f), k(q), v(q), out(q.size(), kSentinel);
    Buffers nb;
    auto tq = TensorView::contiguous(q.data(), DType::kF32, {1, 1, 600});
    auto tk = TensorView::contiguous(k.data(), DType::kF32, {1, 1, 600});
    auto tv = TensorView::contiguous(v.data(), DType::kF32, {1, 1, 600});
    auto to = TensorView::contiguous(out.data(), DType::kF32, {1, 1, 600});
    Options c;
    c.backend = Backend::kCPU;
    expect_refused(nb, [&] { single_prefill(tq, tk, tv, to, nullptr, c); }, "head_dim 600", ErrorCode::kUnsupported);
    for (float x : out) ASSERT_EQ(x, kSentinel);
  }
}

TEST(Validation, LastDimMustBeContiguous) {
  Buffers b;
  TensorView lse = b.tl();
  TensorView q = b.tq();
  q.strides[2] = 2;
  q.shape[2] = b.d / 2;
  expect_refused(b, [&] { single_prefill(q, b.tk(), b.tv(), b.to(), &lse, lse_opts()); }, "q: last dimension");
}

TEST(Validation, LseGivenIffRequested) {
  Buffers b;
  TensorView lse = b.tl();
  Options no_lse;
  expect_refused(b, [&] { single_prefill(b.tq(), b.tk(), b.tv(), b.to(), &lse, no_lse); }, "lse: an lse output was given");
  expect_refused(b, [&] { single_prefill(b.tq(), b.tk(), b.tv(), b.to(), nullptr, lse_opts()); }, "lse: return_lse is true");
  TensorView bad = lse;
  bad.dtype = DType::kF16;
  expect_refused(b, [&] { single_prefill(b.tq(), b.tk(), b.tv(), b.to(), &bad, lse_opts()); }, "lse: dtype");
}

TEST(Validation, OutputAliasingInput) {
  Buffers b;
  TensorView lse = b.tl();
  // out over q's memory: o would overwrite q. Check q itself stays intact.
  const std::vector<float> q_before = b.q;
  TensorView out = b.tq();
  expect_refused(b, [&] { single_prefill(b.tq(), b.tk(), b.tv(), out, &lse, lse_opts()); }, "out: output memory overlaps input q");
  EXPECT_EQ(b.q, q_before);
  // lse inside k.
  TensorView lse_in_k = TensorView::contiguous(b.k.data(), DType::kF32, {b.qo, b.hq});
  const std::vector<float> k_before = b.k;
  expect_refused(b, [&] { single_prefill(b.tq(), b.tk(), b.tv(), b.to(), &lse_in_k, lse_opts()); }, "lse: output memory overlaps input k");
  EXPECT_EQ(b.k, k_before);
}

TEST(Validation, RaggedIndptr) {
  Buffers b;
  TensorView lse = b.tl();
  BatchShape s{b.hq, b.hk, b.d, DType::kF32, Device::kCPU, 0};
  BatchPrefillRagged w;
  const int32_t kv_ok[3] = {0, 3, 7};
  {
    const int32_t qo[3] = {1, 2, 5};
    expect_refused(b, [&] { w.plan(qo, kv_ok, 2, s, lse_opts(), {}); }, "qo_indptr: starts at 1");
  }
  {
    const int32_t qo[3] = {0, 4, 2};
    expect_refused(b, [&] { w.plan(qo, kv_ok, 2, s, lse_opts(), {}); }, "qo_indptr: decreases at index 2");
  }
  {
    const int32_t qo[3] = {0, 2, 5};
    const int32_t kv[3] = {0, 3, 8};  // ends past k's 7 tokens
    w.plan(qo, kv, 2, s, lse_opts(), {});
    expect_refused(b, [&] { w.run(b.tq(), b.tk(), b.tv(), b.to(), &lse); }, "kv_indptr: ends at 8");
  }
  // q's rows must be qo_indptr's: rows past it would be left unwritten (FlashInfer refuses
  // them too), rows missing would be read past q.
  for (const int32_t end : {6, 4}) {
    const int32_t qo[3] = {0, 2, end};  // q has 5 tokens
    w.plan(qo, kv_ok, 2, s, lse_opts(), {});
    expect_refused(b, [&] { w.run(b.tq(), b.tk(), b.tv(), b.to(), &lse); },
                   "q: 5 tokens, but the plan's qo_indptr ends at " + std::to_string(end));
  }
  BatchPrefillRagged unplanned;
  expect_refused(b, [&] { unplanned.run(b.tq(), b.tk(), b.tv(), b.to(), &lse); }, "plan()");
}

TEST(Validation, PagedIndex) {
  Buffers b;
  TensorView lse = b.tl();
  BatchShape s{b.hq, b.hk, b.d, DType::kF32, Device::kCPU, 0};
  const int page = 4, pages = 3;
  std::vector<float> cache(pages * page * b.hk * b.d, 1.0f);
  PagedKVCache kv;
  kv.k = TensorView::contiguous(cache.data(), DType::kF32, {pages, page, b.hk, b.d});
  kv.v = kv.k;
  const int32_t qo[3] = {0, 2, 5};
  const int32_t indptr[3] = {0, 1, 3};
  BatchPrefillPaged w;
  {
    const int32_t idx[3] = {0, 2, 3};  // page 3 of 3
    const int32_t last[2] = {2, 4};
    PagedIndex pi{indptr, idx, last, page, pages};
    expect_refused(b, [&] { w.plan(qo, pi, 2, s, lse_opts(), {}); }, "paged_kv_indices: entry 2 is 3");
  }
  {
    const int32_t idx[3] = {0, 2, -1};
    const int32_t last[2] = {2, 4};
    PagedIndex pi{indptr, idx, last, page, pages};
    expect_refused(b, [&] { w.plan(qo, pi, 2, s, lse_opts(), {}); }, "paged_kv_indices: entry 2 is -1");
  }
  for (int32_t bad_last : {0, 5}) {
    const int32_t idx[3] = {0, 2, 1};
    const int32_t last[2] = {bad_last, 4};
    PagedIndex pi{indptr, idx, last, page, pages};
    expect_refused(b, [&] { w.plan(qo, pi, 2, s, lse_opts(), {}); }, "paged_kv_last_page_len: entry 0");
  }
  {
    const int32_t idx[3] = {0, 2, 1};
    const int32_t last[2] = {2, 4};
    PagedIndex pi{indptr, idx, last, 0, pages};
    expect_refused(b, [&] { w.plan(qo, pi, 2, s, lse_opts(), {}); }, "page_size: got 0");
  }
  {
    // page_size in the cache differs from the plan's.
    const int32_t idx[3] = {0, 2, 1};
    const int32_t last[2] = {2, 2};
    PagedIndex pi{indptr, idx, last, 2, pages};
    w.plan(qo, pi, 2, s, lse_opts(), {});
    expect_refused(b, [&] { w.run(b.tq(), kv, b.to(), &lse); }, "paged_k_cache");
  }
}

TEST(Validation, PagedLengthBeyondInt32) {
  Buffers b;
  BatchShape s{b.hq, b.hk, b.d, DType::kF32, Device::kCPU, 0};
  std::vector<int32_t> indices(2049, 0);
  const int32_t qo[2] = {0, 1};
  const int32_t indptr[2] = {0, 2049};
  const int32_t last[1] = {1};
  PagedIndex pi{indptr, indices.data(), last, 1 << 20, 1};
  BatchDecodePaged w;
  expect_refused(b, [&] { w.plan(pi, 1, s, {}, {}); }, "kv_len 2147483649 > 2^31 - 1");
  (void)qo;
}

TEST(Validation, EmptyBatchRunsAndWritesNothing) {
  Buffers b;
  BatchShape s{b.hq, b.hk, b.d, DType::kF32, Device::kCPU, 0};
  const int32_t zero[1] = {0};
  PagedIndex pi{zero, nullptr, nullptr, 4, 0};
  std::vector<float> cache(4 * b.hk * b.d, 1.0f);
  PagedKVCache kv;
  kv.k = TensorView::contiguous(cache.data(), DType::kF32, {1, 4, b.hk, b.d});
  kv.v = kv.k;
  TensorView q0 = TensorView::contiguous(b.q.data(), DType::kF32, {0, b.hq, b.d});
  TensorView o0 = TensorView::contiguous(b.o.data(), DType::kF32, {0, b.hq, b.d});
  BatchDecodePaged decode;
  decode.plan(pi, 0, s, {}, {});
  EXPECT_NO_THROW(decode.run(q0, kv, o0, nullptr));
  BatchPrefillPaged prefill;
  prefill.plan(zero, pi, 0, s, {}, {});
  EXPECT_NO_THROW(prefill.run(q0, kv, o0, nullptr));
  EXPECT_TRUE(b.outputs_untouched());
}

TEST(Validation, HostTensorsRefusedByGpuBackend) {
  Buffers b;
  TensorView lse = b.tl();
  Options o = lse_opts();
  o.backend = Backend::kSM90;
  expect_refused(b, [&] { single_prefill(b.tq(), b.tk(), b.tv(), b.to(), &lse, o); }, "needs CUDA tensors");
}

TEST(Validation, RunStreamForHostTensors) {
  Buffers b;
  TensorView lse = b.tl();
  BatchShape s{b.hq, b.hk, b.d, DType::kF32, Device::kCPU, 0};
  BatchPrefillRagged w;
  const int32_t qo[3] = {0, 2, 5}, kv[3] = {0, 3, 7};
  w.plan(qo, kv, 2, s, lse_opts(), {});
  int fake_stream = 0;  // never used as a stream: refused first
  RunArgs args;
  args.stream = &fake_stream;
  expect_refused(b, [&] { w.run(b.tq(), b.tk(), b.tv(), b.to(), &lse, args); }, "stream:");
  args.stream = nullptr;  // given, and null: the cpu backend's only stream
  EXPECT_NO_THROW(w.run(b.tq(), b.tk(), b.tv(), b.to(), &lse, args));
}

TEST(Validation, PlanDataBesideData) {
  Buffers b;
  BatchShape s{b.hq, b.hk, b.d, DType::kF32, Device::kCPU, 0};
  BatchPrefillRagged w;
  const int32_t qo[3] = {0, 2, 5}, kv[3] = {0, 3, 7};
  std::vector<unsigned char> bytes(4096);
  Workspace ws{bytes.data(), 2048, bytes.data() + 1024, 1024};  // plan_data inside data
  expect_refused(b, [&] { w.plan(qo, kv, 2, s, lse_opts(), ws); }, "workspace: plan_data overlaps data");
  ws.plan_data = nullptr;
  expect_refused(b, [&] { w.plan(qo, kv, 2, s, lse_opts(), ws); }, "workspace: plan_bytes is 1024 without a plan_data");
  ws.plan_data = bytes.data() + 2048;  // adjacent: fine
  EXPECT_NO_THROW(w.plan(qo, kv, 2, s, lse_opts(), ws));
}

TEST(Validation, MixedDevicesAndGpuAlignment) {
  std::vector<uint16_t> host(64);
  TensorView t = TensorView::contiguous(host.data(), DType::kF16, {2, 4, 8});
  EXPECT_THROW(validate::placement({"k", t}, Device::kCUDA, 0), Error);
  t.device = Device::kCUDA;
  t.data = reinterpret_cast<void*>(uintptr_t{0x1000} + 2);  // never dereferenced
  try {
    validate::placement({"k", t}, Device::kCUDA, 0);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("k: GPU pointer"), std::string::npos) << e.what();
  }
  t.data = reinterpret_cast<void*>(uintptr_t{0x1000});
  t.strides[1] = 12;  // rows 24 bytes apart
  t.strides[0] = 48;
  EXPECT_THROW(validate::placement({"k", t}, Device::kCUDA, 0, /*vector_rows=*/true), Error);
  EXPECT_NO_THROW(validate::placement({"lse", t}, Device::kCUDA, 0)) << "scalar tensors need no row alignment";
}

TEST(Validation, MergeShapes) {
  std::vector<float> va(2 * 3 * 4, 1.0f), vb(va), vo(va.size(), kSentinel), sa(6, 0.0f), sb(sa), so(6, kSentinel);
  auto tv = [](std::vector<float>& x) { return TensorView::contiguous(x.data(), DType::kF32, {2, 3, 4}); };
  auto ts = [](std::vector<float>& x) { return TensorView::contiguous(x.data(), DType::kF32, {2, 3}); };
  TensorView short_s = TensorView::contiguous(sb.data(), DType::kF32, {2, 2});
  EXPECT_THROW(merge_state(tv(va), ts(sa), tv(vb), short_s, tv(vo), ts(so)), Error);
  for (float x : vo) ASSERT_EQ(x, kSentinel);
  TensorView empty_d = TensorView::contiguous(va.data(), DType::kF32, {2, 3, 0});
  try {
    merge_state(empty_d, ts(sa), tv(vb), ts(sb), tv(vo), ts(so));
    FAIL() << "head_dim 0 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
  }
  EXPECT_NO_THROW(merge_state(tv(va), ts(sa), tv(vb), ts(sb), tv(vo), ts(so)));
  EXPECT_FLOAT_EQ(vo[0], 1.0f);
  EXPECT_FLOAT_EQ(so[0], 1.0f);  // log2(2^0 + 2^0)
}

TEST(Validation, OutputsOverlapNeitherInputsNorThemselves) {
  // SPEC.md: an output that aliases an input is an error, v_out = v_a itself included, and
  // an output whose elements share memory (an expanded, stride-0 view) would race: both are
  // refused before anything is written.
  std::vector<float> va(2 * 3 * 4, 1.0f), vb(va), vo(va.size(), kSentinel), sa(6, 0.0f), sb(6, 0.0f), so(6, kSentinel);
  auto tv = [](float* x) { return TensorView::contiguous(x, DType::kF32, {2, 3, 4}); };
  auto ts = [](float* x) { return TensorView::contiguous(x, DType::kF32, {2, 3}); };
  auto refused = [&](const TensorView& v_out, const TensorView& s_out, const char* what) {
    try {
      merge_state(tv(va.data()), ts(sa.data()), tv(vb.data()), ts(sb.data()), v_out, s_out);
      FAIL() << what << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
    for (float x : vo) ASSERT_EQ(x, kSentinel);
    for (float x : so) ASSERT_EQ(x, kSentinel);
    for (float x : va) ASSERT_EQ(x, 1.0f);
  };
  refused(tv(va.data()), ts(so.data()), "v_out: output memory overlaps input v_a");
  refused(tv(vo.data()), ts(sa.data()), "s_out: output memory overlaps input s_a");
  TensorView expanded = tv(vo.data());
  expanded.strides[0] = 0;  // both tokens' rows at one address
  refused(expanded, ts(so.data()), "v_out: elements of [2, 3, 4] share memory");
  TensorView heads_collide = tv(vo.data());
  heads_collide.strides[1] = 2;  // head h's row starts inside head h-1's
  refused(heads_collide, ts(so.data()), "v_out: elements of [2, 3, 4] share memory");
  TensorView s_expanded = ts(so.data());
  s_expanded.strides[1] = 0;
  refused(tv(vo.data()), s_expanded, "s_out: elements of [2, 3] share memory");

  // Attention outputs go through the same check.
  Buffers b;
  TensorView out = b.to();
  out.strides[1] = 0;
  expect_refused(b, [&] { single_prefill(b.tq(), b.tk(), b.tv(), out, nullptr, Options{}); }, "out: elements of");
  // Distinct elements in any order are fine: a transposed (head-major) view of v_out.
  TensorView transposed = tv(vo.data());
  transposed.strides[0] = 4;
  transposed.strides[1] = 8;
  EXPECT_NO_THROW(merge_state(tv(va.data()), ts(sa.data()), tv(vb.data()), ts(sb.data()), transposed, ts(so.data())));
}

// Float parameters are judged as the float32 the kernels take: a positive value that rounds
// to 0 there would turn the soft cap off (accepted and ignored), one that rounds to inf
// would scale every logit to inf (issue 63).
TEST(Validation, FloatParametersAreJudgedInFloat32) {
  for (double tiny : {1e-300, 1e-50, -1e-50}) {
    try {
      validate::float_param("logits_soft_cap", tiny);
      ADD_FAILURE() << tiny << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("logits_soft_cap: got"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(validate::float_param("sm_scale", 1e300), Error);
  EXPECT_THROW(validate::float_param("sm_scale", 1e-46), Error);
  EXPECT_EQ(validate::float_param("logits_soft_cap", 0.0), 0.0f);   // off
  EXPECT_EQ(validate::float_param("logits_soft_cap", 30.0), 30.0f);
  EXPECT_EQ(validate::float_param("sm_scale", 1e-40), static_cast<float>(1e-40));  // subnormal, nonzero
  EXPECT_TRUE(std::isnan(validate::float_param("sm_scale", std::nan(""))));  // left to options()
  EXPECT_TRUE(std::isinf(validate::float_param("sm_scale", INFINITY)));
}

// Found by the fuzz harness (tests/fuzz): merge_states over no rows offset null views, undefined
// behaviour that UBSan (the sanitizer build) reports; no rows now reads and writes nothing.
TEST(Validation, MergeOfNoRowsTouchesNothing) {
  const TensorView v = TensorView::contiguous(nullptr, DType::kF32, {0, 3, 2, 8});
  const TensorView s = TensorView::contiguous(nullptr, DType::kF32, {0, 3, 2});
  const TensorView vo = TensorView::contiguous(nullptr, DType::kF32, {0, 2, 8});
  const TensorView so = TensorView::contiguous(nullptr, DType::kF32, {0, 2});
  EXPECT_NO_THROW(merge_states(v, s, vo, so));
  const TensorView va = TensorView::contiguous(nullptr, DType::kF32, {0, 2, 8});
  EXPECT_NO_THROW(merge_state(va, so, va, so, vo, so));
}

}  // namespace
}  // namespace flashband
