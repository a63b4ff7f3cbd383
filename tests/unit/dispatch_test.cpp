// Selection and the needs_mask guard: the class of bug flashband exists to prevent.
#include <gtest/gtest.h>

#include "dispatch/select.h"

namespace flashband::dispatch {
namespace {

void fake_launch(const core::AttentionParams&) {}

ProblemDesc cuda_problem() {
  ProblemDesc p;
  p.op = Op::kSinglePrefill;
  p.device = Device::kCUDA;
  p.dtype = DType::kBF16;
  p.head_dim = 128;
  return p;
}

MachineInfo hopper() {
  MachineInfo m;
  m.cuda_devices = 1;
  m.arch = 90;
  return m;
}

// A registry holding every mask/cap combination for the given backends at D=128.
Registry full_registry(std::initializer_list<Backend> backends) {
  Registry r;
  for (Backend b : backends)
    for (bool mask : {false, true})
      for (bool cap : {false, true}) {
        VariantKey k;
        k.backend = b;
        k.dtype = DType::kBF16;
        k.head_dim = 128;
        k.needs_mask = mask;
        k.soft_cap = cap;
        r.add(k, fake_launch);
      }
  return r;
}

CapabilityRow row(Backend b, bool window_without_causal) {
  CapabilityRow r{Op::kSinglePrefill, b, 80, 90, Status::kValidated, {}, "test row"};
  r.limits.dtypes = {DType::kBF16};
  r.limits.head_dims = {128};
  r.limits.window_without_causal = window_without_causal;
  return r;
}

TEST(Dispatch, WindowWithoutCausalNeedsMaskedVariant) {
  ProblemDesc p = cuda_problem();
  p.causal = false;
  p.window_left = 31;
  EXPECT_TRUE(variant_for(p, Backend::kSM80).needs_mask);
  p.window_left = 0;
  EXPECT_TRUE(variant_for(p, Backend::kSM80).needs_mask);
  p.window_left = -1;
  EXPECT_FALSE(variant_for(p, Backend::kSM80).needs_mask);
  p.causal = true;
  EXPECT_TRUE(variant_for(p, Backend::kSM80).needs_mask);
  p.causal = false;
  p.window_right = 1;  // a right bound alone needs the mask too
  EXPECT_TRUE(variant_for(p, Backend::kSM80).needs_mask);
}

TEST(Dispatch, UnmaskedKernelNeverReceivesAWindow) {
  VariantKey unmasked;
  unmasked.backend = Backend::kSM80;
  unmasked.head_dim = 128;
  KernelEntry e{unmasked, fake_launch};
  core::AttentionParams a;
  a.dtype = DType::kBF16;
  a.head_dim = 128;
  a.causal = false;
  a.window_left = 5;
  try {
    check_kernel_fits(e, a);
    FAIL() << "an unmasked kernel accepted window_left=5 with causal=false";
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), ErrorCode::kInternal);
    EXPECT_NE(std::string(err.what()).find("unmasked"), std::string::npos) << err.what();
  }
  a.window_left = -1;
  EXPECT_NO_THROW(check_kernel_fits(e, a));
  a.window_right = 7;
  EXPECT_THROW(check_kernel_fits(e, a), Error) << "an unmasked kernel accepted window_right=7";
  a.window_right = -1;
  a.causal = true;
  EXPECT_THROW(check_kernel_fits(e, a), Error);
}

TEST(Dispatch, RegistryGetAppliesTheGuard) {
  Registry r;
  VariantKey k;
  k.backend = Backend::kSM80;
  k.head_dim = 128;
  r.add(k, fake_launch);
  core::AttentionParams a;
  a.dtype = DType::kBF16;
  a.head_dim = 128;
  a.window_left = 3;
  EXPECT_THROW(r.get(k, a), Error);
  VariantKey masked = k;
  masked.needs_mask = true;
  try {
    r.get(masked, a);
    FAIL() << "missing instantiation was not reported";
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), ErrorCode::kNotBuilt);
  }
}

// A custom mask is the needs_mask bug class again: a band-masking kernel reads no bits and
// would compute the unmasked result. The key carries the mask, so dispatch finds only a
// kernel that reads it, or none (never the band kernel), and the launch guard refuses the
// band kernel given bits.
void fake_custom_launch(const core::AttentionParams&) {}

