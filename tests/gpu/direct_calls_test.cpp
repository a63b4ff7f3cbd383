// GPU paths that run_case does not reach: single prefill without a workspace (the sm80
// planner then launches from params alone), and the public merge_state / merge_states on
// CUDA tensors (the kernel split-KV uses), each against a double-precision reference.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <tuple>
#include <vector>

#include "case.h"
#include "case_steps.h"
#include "compare.h"
#include "device_buffer.h"
#include "dtype_values.h"
#include "flashband/attention.h"
#include "gpu_backends.h"

namespace flashband::testing {
namespace {

DeviceBuffer upload(const HostArray& a) {
  DeviceBuffer b(Device::kCUDA, a.bytes());
  b.upload(a.data(), a.bytes());
  return b;
}

HostArray host_array(DType dt, const std::vector<double>& x) {
  HostArray a(dt, static_cast<int64_t>(x.size()));
  for (std::size_t i = 0; i < x.size(); ++i) a.set(static_cast<int64_t>(i), x[i]);
  return a;
}

std::vector<double> download(const DeviceBuffer& b, DType dt, int64_t n) {
  HostArray a(dt, n);
  b.download(a.data(), a.bytes());
  std::vector<double> out(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[static_cast<std::size_t>(i)] = a.get(i);
  return out;
}

// --- single prefill without a workspace -------------------------------------------------

class GpuNoWorkspace : public ::testing::TestWithParam<std::tuple<Backend, Case>> {};

TEST_P(GpuNoWorkspace, SinglePrefillMatchesOracle) {
  FB_SKIP_WITHOUT_CUDA();
  const Case c = on_backend(std::get<1>(GetParam()), std::get<0>(GetParam()));
  FB_SKIP_UNSUPPORTED(c, c.backend == Backend::kSM80);
  const std::vector<RequestData> data = make_case_data(c);
  const RequestData& r = data[0];
  const int Hq = c.num_qo_heads, Hk = c.num_kv_heads, D = c.head_dim;
  const DeviceBuffer q = upload(host_array(c.dtype, r.q)), k = upload(host_array(c.dtype, r.k)),
                     v = upload(host_array(c.dtype, r.v));
  HostArray out_h(c.dtype, int64_t{r.qo_len} * Hq * D), lse_h(DType::kF32, int64_t{r.qo_len} * Hq);
  out_h.fill_nan();
  lse_h.fill_nan();
  const DeviceBuffer out = upload(out_h), lse = upload(lse_h);
  const Device dev = Device::kCUDA;
  const TensorView qv = TensorView::contiguous(q.data(), c.dtype, {r.qo_len, Hq, D}, dev);
  const TensorView kv = TensorView::contiguous(k.data(), c.dtype, {r.kv_len, Hk, D}, dev);
  const TensorView vv = TensorView::contiguous(v.data(), c.dtype, {r.kv_len, Hk, D}, dev);
  const TensorView ov = TensorView::contiguous(out.data(), c.dtype, {r.qo_len, Hq, D}, dev);
  const TensorView lv = TensorView::contiguous(lse.data(), DType::kF32, {r.qo_len, Hq}, dev);
  if (c.backend == Backend::kCUDNN) {
    // cuDNN keeps its index arrays in the workspace: without one it must refuse, by name.
    try {
      single_prefill(qv, kv, vv, ov, &lv, case_options(c));
      FAIL() << "cudnn ran without a workspace";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("workspace"), std::string::npos) << e.what();
    }
    return;
  }
  const RunInfo info = single_prefill(qv, kv, vv, ov, &lv, case_options(c));
  synchronize(dev);
  EXPECT_EQ(info.backend, c.backend);

  const Reference ref = make_reference(c, data, {c.window_left, c.window_right});
  const Comparison cmp =
      compare_attention(tolerance_for(c.dtype), Hq, D, download(out, c.dtype, out_h.numel()), ref.out,
                        download(lse, DType::kF32, lse_h.numel()), ref.lse, ref.empty);
  EXPECT_TRUE(cmp.passed) << cmp.failure;
}

std::vector<Case> no_workspace_cases() {
  std::vector<Case> v;
  Case c;
  c.entry = EntryPoint::kSingle;
  c.return_lse = true;
  c.qo_lens = {200};
  c.kv_lens = {300};
  c.num_qo_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 128;
  c.dtype = DType::kBF16;
  c.causal = true;
  v.push_back(c);
  c.qo_lens = {130};
  c.kv_lens = {70};  // qo > kv: leading rows see nothing
  c.head_dim = 64;
  c.dtype = DType::kF16;
  v.push_back(c);
  c.qo_lens = {65};
  c.kv_lens = {257};
  c.causal = false;
  c.window_left = 31;
  c.head_dim = 256;
  v.push_back(c);
  // sm90: the 192-row masked D = 64 tile (long request), its tiles derived in the kernel.
  c.qo_lens = {6145};
  c.kv_lens = {6200};
  c.causal = true;
  c.window_left = 1000;
  c.head_dim = 64;
  c.dtype = DType::kBF16;
  v.push_back(c);
  // sm90: masked D = 128 on the 176-key tile (from 8192 rows), its tiles derived in the
  // kernel: the causal-only kernel, and the runtime-mask one under a window without causal.
  c.qo_lens = {8200};
  c.kv_lens = {8300};
  c.window_left = -1;
  c.head_dim = 128;
  v.push_back(c);
  c.causal = false;
  c.window_left = 700;
  c.dtype = DType::kF16;
  v.push_back(c);
  return v;
}

INSTANTIATE_TEST_SUITE_P(Single, GpuNoWorkspace,
                         ::testing::Combine(::testing::ValuesIn(gpu_test_backends()),
                                            ::testing::ValuesIn(no_workspace_cases())),
                         [](const auto& info) {
                           return param_name(std::get<0>(info.param), std::get<1>(info.param));
                         });

// --- merge_state / merge_states ---------------------------------------------------------

// Reference merge in double: o = sum_k 2^(s_k - m) o_k / sum_k 2^(s_k - m).
void reference_merge(const std::vector<double>& v, const std::vector<double>& s, int n, int S, int H, int D,
                     std::vector<double>& v_out, std::vector<double>& s_out) {
  v_out.assign(static_cast<std::size_t>(n) * H * D, 0.0);
  s_out.assign(static_cast<std::size_t>(n) * H, -std::numeric_limits<double>::infinity());
  for (int i = 0; i < n; ++i)
    for (int h = 0; h < H; ++h) {
      double m = -std::numeric_limits<double>::infinity();
      for (int k = 0; k < S; ++k) m = std::max(m, s[(static_cast<std::size_t>(i) * S + k) * H + h]);
      if (m == -std::numeric_limits<double>::infinity()) continue;
      double sum = 0.0;
      for (int k = 0; k < S; ++k) sum += std::exp2(s[(static_cast<std::size_t>(i) * S + k) * H + h] - m);
      for (int k = 0; k < S; ++k) {
        const double sk = s[(static_cast<std::size_t>(i) * S + k) * H + h];
        if (sk == -std::numeric_limits<double>::infinity()) continue;  // its values may be NaN
        const double w = std::exp2(sk - m) / sum;
        for (int d = 0; d < D; ++d)
          v_out[(static_cast<std::size_t>(i) * H + h) * D + d] +=
              w * v[((static_cast<std::size_t>(i) * S + k) * H + h) * D + d];
      }
      s_out[static_cast<std::size_t>(i) * H + h] = m + std::log2(sum);
    }
}

struct MergeCase {
  DType dtype;
  int n, S, H, D;
  // Empty states hold NaN instead of zeros: the merge loads a state before it knows the
  // state's weight and must never let an unused value through.
  bool nan_behind_empty = false;
};

class GpuMerge : public ::testing::TestWithParam<MergeCase> {};

// Random states with some empty ones (-inf), including rows where every state is empty.
void make_states(const MergeCase& mc, std::vector<double>& v, std::vector<double>& s) {
  std::mt19937 rng(7 + mc.n * 31 + mc.S);
  std::normal_distribution<double> nd;
  v.resize(static_cast<std::size_t>(mc.n) * mc.S * mc.H * mc.D);
  s.resize(static_cast<std::size_t>(mc.n) * mc.S * mc.H);
  for (double& x : v) x = round_to_dtype(mc.dtype, nd(rng));
  for (std::size_t j = 0; j < s.size(); ++j) {
    const std::size_t i = j / (static_cast<std::size_t>(mc.S) * mc.H);
    const bool empty = i % 5 == 3 || (j * 7) % 11 == 0;
    s[j] = empty ? -std::numeric_limits<double>::infinity() : static_cast<double>(static_cast<float>(4.0 * nd(rng)));
  }
  // An empty state's values are exact zeros, as the attention kernels write them, or NaN.
  const double behind_empty = mc.nan_behind_empty ? std::numeric_limits<double>::quiet_NaN() : 0.0;
  for (std::size_t j = 0; j < s.size(); ++j)
    if (std::isinf(s[j]))
      for (int d = 0; d < mc.D; ++d) v[j * mc.D + d] = behind_empty;
}

void check_merged(const MergeCase& mc, const std::vector<double>& out, const std::vector<double>& lse,
                  const std::vector<double>& ref, const std::vector<double>& ref_lse) {
  const Tolerance tol = tolerance_for(mc.dtype);
  for (std::size_t j = 0; j < ref_lse.size(); ++j) {
    if (std::isinf(ref_lse[j])) {
      ASSERT_TRUE(std::isinf(lse[j]) && lse[j] < 0) << "row " << j << " lse " << lse[j];
      for (int d = 0; d < mc.D; ++d) ASSERT_EQ(out[j * mc.D + d], 0.0) << "row " << j;
    } else {
      ASSERT_NEAR(lse[j], ref_lse[j], 1e-4 * (1 + std::fabs(ref_lse[j]))) << "row " << j;
    }
  }
  for (std::size_t i = 0; i < ref.size(); ++i)
    ASSERT_LE(std::fabs(out[i] - ref[i]), tol.atol + tol.rtol * std::fabs(ref[i])) << "element " << i;
}

TEST_P(GpuMerge, MergeStatesMatchesReference) {
  FB_SKIP_WITHOUT_CUDA();
  const MergeCase mc = GetParam();
  std::vector<double> v, s, ref, ref_lse;
  make_states(mc, v, s);
  reference_merge(v, s, mc.n, mc.S, mc.H, mc.D, ref, ref_lse);
  const Device dev = Device::kCUDA;
  const DeviceBuffer dv = upload(host_array(mc.dtype, v)), ds = upload(host_array(DType::kF32, s));
  HostArray out_h(mc.dtype, int64_t{mc.n} * mc.H * mc.D), lse_h(DType::kF32, int64_t{mc.n} * mc.H);
  out_h.fill_nan();
  lse_h.fill_nan();
  const DeviceBuffer dout = upload(out_h), dlse = upload(lse_h);
  merge_states(TensorView::contiguous(dv.data(), mc.dtype, {mc.n, mc.S, mc.H, mc.D}, dev),
               TensorView::contiguous(ds.data(), DType::kF32, {mc.n, mc.S, mc.H}, dev),
               TensorView::contiguous(dout.data(), mc.dtype, {mc.n, mc.H, mc.D}, dev),
               TensorView::contiguous(dlse.data(), DType::kF32, {mc.n, mc.H}, dev));
  synchronize(dev);
  check_merged(mc, download(dout, mc.dtype, out_h.numel()), download(dlse, DType::kF32, lse_h.numel()), ref,
               ref_lse);
}

TEST_P(GpuMerge, MergeStateMatchesReference) {
  FB_SKIP_WITHOUT_CUDA();
  MergeCase mc = GetParam();
  mc.S = 2;
  std::vector<double> v, s, ref, ref_lse;
  make_states(mc, v, s);
  reference_merge(v, s, mc.n, 2, mc.H, mc.D, ref, ref_lse);
  // Split [n, 2, H, D] into two [n, H, D] tensors.
  const std::size_t row = static_cast<std::size_t>(mc.H) * mc.D;
  std::vector<double> va, vb, sa, sb;
  for (int i = 0; i < mc.n; ++i) {
    va.insert(va.end(), v.begin() + (2 * i) * row, v.begin() + (2 * i + 1) * row);
    vb.insert(vb.end(), v.begin() + (2 * i + 1) * row, v.begin() + (2 * i + 2) * row);
    sa.insert(sa.end(), s.begin() + (2 * i) * mc.H, s.begin() + (2 * i + 1) * mc.H);
    sb.insert(sb.end(), s.begin() + (2 * i + 1) * mc.H, s.begin() + (2 * i + 2) * mc.H);
  }
  const Device dev = Device::kCUDA;
  const DeviceBuffer dva = upload(host_array(mc.dtype, va)), dvb = upload(host_array(mc.dtype, vb)),
                     dsa = upload(host_array(DType::kF32, sa)), dsb = upload(host_array(DType::kF32, sb));
  HostArray out_h(mc.dtype, int64_t{mc.n} * mc.H * mc.D), lse_h(DType::kF32, int64_t{mc.n} * mc.H);
  out_h.fill_nan();
  lse_h.fill_nan();
  const DeviceBuffer dout = upload(out_h), dlse = upload(lse_h);
  auto t3 = [&](const DeviceBuffer& b, DType dt) {
    return TensorView::contiguous(b.data(), dt, {mc.n, mc.H, mc.D}, dev);
  };
  auto t2 = [&](const DeviceBuffer& b) { return TensorView::contiguous(b.data(), DType::kF32, {mc.n, mc.H}, dev); };
  merge_state(t3(dva, mc.dtype), t2(dsa), t3(dvb, mc.dtype), t2(dsb), t3(dout, mc.dtype), t2(dlse));
  synchronize(dev);
  check_merged(mc, download(dout, mc.dtype, out_h.numel()), download(dlse, DType::kF32, lse_h.numel()), ref,
               ref_lse);
}

INSTANTIATE_TEST_SUITE_P(Merge, GpuMerge,
                         ::testing::Values(MergeCase{DType::kF32, 37, 5, 3, 128}, MergeCase{DType::kF16, 20, 3, 4, 64},
                                           MergeCase{DType::kBF16, 11, 7, 2, 256},
                                           MergeCase{DType::kF32, 9, 2, 3, 6},  // D % 4 != 0: scalar path
                                           MergeCase{DType::kF32, 37, 5, 3, 128, true},
                                           MergeCase{DType::kBF16, 13, 9, 2, 64, true},
                                           MergeCase{DType::kBF16, 11, 7, 2, 256, true},  // 64 lanes a row
                                           MergeCase{DType::kF32, 9, 3, 3, 6, true},      // scalar path
                                           MergeCase{DType::kF16, 16, 40, 1, 96, true},
                                           MergeCase{DType::kF16, 16, 40, 1, 96}),
                         [](const auto& info) {
                           const MergeCase& m = info.param;
                           return std::string(dtype_name(m.dtype)) + "_n" + std::to_string(m.n) + "_s" +
                                  std::to_string(m.S) + "_h" + std::to_string(m.H) + "_d" + std::to_string(m.D) +
                                  (m.nan_behind_empty ? "_nan" : "");
                         });

}  // namespace
}  // namespace flashband::testing
