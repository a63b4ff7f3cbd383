// sm80's fp8 K/V kernels (issue 65: e4m3 and e5m2 K/V with fp16 or bf16 q) against the fp64
// oracle. The public API does not take an fp8 cache yet (the host layers come in their own
// change), so this test drives the kernels as plan()/run() would: a detail::Plan filled by
// hand, the sm80 planner (work list, split-KV) into a device workspace, the registry's
// kernel for the fp8 key, and its launch.
//
// K and V are fp8 bytes; the oracle dequantizes them exactly (every fp8 value is a double)
// and applies k_scale and v_scale, so the tolerances are q's dtype's (SPEC.md). Values span
// each format: the bulk near the top of the range with the largest finite values (448,
// 57344) and subnormals sprinkled in, or a "tiny" mix where most values are subnormal.
// Unused page slots and spare pages hold NaN bytes.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "backends/sm80/workspace.h"
#include "compare.h"
#include "device_buffer.h"
#include "dispatch/registry.h"
#include "dtype_values.h"
#include "gpu_backends.h"
#include "kv_layout.h"
#include "oracle.h"
#include "parallel_tasks.h"
#include "plan/plan.h"
#include "random.h"

namespace flashband::testing {
namespace {

// --- the two fp8 formats, decoded from their definitions ------------------------------

// e4m3fn: 1 sign, 4 exponent (bias 7), 3 mantissa bits, no infinities, NaN = S.1111.111.
// e5m2: 1 sign, 5 exponent (bias 15), 2 mantissa bits, IEEE-like infinities and NaNs.
double fp8_value(DType fmt, uint8_t b) {
  const double sign = (b & 0x80) ? -1.0 : 1.0;
  const bool e4m3 = fmt == DType::kE4M3;
  const int mant_bits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
  const int e = (b & 0x7F) >> mant_bits, m = b & ((1 << mant_bits) - 1);
  const double frac = static_cast<double>(m) / (1 << mant_bits);
  if (e4m3 && e == 15 && m == 7) return std::numeric_limits<double>::quiet_NaN();
  if (!e4m3 && e == 31) return m ? std::numeric_limits<double>::quiet_NaN() : sign * INFINITY;
  if (e == 0) return sign * std::ldexp(frac, 1 - bias);
  return sign * std::ldexp(1.0 + frac, e - bias);
}
constexpr uint8_t kFp8NaN = 0x7F;  // NaN in both formats
double fp8_max(DType fmt) { return fmt == DType::kE4M3 ? 448.0 : 57344.0; }
double fp8_min_normal(DType fmt) { return fmt == DType::kE4M3 ? std::ldexp(1.0, -6) : std::ldexp(1.0, -14); }

// The finite byte nearest to x (ties: the smaller magnitude side's first byte).
uint8_t fp8_nearest(DType fmt, double x) {
  struct Table {
    std::vector<std::pair<double, uint8_t>> sorted;  // every finite value once (+0 for zero)
    explicit Table(DType f) {
      for (int b = 0; b < 256; ++b) {
        const double v = fp8_value(f, static_cast<uint8_t>(b));
        if (std::isfinite(v) && b != 0x80) sorted.push_back({v, static_cast<uint8_t>(b)});
      }
      std::sort(sorted.begin(), sorted.end());
    }
  };
  static const Table e4m3(DType::kE4M3), e5m2(DType::kE5M2);
  const auto& t = (fmt == DType::kE4M3 ? e4m3 : e5m2).sorted;
  auto it = std::lower_bound(t.begin(), t.end(), std::make_pair(x, uint8_t{0}));
  if (it == t.end()) return t.back().second;
  if (it == t.begin()) return it->second;
  const auto below = std::prev(it);
  return x - below->first <= it->first - x ? below->second : it->second;
}

// The largest finite value <= limit.
double fp8_floor(DType fmt, double limit) {
  const uint8_t b = fp8_nearest(fmt, limit);
  const double v = fp8_value(fmt, b);
  return v <= limit ? v : fp8_value(fmt, static_cast<uint8_t>(b - 1));  // positive bytes are ordered
}

TEST(Fp8Codec, DecodesTheFormatsLandmarks) {
  EXPECT_EQ(fp8_value(DType::kE4M3, 0x7E), 448.0);
  EXPECT_EQ(fp8_value(DType::kE4M3, 0x01), std::ldexp(1.0, -9));
  EXPECT_EQ(fp8_value(DType::kE4M3, 0x08), std::ldexp(1.0, -6));
  EXPECT_TRUE(std::isnan(fp8_value(DType::kE4M3, kFp8NaN)));
  EXPECT_EQ(fp8_value(DType::kE5M2, 0x7B), 57344.0);
  EXPECT_EQ(fp8_value(DType::kE5M2, 0x01), std::ldexp(1.0, -16));
  EXPECT_EQ(fp8_value(DType::kE5M2, 0xBC), -1.0);
  EXPECT_TRUE(std::isnan(fp8_value(DType::kE5M2, kFp8NaN)));
  EXPECT_EQ(fp8_nearest(DType::kE4M3, 1000.0), 0x7E);
  EXPECT_EQ(fp8_nearest(DType::kE5M2, -0.24), 0xB4);  // -0.25
  EXPECT_EQ(fp8_nearest(DType::kE4M3, 0.0), 0x00);
  EXPECT_EQ(fp8_floor(DType::kE5M2, 20967.0), 20480.0);
  EXPECT_EQ(fp8_floor(DType::kE4M3, 448.0), 448.0);
}

// --- cases ---------------------------------------------------------------------------

enum class Entry { kSingle, kRagged, kPaged, kDecode };
const char* entry_name(Entry e) {
  switch (e) {
    case Entry::kSingle: return "single";
    case Entry::kRagged: return "ragged";
    case Entry::kPaged: return "paged";
    case Entry::kDecode: return "decode";
  }
  return "?";
}

// Wide: N(0, (max/4)^2) with 2 % at +-max and 2 % subnormal. Tiny: N(0, min_normal^2), mostly
// subnormal.
enum class Mix { kWide, kTiny };

struct Fp8Case {
  DType q_dtype = DType::kF16;
  DType kv_dtype = DType::kE4M3;
  int head_dim = 128;
  Entry entry = Entry::kPaged;
  KVLayout layout = KVLayout::kNHD;
  bool causal = false;
  int window_left = -1;
  float soft_cap = 0.0f;
  int page_size = 16;
  float k_scale = 1.0f, v_scale = 1.0f;
  bool scales_on_device = false;  // the floats then hold wrong values the kernel must not use
  Mix k_mix = Mix::kWide, v_mix = Mix::kWide;
  uint64_t seed = 1;

