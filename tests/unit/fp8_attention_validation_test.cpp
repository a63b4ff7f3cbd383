// SPEC.md "fp8 attention", bad input and dispatch: e4m3 q needs e4m3 K/V and a named 16-bit
// output, q_scale is checked like k/v scales and needs e4m3 q, every refusal is named and
// writes nothing; the capability rows refuse with their reasons; no 16-bit kernel ever
// receives fp8 q.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "dispatch/capability_table.h"
#include "dispatch/registry.h"
#include "dispatch/select.h"
#include "expect_refused.h"
#include "flashband/attention.h"

namespace flashband {
namespace {

constexpr uint16_t kSentinel = 0x7bff;  // bf16 bits of a large finite value
constexpr uint8_t kOne = 0x38;          // 1.0 in e4m3

// e4m3 q, K, V; bf16 out: one request of 5 queries over 7 keys, GQA 4 / 2, D = 8.
struct Buffers {
  int qo = 5, kv = 7, hq = 4, hk = 2, d = 8;
  std::vector<uint8_t> q = std::vector<uint8_t>(qo * hq * d, kOne);
  // Twice the bytes e4m3 needs, so a 16-bit view of them (a refused dtype) stays inside.
  std::vector<uint8_t> k = std::vector<uint8_t>(2 * kv * hk * d, kOne), v = k;
  std::vector<uint16_t> o = std::vector<uint16_t>(qo * hq * d, kSentinel);
  std::vector<float> lse = std::vector<float>(qo * hq, 12345.0f);
  std::vector<float> scale = {0.5f, 0.0f, 2.0f};
  int32_t qo_indptr[2] = {0, 5}, kv_indptr[2] = {0, 7};