TEST(Dispatch, CustomMaskReachesOnlyAKernelThatReadsIt) {
  ProblemDesc p = cuda_problem();
  p.custom_mask = true;
  const VariantKey want = variant_for(p, Backend::kSM80);
  EXPECT_TRUE(want.custom_mask);
  EXPECT_TRUE(want.needs_mask);
  EXPECT_FALSE(variant_for(cuda_problem(), Backend::kSM80).custom_mask);
  EXPECT_NE(want.to_string().find("/mask+custom/"), std::string::npos) << want.to_string();

  const std::vector<CapabilityRow> table = {row(Backend::kSM80, true)};
  Registry reg = full_registry({Backend::kSM80});  // band-masked kernels only
  const Verdict none = check_backend(p, Backend::kSM80, hopper(), reg, table);
  EXPECT_FALSE(none.ok) << "a band-masked kernel was chosen for a custom mask";
  EXPECT_EQ(none.code, ErrorCode::kNotBuilt) << none.reason;
  EXPECT_NE(none.reason.find("mask+custom"), std::string::npos) << none.reason;

  reg.add(want, fake_custom_launch);
  for (bool cap : {false, true}) {
    p.soft_cap = cap;
    p.window_left = cap ? 7 : -1;  // with a window too: still the kernel that reads the bits
    const Verdict v = check_backend(p, Backend::kSM80, hopper(), reg, table);
    if (cap) {  // full_registry has no custom kernel with soft cap: none, never the band one
      EXPECT_FALSE(v.ok);
      continue;
    }
    ASSERT_TRUE(v.ok) << v.reason;
    EXPECT_TRUE(v.kernel->key.custom_mask);
    EXPECT_EQ(v.kernel->launch, &fake_custom_launch);
  }

  // The launch guard: bits handed to a kernel that does not read them are an internal error.
  VariantKey band = want;
  band.custom_mask = false;
  const KernelEntry band_entry{band, fake_launch};
  core::AttentionParams a;
  a.dtype = DType::kBF16;
  a.head_dim = 128;
  EXPECT_NO_THROW(check_kernel_fits(band_entry, a));
  const uint8_t bits[1] = {0xff};
  a.custom_mask = bits;
  try {
    check_kernel_fits(band_entry, a);
    FAIL() << "a kernel without custom-mask support accepted mask bits";
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), ErrorCode::kInternal);
    EXPECT_NE(std::string(err.what()).find("custom-mask bits"), std::string::npos) << err.what();
  }
  EXPECT_NO_THROW(check_kernel_fits(KernelEntry{want, fake_custom_launch}, a));
}