  std::string name() const {
    std::ostringstream s;
    s << dtype_name(q_dtype) << "_" << dtype_name(kv_dtype) << "_d" << head_dim << "_" << entry_name(entry) << "_"
      << kv_layout_name(layout) << (causal ? "_causal" : "") << "_w" << window_left << (soft_cap > 0 ? "_cap" : "")
      << "_ps" << page_size << "_k" << k_scale << "_v" << v_scale << (scales_on_device ? "_dev" : "")
      << (k_mix == Mix::kTiny ? "_ktiny" : "") << (v_mix == Mix::kTiny ? "_vtiny" : "");
    return s.str();
  }
};

struct Request {
  int qo_len = 0, kv_len = 0;
  std::vector<double> q;              // [qo_len, Hq, D], rounded to q's dtype
  std::vector<uint8_t> k8, v8;        // [kv_len, Hk, D] fp8 bytes
};

constexpr int kHq = 4, kHk = 2;             // GQA group 2 (decode: 8 / 2)
int num_qo_heads(const Fp8Case& c) { return c.entry == Entry::kDecode ? 8 : kHq; }

// `amplitude`: the wide mix's largest magnitude (the format's maximum, or less for V where
// v_scale times it would overflow fp16 output).
std::vector<uint8_t> fp8_values(const Fp8Case& c, Mix mix, double amplitude, std::size_t n, Rng& rng) {
  std::vector<uint8_t> out(n);
  const DType f = c.kv_dtype;
  for (auto& b : out) {
    const double u = rng.uniform();
    if (mix == Mix::kWide && u < 0.02) {
      b = fp8_nearest(f, rng.uniform() < 0.5 ? amplitude : -amplitude);
    } else if (mix == Mix::kWide && u < 0.04) {
      b = fp8_nearest(f, (rng.uniform() < 0.5 ? 1 : -1) * fp8_min_normal(f) * (0.1 + 0.8 * rng.uniform()));
    } else {
      const double sd = mix == Mix::kWide ? amplitude / 4 : fp8_min_normal(f);
      b = fp8_nearest(f, std::clamp(rng.normal() * sd, -amplitude, amplitude));
    }
  }
  return out;
}

// O is a weighted mean of v * v_scale: with fp16 output, keep it below 60000.
double v_amplitude(const Fp8Case& c) {
  const double m = fp8_max(c.kv_dtype);
  return c.q_dtype == DType::kF16 ? fp8_floor(c.kv_dtype, std::min(m, 60000.0 / c.v_scale)) : m;
}

std::vector<Request> make_requests(const Fp8Case& c) {
  Rng rng(c.seed);
  std::vector<std::pair<int, int>> lens;  // (qo, kv)
  switch (c.entry) {
    case Entry::kSingle: lens = {{rng.uniform_int(1, 40), rng.uniform_int(300, 600)}}; break;
    case Entry::kDecode:
      lens = {{1, rng.uniform_int(900, 1100)}, {1, rng.uniform_int(130, 420)}, {1, rng.uniform_int(130, 420)}};
      break;
    default:  // one long request with few queries (split-KV), two short ones
      lens = {{rng.uniform_int(1, 4), rng.uniform_int(900, 1100)},
              {rng.uniform_int(1, 20), rng.uniform_int(130, 420)},
              {rng.uniform_int(1, 20), rng.uniform_int(130, 420)}};
  }
  const int Hq = num_qo_heads(c), D = c.head_dim;
  std::vector<Request> rs;
  for (auto [qo, kv] : lens) {
    Request r;
    r.qo_len = qo;
    r.kv_len = kv;
    r.q.resize(static_cast<std::size_t>(qo) * Hq * D);
    for (double& x : r.q) x = round_to_dtype(c.q_dtype, rng.normal());
    const std::size_t kv_elems = static_cast<std::size_t>(kv) * kHk * D;
    r.k8 = fp8_values(c, c.k_mix, fp8_max(c.kv_dtype), kv_elems, rng);
    r.v8 = fp8_values(c, c.v_mix, v_amplitude(c), kv_elems, rng);
    rs.push_back(std::move(r));
  }
  return rs;
}

// sm_scale giving logits of about unit spread whatever the mix and k_scale.
double sm_scale_for(const Fp8Case& c, const std::vector<Request>& rs) {
  double sum = 0.0;
  int64_t n = 0;
  for (const Request& r : rs)
    for (uint8_t b : r.k8) {
      const double x = fp8_value(c.kv_dtype, b) * c.k_scale;
      sum += x * x, ++n;
    }
  return 1.5 / (std::sqrt(sum / static_cast<double>(n)) * std::sqrt(static_cast<double>(c.head_dim)));
}

// --- the oracle ----------------------------------------------------------------------

struct Expected {
  std::vector<double> out, lse;
  std::vector<char> empty;
};

Expected oracle(const Fp8Case& c, const std::vector<Request>& rs, double sm_scale, double k_scale, double v_scale,
                int window_left) {
  Expected e;
  const int Hq = num_qo_heads(c);
  for (const Request& r : rs) {
    OracleProblem p;
    p.qo_len = r.qo_len;
    p.kv_len = r.kv_len;
    p.num_qo_heads = Hq;
    p.num_kv_heads = kHk;
    p.head_dim = c.head_dim;
    p.causal = c.causal;
    p.window_left = window_left;
    p.logits_soft_cap = c.soft_cap;
    p.sm_scale = sm_scale;
    std::vector<double> k(r.k8.size()), v(r.v8.size());
    for (std::size_t i = 0; i < k.size(); ++i) {
      k[i] = fp8_value(c.kv_dtype, r.k8[i]) * k_scale;
      v[i] = fp8_value(c.kv_dtype, r.v8[i]) * v_scale;
    }
    OracleResult res = oracle_empty_result(p);
    parallel_tasks(Hq, [&](int h) { oracle_attention_head(p, r.q, k, v, h, &res); });
    e.out.insert(e.out.end(), res.out.begin(), res.out.end());
    e.lse.insert(e.lse.end(), res.lse.begin(), res.lse.end());
    e.empty.insert(e.empty.end(), res.empty.begin(), res.empty.end());
  }
  return e;
}

// --- running the kernels ------------------------------------------------------------

DeviceBuffer upload_bytes(const void* data, std::size_t bytes) {
  DeviceBuffer b(Device::kCUDA, std::max<std::size_t>(bytes, 16));
  if (bytes) b.upload(data, bytes);
  return b;
}

struct KernelOutput {
  std::vector<double> out, lse;
  int num_kv_splits = 1;
};

// Runs the case with the given kernel-side scales (floats, or device values with the floats
// set to `wrong` values).
KernelOutput run_sm80(const Fp8Case& c, const std::vector<Request>& rs, double sm_scale, float k_scale,
                      float v_scale) {
  const int Hq = num_qo_heads(c), Hk = kHk, D = c.head_dim, B = static_cast<int>(rs.size());
  const bool paged = c.entry == Entry::kPaged || c.entry == Entry::kDecode;
  const bool nhd = c.layout == KVLayout::kNHD;

  detail::Plan plan;
  plan.batch = B;
  plan.problem.op = c.entry == Entry::kSingle   ? Op::kSinglePrefill
                    : c.entry == Entry::kRagged ? Op::kRaggedPrefill
                    : c.entry == Entry::kPaged  ? Op::kPagedPrefill
                                                : Op::kPagedDecode;
  core::AttentionParams& a = plan.params;
  a.op = plan.problem.op;
  a.dtype = c.q_dtype;
  a.kv_dtype = c.kv_dtype;
  a.batch = B;
  a.num_qo_heads = Hq;
  a.num_kv_heads = Hk;
  a.head_dim = D;
  a.causal = c.causal;
  a.window_left = c.window_left;
  a.logits_soft_cap = c.soft_cap;
  a.sm_scale = static_cast<float>(sm_scale);

  plan.qo_indptr = {0};
  std::vector<int> kv_lens;
  for (const Request& r : rs) {
    plan.qo_indptr.push_back(plan.qo_indptr.back() + r.qo_len);
    kv_lens.push_back(r.kv_len);
    plan.kv_lens.push_back(r.kv_len);
    a.max_qo_len = std::max(a.max_qo_len, r.qo_len);
    a.max_kv_len = std::max(a.max_kv_len, r.kv_len);
  }
  a.total_qo_tokens = plan.qo_indptr.back();

  // K and V bytes in the entry's layout; NaN wherever no request's key lives.
  std::vector<uint8_t> k_bytes, v_bytes;
  auto put = [&](int64_t dst, const Request& r, int t, int h) {
    const std::size_t src = (static_cast<std::size_t>(t) * Hk + h) * D;
    std::copy_n(r.k8.begin() + src, D, k_bytes.begin() + dst);
    std::copy_n(r.v8.begin() + src, D, v_bytes.begin() + dst);
  };
  if (paged) {
    const PageTable pt = assign_pages(kv_lens, c.page_size, c.seed + 7);
    const int ps = c.page_size;
    a.kv_storage = core::KVStorage::kPaged;
    a.page_size = ps;
    a.k_num_pages = a.v_num_pages = pt.num_pages;
    a.k_stride_page = a.v_stride_page = int64_t{ps} * Hk * D;
    a.k_stride_n = a.v_stride_n = nhd ? int64_t{Hk} * D : D;
    a.k_stride_h = a.v_stride_h = nhd ? D : int64_t{ps} * D;
    k_bytes.assign(static_cast<std::size_t>(pt.num_pages) * ps * Hk * D, kFp8NaN);
    v_bytes = k_bytes;
    for (int b = 0; b < B; ++b)
      for (int t = 0; t < rs[b].kv_len; ++t) {
        const int64_t page = pt.indices[pt.indptr[b] + t / ps], slot = t % ps;
        for (int h = 0; h < Hk; ++h) put(page * a.k_stride_page + slot * a.k_stride_n + h * a.k_stride_h, rs[b], t, h);
      }
    plan.kv_indptr = pt.indptr;
    plan.page_indices = pt.indices;
    plan.last_page_len = pt.last_page_len;
    plan.page_size = ps;
    plan.num_pages = pt.num_pages;
  } else {
    plan.kv_indptr = {0};
    for (int len : kv_lens) plan.kv_indptr.push_back(plan.kv_indptr.back() + len);
    const int64_t nnz = plan.kv_indptr.back();
    a.kv_storage = core::KVStorage::kContiguous;
    a.k_stride_n = a.v_stride_n = nhd ? int64_t{Hk} * D : D;
    a.k_stride_h = a.v_stride_h = nhd ? D : nnz * D;
    k_bytes.assign(static_cast<std::size_t>(nnz) * Hk * D, kFp8NaN);
    v_bytes = k_bytes;
    for (int b = 0; b < B; ++b)
      for (int t = 0; t < rs[b].kv_len; ++t)
        for (int h = 0; h < Hk; ++h)
          put((plan.kv_indptr[b] + t) * a.k_stride_n + h * a.k_stride_h, rs[b], t, h);
  }
  a.q_stride_n = a.o_stride_n = int64_t{Hq} * D;
  a.q_stride_h = a.o_stride_h = D;
  a.lse_stride_n = Hq;
  a.lse_stride_h = 1;

  dispatch::VariantKey key;
  key.backend = Backend::kSM80;
  key.shape = c.entry == Entry::kDecode ? dispatch::KernelShape::kDecode : dispatch::KernelShape::kPrefill;
  key.storage = a.kv_storage;
  key.dtype = c.q_dtype;
  key.kv_dtype = c.kv_dtype;
  key.head_dim = D;
  key.needs_mask = c.causal || c.window_left >= 0;
  key.soft_cap = c.soft_cap > 0;
  plan.kernel = dispatch::registry().get(key, a);

  // Single prefill runs from params alone (no workspace), the batches from a planned one.
  const int64_t pages = static_cast<int64_t>(plan.page_indices.size());
  const std::size_t ws_bytes = sm80::sm80_workspace_bytes(B, a.total_qo_tokens, Hq, D) +
                               sm80::sm80_page_index_bytes(pages);
  DeviceBuffer ws(Device::kCUDA, ws_bytes);
  Workspace workspace;
  if (c.entry != Entry::kSingle) workspace = Workspace{ws.data(), ws_bytes};
  detail::plan_sm80(plan, workspace);

  HostArray q_h(c.q_dtype, a.total_qo_tokens * Hq * D), out_h(c.q_dtype, a.total_qo_tokens * Hq * D),
      lse_h(DType::kF32, a.total_qo_tokens * Hq);
  int64_t qi = 0;
  for (const Request& r : rs)
    for (double x : r.q) q_h.set(qi++, x);
  out_h.fill_nan();
  lse_h.fill_nan();
  const DeviceBuffer q = upload_bytes(q_h.data(), q_h.bytes()), out = upload_bytes(out_h.data(), out_h.bytes()),
                     lse = upload_bytes(lse_h.data(), lse_h.bytes()), k = upload_bytes(k_bytes.data(), k_bytes.size()),
                     v = upload_bytes(v_bytes.data(), v_bytes.size());
  const float scales[2] = {k_scale, v_scale};
  const DeviceBuffer scale_buf = upload_bytes(scales, sizeof scales);
  if (c.scales_on_device) {
    a.k_scale_ptr = static_cast<const float*>(scale_buf.data());
    a.v_scale_ptr = a.k_scale_ptr + 1;
    // Wrong on purpose: a kernel that read the floats instead of the pointers fails.
    a.k_scale = 2.0f * k_scale + 1.0f;
    a.v_scale = 0.5f * v_scale + 1.0f;
  } else {
    a.k_scale = k_scale;
    a.v_scale = v_scale;
  }
  a.q = q.data();
  a.o = out.data();
  a.lse = static_cast<float*>(lse.data());
  a.k = k.data();
  a.v = v.data();
  plan.kernel.launch(a);
  const cudaError_t err = cudaDeviceSynchronize();
  EXPECT_EQ(err, cudaSuccess) << cudaGetErrorString(err);

  out.download(out_h.data(), out_h.bytes());
  lse.download(lse_h.data(), lse_h.bytes());
  KernelOutput res;
  res.num_kv_splits = a.num_kv_splits;
  res.out.resize(static_cast<std::size_t>(out_h.numel()));
  res.lse.resize(static_cast<std::size_t>(lse_h.numel()));
  for (int64_t i = 0; i < out_h.numel(); ++i) res.out[static_cast<std::size_t>(i)] = out_h.get(i);
  for (int64_t i = 0; i < lse_h.numel(); ++i) res.lse[static_cast<std::size_t>(i)] = lse_h.get(i);
  return res;
}

Comparison check(const Fp8Case& c, const KernelOutput& got, const Expected& want) {
  return compare_attention(tolerance_for(c.q_dtype), num_qo_heads(c), c.head_dim, got.out, want.out, got.lse,
                           want.lse, want.empty);
}

// --- the grid ------------------------------------------------------------------------

// Every (q dtype, fp8 format, head dim, entry) runs causal x window {-1, 0, 31, 127} x soft
// cap; page sizes {1, 5, 16, 128}, scales {1.0, 0.37, 3.1}, NHD/HND, device scales and the
// value mixes cycle over those 16 cases, so each appears for every (dtype, format, dim,
// entry).
std::vector<Fp8Case> grid() {
  std::vector<Fp8Case> cases;
  const int page_sizes[] = {1, 5, 16, 128};
  const float scales[] = {1.0f, 0.37f, 3.1f};
  uint64_t seed = 100;
  for (DType qd : {DType::kF16, DType::kBF16})
    for (DType kvd : {DType::kE4M3, DType::kE5M2})
      for (int D : {64, 128, 256})
        for (Entry e : {Entry::kSingle, Entry::kRagged, Entry::kPaged, Entry::kDecode}) {
          int i = 0;
          for (bool causal : {false, true})
            for (int w : {-1, 0, 31, 127})
              for (float cap : {0.0f, 2.0f}) {
                Fp8Case c;
                c.q_dtype = qd;
                c.kv_dtype = kvd;
                c.head_dim = D;
                c.entry = e;
                c.causal = causal;
                c.window_left = w;
                c.soft_cap = cap;
                c.page_size = page_sizes[i % 4];
                c.layout = (i / 4) % 2 ? KVLayout::kHND : KVLayout::kNHD;
                c.k_scale = scales[i % 3];
                c.v_scale = scales[(i + 1) % 3];
                c.scales_on_device = i % 5 == 2;
                c.k_mix = i % 3 == 1 ? Mix::kTiny : Mix::kWide;
                // Tiny V with fp16 q and e5m2 would give outputs below fp16's normal range,
                // where the output's own rounding exceeds the tolerance.
                const bool tiny_v_ok = !(qd == DType::kF16 && kvd == DType::kE5M2);
                c.v_mix = i % 3 == 2 && tiny_v_ok ? Mix::kTiny : Mix::kWide;
                c.seed = seed++;
                cases.push_back(c);
                ++i;
              }
        }
  return cases;
}

class Sm80Fp8KV : public ::testing::TestWithParam<Fp8Case> {};

TEST_P(Sm80Fp8KV, MatchesOracle) {
  FB_SKIP_WITHOUT_CUDA();
  const Fp8Case& c = GetParam();
  const std::vector<Request> rs = make_requests(c);
  const double sm_scale = sm_scale_for(c, rs);
  const Expected want = oracle(c, rs, sm_scale, c.k_scale, c.v_scale, c.window_left);
  if (c.window_left >= 0) {  // SPEC.md: a window test first shows the window matters
    // By more than 0.1 of the output's scale (the tiny mix's outputs are ~1e-2 or less).
    const Expected unwindowed = oracle(c, rs, sm_scale, c.k_scale, c.v_scale, -1);
    double scale = 0.0;
    for (double x : want.out) scale = std::max(scale, std::fabs(x));
    ASSERT_GT(max_abs_diff(want.out, unwindowed.out), 0.1 * scale) << "the window changes nothing here";
  }
  const KernelOutput got = run_sm80(c, rs, sm_scale, c.k_scale, c.v_scale);
  const Comparison cmp = check(c, got, want);
  EXPECT_TRUE(cmp.passed) << cmp.failure << " (splits " << got.num_kv_splits << ", max abs err " << cmp.max_abs_err
                          << ", frob " << cmp.frob_rel_err << ", lse " << cmp.lse_max_err << ")";
}

INSTANTIATE_TEST_SUITE_P(Grid, Sm80Fp8KV, ::testing::ValuesIn(grid()),
                         [](const ::testing::TestParamInfo<Fp8Case>& i) {
                           std::string n = i.param.name();
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

// The grid's long requests must reach split-KV, or the partial path of the fp8 kernels
// (restore_o_layout before the partial stores) would go untested.
TEST(Sm80Fp8KVCoverage, DecodeSplitsTheLongRequest) {
  FB_SKIP_WITHOUT_CUDA();
  Fp8Case c;
  c.entry = Entry::kDecode;
  const std::vector<Request> rs = make_requests(c);
  const double sm_scale = sm_scale_for(c, rs);
  const KernelOutput got = run_sm80(c, rs, sm_scale, c.k_scale, c.v_scale);
  EXPECT_GT(got.num_kv_splits, 1);
  const Comparison cmp = check(c, got, oracle(c, rs, sm_scale, c.k_scale, c.v_scale, c.window_left));
  EXPECT_TRUE(cmp.passed) << cmp.failure;
}

// The scales are not ignored: a kernel run with k_scale (or v_scale) 0.37 does not match
// the oracle at 1.0, for every entry and both formats.
class Sm80Fp8KVWrongScale : public ::testing::TestWithParam<std::tuple<Entry, DType, bool>> {};

TEST_P(Sm80Fp8KVWrongScale, Fails) {
  FB_SKIP_WITHOUT_CUDA();
  Fp8Case c;
  c.entry = std::get<0>(GetParam());
  c.kv_dtype = std::get<1>(GetParam());
  const bool wrong_v = std::get<2>(GetParam());
  c.causal = true;
  const std::vector<Request> rs = make_requests(c);
  const double sm_scale = sm_scale_for(c, rs);
  const Expected want = oracle(c, rs, sm_scale, 1.0, 1.0, c.window_left);
  const KernelOutput right = run_sm80(c, rs, sm_scale, 1.0f, 1.0f);
  EXPECT_TRUE(check(c, right, want).passed) << "the reference run itself must pass";
  const KernelOutput wrong = run_sm80(c, rs, sm_scale, wrong_v ? 1.0f : 0.37f, wrong_v ? 0.37f : 1.0f);
  const Comparison cmp = check(c, wrong, want);
  EXPECT_FALSE(cmp.passed) << "a run with the wrong " << (wrong_v ? "v_scale" : "k_scale") << " matched";
}

INSTANTIATE_TEST_SUITE_P(Entries, Sm80Fp8KVWrongScale,
                         ::testing::Combine(::testing::Values(Entry::kSingle, Entry::kRagged, Entry::kPaged,
                                                              Entry::kDecode),
                                            ::testing::Values(DType::kE4M3, DType::kE5M2), ::testing::Bool()));

}  // namespace
}  // namespace flashband::testing
