// SPEC.md "Quantized KV (fp8)", bad input: each item refused by name before anything is
// written (outputs keep their sentinel), on every entry point that reads K/V; and the
// capability table's K/V dtype column as selection reads it.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/float_convert.h"
#include "dispatch/select.h"
#include "expect_refused.h"
#include "flashband/attention.h"

namespace flashband {
namespace {

constexpr uint16_t kSentinel = 0x7bff;  // bf16 bits of a large finite value
constexpr uint8_t kOne = 0x38;          // 1.0 in e4m3

// bf16 q/out, e4m3 K/V: one request of 5 queries over 7 keys, also as a paged cache of
// 2 pages of 4 slots, and a decode batch of one.
struct Fp8Buffers {
  int qo = 5, kv = 7, hq = 4, hk = 2, d = 8, ps = 4;
  std::vector<uint16_t> q = std::vector<uint16_t>(qo * hq * d, 0x3f00), o = std::vector<uint16_t>(qo * hq * d, kSentinel);
  std::vector<float> lse = std::vector<float>(qo * hq, 12345.0f);
  std::vector<uint8_t> k = std::vector<uint8_t>(kv * hk * d, kOne), v = k;
  std::vector<uint8_t> pk = std::vector<uint8_t>(2 * ps * hk * d, kOne), pv = pk;
  std::vector<float> scale = {0.5f, 0.0f, 2.0f, 1.0f};
  int32_t qo_indptr[2] = {0, 5}, kv_indptr[2] = {0, 7}, page_indptr[2] = {0, 2}, pages[2] = {1, 0}, last[1] = {3};