TEST(Dispatch, WindowRefusedByBackendThatCannotNamesParameterAndAlternatives) {
  const std::vector<CapabilityRow> table = {row(Backend::kSM80, false), row(Backend::kSM90, true)};
  // (sm80 here is a stand-in: a backend without non-causal windows.)
  const Registry reg = full_registry({Backend::kSM80, Backend::kSM90});
  ProblemDesc p = cuda_problem();
  p.causal = false;
  p.window_left = 31;
  try {
    select(p, Backend::kSM80, hopper(), reg, table);
    FAIL() << "sm80 accepted a non-causal window it cannot honour";
  } catch (const Error& err) {
    const std::string msg = err.what();
    EXPECT_EQ(err.code(), ErrorCode::kUnsupported);
    EXPECT_NE(msg.find("backend 'sm80'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("window_left 31"), std::string::npos) << msg;
    EXPECT_NE(msg.find("causal=false"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'sm90' does"), std::string::npos) << msg;
  }
  // auto skips the backend that cannot and picks the one that can.
  EXPECT_EQ(select(p, Backend::kAuto, hopper(), reg, table).backend, Backend::kSM90);
  // With causal the same window is fine for sm80.
  p.causal = true;
  EXPECT_EQ(select(p, Backend::kSM80, hopper(), reg, table).backend, Backend::kSM80);
}

TEST(Dispatch, WindowRightRefusedByBackendWithoutTheColumn) {
  std::vector<CapabilityRow> table = {row(Backend::kSM80, true), row(Backend::kSM90, true)};
  table[0].limits.window_right = false;  // sm80 as a stand-in for a backend without it
  const Registry reg = full_registry({Backend::kSM80, Backend::kSM90});
  ProblemDesc p = cuda_problem();
  p.window_right = 9;
  try {
    select(p, Backend::kSM80, hopper(), reg, table);
    FAIL() << "sm80 accepted window_right without the capability";
  } catch (const Error& err) {
    const std::string msg = err.what();
    EXPECT_EQ(err.code(), ErrorCode::kUnsupported);
    EXPECT_NE(msg.find("backend 'sm80' does not support window_right 9"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'sm90' does"), std::string::npos) << msg;
  }
  EXPECT_EQ(select(p, Backend::kAuto, hopper(), reg, table).backend, Backend::kSM90);
  p.window_right = -1;
  EXPECT_EQ(select(p, Backend::kSM80, hopper(), reg, table).backend, Backend::kSM80);
}

TEST(Dispatch, HeadDimRefusalListsSupportedDims) {
  const std::vector<CapabilityRow> table = {row(Backend::kSM90, true)};
  const Registry reg = full_registry({Backend::kSM90});
  ProblemDesc p = cuda_problem();
  p.head_dim = 96;
  try {
    select(p, Backend::kSM90, hopper(), reg, table);
    FAIL();
  } catch (const Error& err) {
    const std::string msg = err.what();
    EXPECT_NE(msg.find("head_dim 96 (supports 128)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("no other backend"), std::string::npos) << msg;
  }
}

TEST(Dispatch, MissingInstantiationNamesBuildOption) {
  const std::vector<CapabilityRow> table = {row(Backend::kSM90, true)};
  const Registry empty;
  try {
    select(cuda_problem(), Backend::kSM90, hopper(), empty, table);
    FAIL();
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), ErrorCode::kNotBuilt);
    EXPECT_NE(std::string(err.what()).find("FLASHBAND_CUDA_ARCHS"), std::string::npos) << err.what();
  }
}

TEST(Dispatch, AutoPrefersValidatedThenFasterAndSkipsKnownBad) {
  std::vector<CapabilityRow> table = {row(Backend::kSM80, true), row(Backend::kSM90, true), row(Backend::kCUDNN, true)};
  table[1].status = Status::kDeclared;  // sm90 declared only
  table[2].limits.cudnn_versions = true;
  const Registry reg = full_registry({Backend::kSM80, Backend::kSM90, Backend::kCUDNN});
  MachineInfo m = hopper();
  m.cudnn_version = 91400;  // known-bad for non-causal windows over long KV (dispatch/cudnn_known_bad.h)
  ProblemDesc windowed = cuda_problem();
  windowed.window_left = 100;
  windowed.max_kv_len = 4096;
  EXPECT_EQ(select(windowed, Backend::kAuto, m, reg, table).backend, Backend::kSM80)
      << "validated first; cudnn is known-bad here";
  try {
    select(windowed, Backend::kCUDNN, m, reg, table);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("known-bad"), std::string::npos) << e.what();
  }
  EXPECT_EQ(select(cuda_problem(), Backend::kAuto, m, reg, table).backend, Backend::kCUDNN)
      << "the same version is fine without a window";
  m.cudnn_version = 91000;  // older than kMinCudnnVersion
  EXPECT_NE(std::string(check_backend(cuda_problem(), Backend::kCUDNN, m, reg, table).reason).find("needs cuDNN"),
            std::string::npos);
  table[0].status = Status::kDeclared;
  EXPECT_EQ(select(cuda_problem(), Backend::kAuto, m, reg, table).backend, Backend::kSM90)
      << "no validated backend left: the fastest declared one";
  m.cudnn_version = 91900;
  EXPECT_EQ(select(cuda_problem(), Backend::kAuto, m, reg, table).backend, Backend::kCUDNN)
      << "a validated backend before a faster declared one";
  table[2].status = Status::kDeclared;
  EXPECT_EQ(select(cuda_problem(), Backend::kAuto, m, reg, table).backend, Backend::kSM90)
      << "speed order among declared rows: sm90 before cudnn";
  table[1].status = Status::kKnownBad;
  EXPECT_EQ(select(cuda_problem(), Backend::kAuto, m, reg, table).backend, Backend::kCUDNN);
  EXPECT_THROW(select(cuda_problem(), Backend::kSM90, m, reg, table), Error);
}

TEST(Dispatch, AFeatureNotYetRunOnTheGpuMakesAValidatedRowDeclared) {
  std::vector<CapabilityRow> table = {row(Backend::kSM80, true), row(Backend::kSM90, true)};
  table[1].unvalidated = kFeatureWindowRight;  // sm90 (first in auto's order) never ran the band
  const Registry reg = full_registry({Backend::kSM80, Backend::kSM90});
  ProblemDesc band = cuda_problem();
  band.window_left = 31;
  band.window_right = 7;
  EXPECT_EQ(status_for(table[1], band), Status::kDeclared);
  EXPECT_EQ(status_for(table[1], cuda_problem()), Status::kValidated);
  EXPECT_EQ(select(band, Backend::kAuto, hopper(), reg, table).backend, Backend::kSM80)
      << "a backend validated for window_right before one that only serves it";
  EXPECT_EQ(select(cuda_problem(), Backend::kAuto, hopper(), reg, table).backend, Backend::kSM90);
  const Selection asked = select(band, Backend::kSM90, hopper(), reg, table);
  EXPECT_EQ(asked.backend, Backend::kSM90) << "an explicit request still runs it";
  EXPECT_EQ(asked.status, Status::kDeclared);
  ProblemDesc sinks = cuda_problem();
  sinks.sinks = true;
  EXPECT_EQ(features_of(sinks), unsigned(kFeatureSinks));
  EXPECT_EQ(feature_names(kFeatureWindowRight | kFeatureSinks), "window_right, sinks");
  ProblemDesc fp8 = cuda_problem();
  fp8.kv_dtype = DType::kE4M3;
  EXPECT_EQ(features_of(fp8), unsigned(kFeatureFp8KV));
  fp8.kv_dtype = DType::kBF16;  // q's own dtype given explicitly: no fp8
  EXPECT_EQ(features_of(fp8), 0u);
  // The shipped sm80 row on sm_90 serves fp8 K/V but has not run it on a GPU.
  fp8.kv_dtype = DType::kE5M2;
  for (const CapabilityRow& r : capability_table())
    if (r.backend == Backend::kSM80 && r.min_arch == 90 && r.op == Op::kSinglePrefill) {
      EXPECT_EQ(r.status, Status::kValidated);
      EXPECT_EQ(status_for(r, fp8), Status::kDeclared);
    }
}

// Paged rows and D = 128 paged kernels of sm80 and cuDNN (decode and prefill shapes), a
// Hopper machine with cuDNN 9.19, and a paged decode problem of page size 16.
struct PagedSm80Cudnn {
  std::vector<CapabilityRow> table;
  Registry reg;
  MachineInfo m = hopper();
  ProblemDesc decode = cuda_problem();
  PagedSm80Cudnn() {
    for (Op op : {Op::kPagedDecode, Op::kPagedPrefill})
      for (Backend b : {Backend::kSM80, Backend::kCUDNN}) {
        CapabilityRow r = row(b, true);
        r.op = op;
        table.push_back(r);
      }
    for (Backend b : {Backend::kSM80, Backend::kCUDNN})
      for (KernelShape shape : {KernelShape::kDecode, KernelShape::kPrefill}) {
        VariantKey k;
        k.backend = b;
        k.shape = shape;
        k.storage = core::KVStorage::kPaged;
        k.head_dim = 128;
        reg.add(k, fake_launch);
      }
    m.cudnn_version = 91900;
    decode.op = Op::kPagedDecode;
    decode.page_size = 16;
  }
};

TEST(Dispatch, AutoTakesSm80ForDecode) {
  // cuDNN builds a graph per new batch size (~40 ms of plan()) and, under cuda_graph, its
  // plans raise at each power of two of the longest request: decode takes sm80 either way.
  PagedSm80Cudnn f;
  const auto& table = f.table;
  const auto& reg = f.reg;
  const MachineInfo& m = f.m;
  ProblemDesc decode = f.decode;
  EXPECT_EQ(select(decode, Backend::kAuto, m, reg, table).backend, Backend::kSM80);
  decode.cuda_graph = true;
  EXPECT_EQ(select(decode, Backend::kAuto, m, reg, table).backend, Backend::kSM80);
  // Prefill keeps cuDNN before sm80 either way.
  ProblemDesc prefill = decode;
  prefill.op = Op::kPagedPrefill;
  prefill.cuda_graph = false;
  EXPECT_EQ(select(prefill, Backend::kAuto, m, reg, table).backend, Backend::kCUDNN);
  // An explicit backend is taken as asked.
  decode.cuda_graph = false;
  EXPECT_EQ(select(decode, Backend::kCUDNN, m, reg, table).backend, Backend::kCUDNN);
  // auto says why it passed over the backends before its choice: sm90 has no row here.
  std::string passed_over;
  const auto order = candidates(decode, Backend::kAuto, m, reg, table, &passed_over);
  ASSERT_EQ(order.size(), 2u);
  EXPECT_EQ(order.front().backend, Backend::kSM80);
  EXPECT_NE(passed_over.find("backend 'sm90'"), std::string::npos) << passed_over;
  EXPECT_EQ(passed_over.find("backend 'sm80'"), std::string::npos) << passed_over;
}

TEST(Dispatch, DevicePageIndicesOnlyWhereTheTableAllowsThem) {
  PagedSm80Cudnn f;
  for (CapabilityRow& r : f.table) r.limits.device_page_indices = r.backend == Backend::kSM80;
  const auto& table = f.table;
  const auto& reg = f.reg;
  const MachineInfo& m = f.m;
  ProblemDesc decode = f.decode;
  decode.device_page_indices = true;
  EXPECT_EQ(select(decode, Backend::kAuto, m, reg, table).backend, Backend::kSM80);
  ASSERT_EQ(candidates(decode, Backend::kAuto, m, reg, table).size(), 1u);
  try {
    select(decode, Backend::kCUDNN, m, reg, table);
    FAIL() << "cudnn accepted device page indices";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("does not read paged_kv_indices from a device array"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("'sm80' does"), std::string::npos) << e.what();
  }
  // The shipped table: sm80 reads them, the others copy page indices at plan time.
  for (const CapabilityRow& r : capability_table())
    if (r.op == Op::kPagedDecode || r.op == Op::kPagedPrefill)
      EXPECT_EQ(r.limits.device_page_indices, r.backend == Backend::kSM80) << backend_name(r.backend);
}

TEST(Dispatch, DeviceMismatchIsInvalidArgument) {
  ProblemDesc p = cuda_problem();
  p.device = Device::kCPU;
  const std::vector<CapabilityRow> table = {row(Backend::kSM80, true)};
  try {
    select(p, Backend::kSM80, hopper(), full_registry({Backend::kSM80}), table);
    FAIL();
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(err.what()).find("host tensors"), std::string::npos) << err.what();
  }
}

// Options::disable_split_kv: a backend that cannot promise it (cudnn: cuDNN picks its own
// engines) refuses by name, and auto takes one that can.
TEST(Dispatch, DisableSplitKvGoesToBackendsThatHonourIt) {
  CapabilityRow cudnn = row(Backend::kCUDNN, true);
  cudnn.limits.split_kv_control = false;
  const std::vector<CapabilityRow> table = {cudnn, row(Backend::kSM80, true)};
  const Registry reg = full_registry({Backend::kSM80, Backend::kCUDNN});
  ProblemDesc p = cuda_problem();
  EXPECT_EQ(select(p, Backend::kAuto, hopper(), reg, table).backend, Backend::kCUDNN);
  p.disable_split_kv = true;
  EXPECT_EQ(select(p, Backend::kAuto, hopper(), reg, table).backend, Backend::kSM80);
  try {
    select(p, Backend::kCUDNN, hopper(), reg, table);
    FAIL() << "cudnn accepted disable_split_kv";
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(err.what()).find("disable_split_kv"), std::string::npos) << err.what();
  }
  // The shipped table: only cudnn's rows refuse it.
  for (const CapabilityRow& r : capability_table())
    EXPECT_EQ(r.limits.split_kv_control, r.backend != Backend::kCUDNN) << backend_name(r.backend);
}

TEST(Dispatch, ShippedTableCpuRunsEverythingOnHost) {
  for (Op op : {Op::kSinglePrefill, Op::kRaggedPrefill, Op::kPagedPrefill, Op::kPagedDecode}) {
    ProblemDesc p;
    p.op = op;
    p.device = Device::kCPU;
    p.causal = false;
    p.window_left = 7;
    p.soft_cap = true;
    p.page_size = 5;
    auto v = check_backend(p, Backend::kCPU, MachineInfo{}, registry());
    EXPECT_TRUE(v.ok) << op_name(op) << ": " << v.reason;
    EXPECT_TRUE(v.kernel->key.needs_mask);
  }
}

}  // namespace
}  // namespace flashband::dispatch