  TensorView tq(DType dt = DType::kE4M3) { return TensorView::contiguous(q.data(), dt, {qo, hq, d}); }
  TensorView to(DType dt = DType::kBF16) { return TensorView::contiguous(o.data(), dt, {qo, hq, d}); }
  TensorView tl() { return TensorView::contiguous(lse.data(), DType::kF32, {qo, hq}); }
  TensorView tk(DType dt = DType::kE4M3) { return TensorView::contiguous(k.data(), dt, {kv, hk, d}); }
  TensorView tv(DType dt = DType::kE4M3) { return TensorView::contiguous(v.data(), dt, {kv, hk, d}); }
  BatchShape shape(std::optional<DType> o_dtype = DType::kBF16, std::optional<DType> kv_dtype = std::nullopt,
                   DType q_dtype = DType::kE4M3) {
    BatchShape s{hq, hk, d, q_dtype, Device::kCPU, 0};
    s.kv_dtype = kv_dtype;
    s.o_dtype = o_dtype;
    return s;
  }
  bool untouched() const { return testing::all_sentinel(o, kSentinel) && testing::all_sentinel(lse, 12345.0f); }
};

void expect_refused(Buffers& b, const std::function<void()>& call, const std::string& needle) {
  testing::expect_refused_untouched(call, needle, [&] { return b.untouched(); });
}

void run_ragged(Buffers& b, const KVScales& s) {
  BatchPrefillRagged r;
  r.plan(b.qo_indptr, b.kv_indptr, 1, b.shape(), testing::lse_options(), {});
  TensorView lse = b.tl();
  r.run(b.tq(), b.tk(), b.tv(), b.to(), &lse, RunArgs{s});
}

void run_single(Buffers& b, const KVScales& s) {
  TensorView lse = b.tl();
  single_prefill(b.tq(), b.tk(), b.tv(), b.to(), &lse, testing::lse_options(), {}, s);
}

TEST(Fp8AttentionValidation, GoodInputRuns) {
  for (auto run : {run_single, run_ragged}) {
    Buffers b;
    const TensorView qt = TensorView::contiguous(&b.scale[2], DType::kF32, {1});
    EXPECT_NO_THROW(run(b, KVScales{0.5f, 2.0f, nullptr, nullptr, 1.0f, &qt}));
    EXPECT_FALSE(b.untouched());
  }
}

TEST(Fp8AttentionValidation, PlanDtypes) {
  Buffers b;
  BatchPrefillRagged r;
  auto plan = [&](BatchShape s) { return [&, s] { r.plan(b.qo_indptr, b.kv_indptr, 1, s, testing::lse_options(), {}); }; };
  EXPECT_NO_THROW(plan(b.shape(DType::kF16))());
  expect_refused(b, plan(b.shape(std::nullopt)), "o_data_type: not given, required with q_data_type float8_e4m3fn");
  expect_refused(b, plan(b.shape(DType::kE4M3)), "o_data_type: got float8_e4m3fn with q_data_type float8_e4m3fn, "
                                                 "allowed: float16, bfloat16");
  expect_refused(b, plan(b.shape(DType::kF32)), "o_data_type: got float32");
  expect_refused(b, plan(b.shape(DType::kBF16, DType::kE5M2)), "kv_data_type: got float8_e5m2 with q_data_type float8_e4m3fn");
  expect_refused(b, plan(b.shape(DType::kBF16, DType::kBF16)), "kv_data_type: got bfloat16 with q_data_type float8_e4m3fn");
  // A 16-bit q takes no other output dtype: o_data_type is never accepted and ignored.
  expect_refused(b, plan(b.shape(DType::kF16, DType::kE4M3, DType::kBF16)),
                 "o_data_type: got float16 with q_data_type bfloat16");
}

TEST(Fp8AttentionValidation, RunTensors) {
  Buffers b;
  BatchPrefillRagged r;
  r.plan(b.qo_indptr, b.kv_indptr, 1, b.shape(), testing::lse_options(), {});
  TensorView lse = b.tl();
  expect_refused(b, [&] { r.run(b.tq(), b.tk(), b.tv(), b.to(DType::kF16), &lse); },
                 "out: dtype float16, expected bfloat16 (the o_data_type given to plan())");
  expect_refused(b, [&] { r.run(b.tq(DType::kE5M2), b.tk(), b.tv(), b.to(), &lse); }, "q: dtype float8_e5m2");
  expect_refused(b, [&] { r.run(b.tq(), b.tk(DType::kE5M2), b.tv(DType::kE5M2), b.to(), &lse); }, "k: dtype float8_e5m2");
  // single prefill takes the output dtype from out: it must be fp16 or bf16.
  expect_refused(b, [&] { single_prefill(b.tq(), b.tk(), b.tv(), b.to(DType::kE4M3), &lse, testing::lse_options()); },
                 "out: got float8_e4m3fn with q_data_type float8_e4m3fn, allowed: float16, bfloat16");
  expect_refused(b, [&] { single_prefill(b.tq(), b.tk(DType::kBF16), b.tv(DType::kBF16), b.to(), &lse, testing::lse_options()); },
                 "k: dtype bfloat16, expected float8_e4m3fn (must match q)");
}

TEST(Fp8AttentionValidation, QScale) {
  const float inf = std::numeric_limits<float>::infinity();
  for (auto run : {run_single, run_ragged}) {
    Buffers b;
    for (float x : {0.0f, -1.0f, std::numeric_limits<float>::quiet_NaN(), inf})
      expect_refused(b, [&] { run(b, KVScales{1.0f, 1.0f, nullptr, nullptr, x, nullptr}); }, "q_scale: got");
    const TensorView zero = TensorView::contiguous(&b.scale[1], DType::kF32, {1});
    expect_refused(b, [&] { run(b, KVScales{1.0f, 1.0f, nullptr, nullptr, 1.0f, &zero}); }, "q_scale: got");
    const TensorView two = TensorView::contiguous(&b.scale[0], DType::kF32, {2});
    expect_refused(b, [&] { run(b, KVScales{1.0f, 1.0f, nullptr, nullptr, 1.0f, &two}); }, "q_scale: shape [2]");
  }
  // q_scale belongs to fp8 attention: with 16-bit q (here over an fp8 cache) it is refused.
  Buffers b;
  std::vector<uint16_t> q16(b.q.size(), 0x3f80);
  const TensorView q = TensorView::contiguous(q16.data(), DType::kBF16, {b.qo, b.hq, b.d});
  TensorView lse = b.tl();
  expect_refused(b, [&] { single_prefill(q, b.tk(), b.tv(), b.to(), &lse, testing::lse_options(), {}, KVScales{1, 1, nullptr, nullptr, 2.0f, nullptr}); },
                 "q_scale: got 2.000000, allowed: 1.0 for q of dtype bfloat16");
}

// The capability rows: cpu serves fp8 attention; each GPU backend refuses it with its reason.
TEST(Fp8AttentionDispatch, RowsRefuseWithReasons) {
  ProblemDesc p;
  p.dtype = DType::kE4M3;
  p.kv_dtype = DType::kE4M3;
  p.head_dim = 128;
  EXPECT_TRUE(supports(p, Backend::kCPU).supported) << supports(p, Backend::kCPU).reason;
  EXPECT_EQ(select_backend(p), Backend::kCPU);
  using namespace dispatch;
  const struct {
    Backend backend;
    int arch;
    const char* reason;
  } want[] = {{Backend::kSM80, 80, "no fp8 tensor cores before sm_89"},
              {Backend::kSM80, 90, "no fp8 tensor cores before sm_89"},
              {Backend::kSM90, 90, "fp8 attention kernels not written yet, issue 60"},
              {Backend::kCUDNN, 86, "cuDNN's fp8 SDPA needs Hopper or newer"},
              {Backend::kCUDNN, 90, "cuDNN's fp8 SDPA on Hopper writes fp8 output only"},
              {Backend::kCUDNN, 100, "not wired yet"}};
  p.device = Device::kCUDA;
  for (const auto& w : want) {
    MachineInfo m;
    m.cuda_devices = 1;
    m.arch = w.arch;
    m.cudnn_version = 91900;
    const Verdict v = check_backend(p, w.backend, m, registry(), capability_table());
    EXPECT_FALSE(v.ok) << backend_name(w.backend);
    EXPECT_NE(v.reason.find(std::string("does not support fp8 attention (q float8_e4m3fn): ") + w.reason),
              std::string::npos)
        << v.reason;
  }
}

// The variant key carries q's dtype: fp8 q never reaches a 16-bit kernel, even one whose
// K/V dtype (e4m3) matches.
TEST(Fp8AttentionDispatch, ASixteenBitKernelNeverReceivesFp8Q) {
  dispatch::VariantKey key;
  key.backend = Backend::kSM80;
  key.head_dim = 128;
  key.dtype = DType::kBF16;
  key.kv_dtype = DType::kE4M3;  // a 16-bit-q kernel over an fp8 cache
  const dispatch::KernelEntry e{key, [](const core::AttentionParams&) {}};
  core::AttentionParams a;
  a.head_dim = 128;
  a.dtype = DType::kBF16;
  a.kv_dtype = DType::kE4M3;
  EXPECT_NO_THROW(dispatch::check_kernel_fits(e, a));
  a.dtype = DType::kE4M3;
  try {
    dispatch::check_kernel_fits(e, a);
    ADD_FAILURE() << "a bf16-q kernel accepted e4m3 q";
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), ErrorCode::kInternal) << err.what();
  }
  ProblemDesc p;
  p.dtype = DType::kE4M3;
  p.kv_dtype = DType::kE4M3;
  p.head_dim = 128;
  EXPECT_EQ(dispatch::variant_for(p, Backend::kCPU).dtype, DType::kE4M3);
  const dispatch::KernelEntry* cpu = dispatch::registry().find(dispatch::variant_for(p, Backend::kCPU));
  ASSERT_NE(cpu, nullptr) << "the cpu backend registers fp8 attention";
  EXPECT_EQ(cpu->key.dtype, DType::kE4M3);
}

}  // namespace
}  // namespace flashband