  TensorView tq(int tokens = 5) { return TensorView::contiguous(q.data(), DType::kBF16, {tokens, hq, d}); }
  TensorView to(int tokens = 5) { return TensorView::contiguous(o.data(), DType::kBF16, {tokens, hq, d}); }
  TensorView tl(int tokens = 5) { return TensorView::contiguous(lse.data(), DType::kF32, {tokens, hq}); }
  TensorView tk(DType dt = DType::kE4M3) { return TensorView::contiguous(k.data(), dt, {kv, hk, d}); }
  TensorView tv(DType dt = DType::kE4M3) { return TensorView::contiguous(v.data(), dt, {kv, hk, d}); }
  PagedKVCache cache(DType dt = DType::kE4M3) {
    return {TensorView::contiguous(pk.data(), dt, {2, ps, hk, d}), TensorView::contiguous(pv.data(), dt, {2, ps, hk, d})};
  }
  PagedIndex index() {
    PagedIndex p;
    p.indptr = page_indptr;
    p.indices = pages;
    p.last_page_len = last;
    p.page_size = ps;
    p.num_pages = 2;
    return p;
  }
  BatchShape shape(std::optional<DType> kv_dtype = DType::kE4M3, DType q_dtype = DType::kBF16) {
    BatchShape s{hq, hk, d, q_dtype, Device::kCPU, 0};
    s.kv_dtype = kv_dtype;
    return s;
  }
  bool untouched() const { return testing::all_sentinel(o, kSentinel) && testing::all_sentinel(lse, 12345.0f); }
};

void expect_refused(Fp8Buffers& b, const std::function<void()>& call, const std::string& needle) {
  testing::expect_refused_untouched(call, needle, [&] { return b.untouched(); });
}

// One run per entry point, each given `scales` (and `kv_dtype` K/V at run time).
using EntryRun = std::function<void(Fp8Buffers&, const KVScales&, DType kv_dtype)>;
std::vector<std::pair<const char*, EntryRun>> entry_runs() {
  return {
      {"single",
       [](Fp8Buffers& b, const KVScales& s, DType dt) {
         TensorView lse = b.tl();
         single_prefill(b.tq(), b.tk(dt), b.tv(dt), b.to(), &lse, testing::lse_options(), {}, s);
       }},
      {"ragged",
       [](Fp8Buffers& b, const KVScales& s, DType dt) {
         BatchPrefillRagged r;
         r.plan(b.qo_indptr, b.kv_indptr, 1, b.shape(), testing::lse_options(), {});
         TensorView lse = b.tl();
         r.run(b.tq(), b.tk(dt), b.tv(dt), b.to(), &lse, RunArgs{s});
       }},
      {"paged",
       [](Fp8Buffers& b, const KVScales& s, DType dt) {
         BatchPrefillPaged p;
         p.plan(b.qo_indptr, b.index(), 1, b.shape(), testing::lse_options(), {});
         TensorView lse = b.tl();
         p.run(b.tq(), b.cache(dt), b.to(), &lse, RunArgs{s});
       }},
      {"decode",
       [](Fp8Buffers& b, const KVScales& s, DType dt) {
         BatchDecodePaged p;
         p.plan(b.index(), 1, b.shape(), testing::lse_options(), {});
         TensorView lse = b.tl(1);
         p.run(b.tq(1), b.cache(dt), b.to(1), &lse, RunArgs{s});
       }},
  };
}

TEST(Fp8Validation, GoodInputRunsOnEveryEntryPoint) {
  for (const auto& [name, entry_run] : entry_runs()) {
    const EntryRun& run = entry_run;  // a plain reference: lambdas cannot capture bindings (C++17)
    Fp8Buffers b;
    const TensorView kt = TensorView::contiguous(&b.scale[0], DType::kF32, {1});
    EXPECT_NO_THROW(run(b, KVScales{0.37f, 3.1f, &kt, nullptr}, DType::kE4M3)) << name;
    EXPECT_FALSE(b.untouched()) << name;
  }
}

TEST(Fp8Validation, ScaleValues) {
  const float bad[] = {0.0f, -0.5f, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                       -std::numeric_limits<float>::infinity()};
  for (const auto& [name, entry_run] : entry_runs()) {
    const EntryRun& run = entry_run;  // a plain reference: lambdas cannot capture bindings (C++17)
    SCOPED_TRACE(name);
    for (float x : bad) {
      Fp8Buffers b;
      expect_refused(b, [&] { run(b, KVScales{x, 1.0f, nullptr, nullptr}, DType::kE4M3); }, "k_scale: got");
      expect_refused(b, [&] { run(b, KVScales{1.0f, x, nullptr, nullptr}, DType::kE4M3); }, "v_scale: got");
      // A host scale tensor's value is checked like a float.
      b.scale[0] = x;
      const TensorView t = TensorView::contiguous(&b.scale[0], DType::kF32, {1});
      expect_refused(b, [&] { run(b, KVScales{1.0f, 1.0f, &t, nullptr}, DType::kE4M3); }, "k_scale: got");
      expect_refused(b, [&] { run(b, KVScales{1.0f, 1.0f, nullptr, &t}, DType::kE4M3); }, "v_scale: got");
    }
  }
}

TEST(Fp8Validation, ScaleTensors) {
  for (const auto& [name, entry_run] : entry_runs()) {
    const EntryRun& run = entry_run;  // a plain reference: lambdas cannot capture bindings (C++17)
    SCOPED_TRACE(name);
    Fp8Buffers b;
    const TensorView two = TensorView::contiguous(b.scale.data(), DType::kF32, {2});
    expect_refused(b, [&] { run(b, KVScales{1.0f, 1.0f, &two, nullptr}, DType::kE4M3); }, "k_scale: shape [2]");
    const TensorView empty = TensorView::contiguous(b.scale.data(), DType::kF32, {0});
    expect_refused(b, [&] { run(b, KVScales{1.0f, 1.0f, nullptr, &empty}, DType::kE4M3); }, "v_scale: shape [0]");
    const TensorView f16 = TensorView::contiguous(b.scale.data(), DType::kF16, {1});
    expect_refused(b, [&] { run(b, KVScales{1.0f, 1.0f, &f16, nullptr}, DType::kE4M3); }, "k_scale: dtype float16");
    // On a device the plan does not run on (never dereferenced: the device is checked first).
    const TensorView gpu = TensorView::contiguous(b.scale.data(), DType::kF32, {1}, Device::kCUDA);
    expect_refused(b, [&] { run(b, KVScales{1.0f, 1.0f, nullptr, &gpu}, DType::kE4M3); }, "v_scale: on cuda:0");
    // One element of any rank is a scale, as torch's 0-d and [1] tensors are.
    const TensorView scalar = TensorView::contiguous(b.scale.data(), DType::kF32, {1, 1});
    EXPECT_NO_THROW(run(b, KVScales{1.0f, 1.0f, &scalar, &scalar}, DType::kE4M3));
  }
}

TEST(Fp8Validation, RunKVDtypeMustBeThePlans) {
  for (const auto& [name, entry_run] : entry_runs()) {
    const EntryRun& run = entry_run;  // a plain reference: lambdas cannot capture bindings (C++17)
    if (std::string(name) == "single") continue;  // its K/V dtype is k's own
    SCOPED_TRACE(name);
    Fp8Buffers b;
    expect_refused(b, [&] { run(b, {}, DType::kE5M2); }, "dtype float8_e5m2, expected float8_e4m3fn (the kv_data_type");
    expect_refused(b, [&] { run(b, {}, DType::kBF16); }, "dtype bfloat16, expected float8_e4m3fn (the kv_data_type");
  }
  // single prefill: v must have k's dtype.
  Fp8Buffers b;
  TensorView lse = b.tl();
  expect_refused(b, [&] { single_prefill(b.tq(), b.tk(), b.tv(DType::kE5M2), b.to(), &lse, testing::lse_options()); },
                 "v: dtype float8_e5m2, expected float8_e4m3fn");
}

TEST(Fp8Validation, ScalesNeedAnFp8Cache) {
  // A bf16 cache (q's dtype): a scale other than 1.0, or a tensor, would be ignored by the
  // 16-bit kernels, so it is refused by name; 1.0 (what engines pass) runs.
  Fp8Buffers b;
  std::vector<uint16_t> k16(b.kv * b.hk * b.d, 0x3f80), v16 = k16;
  const TensorView k = TensorView::contiguous(k16.data(), DType::kBF16, {b.kv, b.hk, b.d});
  const TensorView v = TensorView::contiguous(v16.data(), DType::kBF16, {b.kv, b.hk, b.d});
  TensorView lse = b.tl();
  const TensorView t = TensorView::contiguous(&b.scale[3], DType::kF32, {1});
  expect_refused(b, [&] { single_prefill(b.tq(), k, v, b.to(), &lse, testing::lse_options(), {}, {0.5f, 1.0f, nullptr, nullptr}); },
                 "k_scale: got 0.5");
  expect_refused(b, [&] { single_prefill(b.tq(), k, v, b.to(), &lse, testing::lse_options(), {}, {1.0f, 1.0f, nullptr, &t}); },
                 "v_scale: got a tensor, allowed: 1.0 for K/V of dtype bfloat16");
  EXPECT_NO_THROW(single_prefill(b.tq(), k, v, b.to(), &lse, testing::lse_options(), {}, {1.0f, 1.0f, nullptr, nullptr}));
}

TEST(Fp8Validation, PlanDtypes) {
  Fp8Buffers b;
  BatchPrefillRagged r;
  auto plan = [&](BatchShape s) { return [&, s] { r.plan(b.qo_indptr, b.kv_indptr, 1, s, testing::lse_options(), {}); }; };
  expect_refused(b, plan(b.shape(DType::kE4M3, DType::kF32)), "with q_data_type float32; an fp8 cache is read");
  expect_refused(b, plan(b.shape(DType::kF16, DType::kBF16)), "kv_data_type: got float16 with q_data_type bfloat16");
  expect_refused(b, plan(b.shape(DType::kI32, DType::kBF16)), "kv_data_type: got int32");
  // e4m3 q is fp8 attention (tests/unit/fp8_attention_test.cpp): without an output dtype it
  // is refused naming o_data_type; e5m2 q is no path at all.
  expect_refused(b, plan(b.shape(std::nullopt, DType::kE4M3)), "o_data_type: not given");
  expect_refused(b, plan(b.shape(DType::kE4M3, DType::kE4M3)), "o_data_type: not given");
  expect_refused(b, plan(b.shape(DType::kE5M2, DType::kE5M2)), "q_data_type: got float8_e5m2");
  TensorView q8 = b.tq();
  q8.dtype = DType::kE5M2;
  TensorView lse = b.tl();
  expect_refused(b, [&] { single_prefill(q8, b.tk(), b.tv(), b.to(), &lse, testing::lse_options()); },
                 "q of fp8 attention is float8_e4m3fn only");
}

// The capability table's K/V dtype column: a backend without the format refuses by name,
// naming the backend that can; auto passes over it to the next.
TEST(Fp8Dispatch, KVDtypeColumnDrivesSelection) {
  using namespace dispatch;
  auto fake_launch = [](const core::AttentionParams&) {};
  Registry reg;
  for (Backend be : {Backend::kSM90, Backend::kSM80})
    for (DType kv : {DType::kBF16, DType::kE4M3}) {
      VariantKey k;
      k.backend = be;
      k.dtype = DType::kBF16;
      k.kv_dtype = kv;
      k.head_dim = 128;
      reg.add(k, fake_launch);
    }
  std::vector<CapabilityRow> table;
  for (Backend be : {Backend::kSM90, Backend::kSM80}) {
    CapabilityRow r{Op::kSinglePrefill, be, 80, 90, Status::kValidated, {}, "test row"};
    r.limits.dtypes = {DType::kBF16};
    r.limits.head_dims = {128};
    if (be == Backend::kSM80) r.limits.kv_dtypes = {DType::kE4M3};
    else r.limits.kv_dtypes_note = "not built";
    table.push_back(r);
  }
  MachineInfo m;
  m.cuda_devices = 1;
  m.arch = 90;
  ProblemDesc p;
  p.device = Device::kCUDA;
  p.dtype = DType::kBF16;
  p.head_dim = 128;
  EXPECT_EQ(select(p, Backend::kAuto, m, reg, table).backend, Backend::kSM90) << "bf16 K/V: the faster one";
  p.kv_dtype = DType::kE4M3;
  const Selection s = select(p, Backend::kAuto, m, reg, table);
  EXPECT_EQ(s.backend, Backend::kSM80) << "auto moves on past the backend without e4m3";
  EXPECT_EQ(s.kernel->key.kv_dtype, DType::kE4M3);
  const Verdict v = check_backend(p, Backend::kSM90, m, reg, table);
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.reason.find("does not support kv_dtype float8_e4m3fn (supports q's dtype only: not built)"),
            std::string::npos) << v.reason;
  try {
    select(p, Backend::kSM90, m, reg, table);
    ADD_FAILURE() << "sm90 accepted e4m3";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'sm80' does"), std::string::npos) << e.what();
  }
  p.kv_dtype = DType::kE5M2;  // in nobody's column
  const Verdict v5 = check_backend(p, Backend::kSM80, m, reg, table);
  EXPECT_NE(v5.reason.find("kv_dtype float8_e5m2 (supports q's dtype, float8_e4m3fn)"), std::string::npos) << v5.reason;
  EXPECT_THROW(select(p, Backend::kAuto, m, reg, table), Error);
}

// The shipped table on Hopper: sm90 reads fp8 K/V on paged prefill only (its producer
// converts gathered pages); single and ragged prefill (TMA over contiguous K/V) refuse with
// that reason, so auto takes sm80; sm90 has no decode. Every key the rows could want exists.
TEST(Fp8Dispatch, Sm90ServesFp8OnPagedPrefillOnly) {
  using namespace dispatch;
  auto fake_launch = [](const core::AttentionParams&) {};
  MachineInfo m;
  m.cuda_devices = 1;
  m.arch = 90;
  for (DType kv : {DType::kE4M3, DType::kE5M2})
    for (Op op : {Op::kSinglePrefill, Op::kRaggedPrefill, Op::kPagedPrefill, Op::kPagedDecode}) {
      ProblemDesc p;
      p.op = op;
      p.device = Device::kCUDA;
      p.dtype = DType::kBF16;
      p.kv_dtype = kv;
      p.head_dim = 128;
      p.causal = true;
      if (op == Op::kPagedPrefill || op == Op::kPagedDecode) p.page_size = 16;
      Registry reg;
      for (Backend be : {Backend::kSM80, Backend::kSM90}) reg.add(variant_for(p, be), fake_launch);
      const Backend want = op == Op::kPagedPrefill ? Backend::kSM90 : Backend::kSM80;
      EXPECT_EQ(select(p, Backend::kAuto, m, reg, capability_table()).backend, want)
          << op_name(op) << " " << dtype_name(kv);
      const Verdict v = check_backend(p, Backend::kSM90, m, reg, capability_table());
      EXPECT_EQ(v.ok, op == Op::kPagedPrefill) << op_name(op) << ": " << v.reason;
      if (op == Op::kSinglePrefill || op == Op::kRaggedPrefill)
        EXPECT_NE(v.reason.find("contiguous K/V by TMA"), std::string::npos) << v.reason;
    }
}

TEST(Fp8Dispatch, AKernelOnlyReceivesItsKVDtype) {
  dispatch::VariantKey key;
  key.backend = Backend::kSM80;
  key.head_dim = 128;  // bf16 q, bf16 K/V
  const dispatch::KernelEntry e{key, [](const core::AttentionParams&) {}};
  core::AttentionParams a;
  a.head_dim = 128;
  EXPECT_NO_THROW(dispatch::check_kernel_fits(e, a));
  a.kv_dtype = DType::kE4M3;
  try {
    dispatch::check_kernel_fits(e, a);
    ADD_FAILURE() << "a bf16-K/V kernel accepted an e4m3 cache";
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), ErrorCode::kInternal);
    EXPECT_NE(std::string(err.what()).find("for K/V of dtype float8_e4m3fn"), std::string::npos) << err.what();
  }
}

TEST(Fp8Dispatch, TheRealTable) {
  // cpu serves both formats; the GPU rows refuse with their reason until their kernels land.
  for (const auto& r : dispatch::capability_table()) {
    if (r.status == dispatch::Status::kUnsupported) continue;
    if (r.backend == Backend::kCPU) {
      EXPECT_EQ(r.limits.kv_dtypes, (std::vector<DType>{DType::kE4M3, DType::kE5M2}));
    } else if (r.limits.kv_dtypes.empty()) {
      EXPECT_STRNE(r.limits.kv_dtypes_note, "") << backend_name(r.backend) << " refuses fp8 without a reason";
    }
  }
  ProblemDesc p;
  p.dtype = DType::kF16;
  p.kv_dtype = DType::kE5M2;
  p.head_dim = 64;
  EXPECT_TRUE(supports(p, Backend::kCPU).supported) << supports(p, Backend::kCPU).reason;
  EXPECT_EQ(select_backend(p), Backend::kCPU);
}

}  // namespace
}  // namespace flashband
