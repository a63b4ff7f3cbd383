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
// Unused page slots and spare pages hold NaN bytes. Part of the grid is right-bounded
// (window_right, non-causal); Sm80Fp8KVNonFinite puts NaN and Inf codes into keys that rows
// see and keys they do not (SPEC.md's fp8 section).
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

#include "backends/sm80/sm80_backend.h"
#include "backends/sm80/workspace.h"
#include "compare.h"
#include "device_buffer.h"
#include "dispatch/registry.h"
#include "dtype_values.h"
#include "fp8_values.h"
#include "gpu_backends.h"
#include "kv_layout.h"
#include "oracle.h"
#include "parallel_tasks.h"
#include "plan/plan.h"
#include "random.h"

namespace flashband::testing {
namespace {

// --- the two fp8 formats (fp8_value: tests/common/fp8_values.h) -----------------------

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
  int window_right = -1;  // non-causal cases only (SPEC.md refuses r >= 1 beside causal)
  float soft_cap = 0.0f;
  int page_size = 16;
  float k_scale = 1.0f, v_scale = 1.0f;
  bool scales_on_device = false;  // the floats then hold wrong values the kernel must not use
  Mix k_mix = Mix::kWide, v_mix = Mix::kWide;
  uint64_t seed = 1;

  std::string name() const {
    std::ostringstream s;
    s << dtype_name(q_dtype) << "_" << dtype_name(kv_dtype) << "_d" << head_dim << "_" << entry_name(entry) << "_"
      << kv_layout_name(layout) << (causal ? "_causal" : "") << "_w" << window_left
      << (window_right >= 0 ? "_r" + std::to_string(window_right) : "") << (soft_cap > 0 ? "_cap" : "")
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
  // A right bound clips rows i < qo_len - 1 - r only: the short requests get enough rows for
  // it to clip many keys over several tiles.
  const bool clip_right = c.window_right >= 0;
  auto short_qo = [&](int hi) { return clip_right ? rng.uniform_int(64, 160) : rng.uniform_int(1, hi); };
  switch (c.entry) {
    case Entry::kSingle: lens = {{short_qo(40), rng.uniform_int(300, 600)}}; break;
    case Entry::kDecode:
      lens = {{1, rng.uniform_int(900, 1100)}, {1, rng.uniform_int(130, 420)}, {1, rng.uniform_int(130, 420)}};
      break;
    default:  // one long request with few queries (split-KV), two short ones
      lens = {{rng.uniform_int(1, 4), rng.uniform_int(900, 1100)},
              {short_qo(20), rng.uniform_int(130, 420)},
              {short_qo(20), rng.uniform_int(130, 420)}};
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
                int window_left, int window_right) {
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
    p.window_right = window_right;
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
  a.window_right = c.window_right;
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
  key.needs_mask = c.causal || c.window_left >= 0 || c.window_right >= 0;  // SPEC.md's rule
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
// entry). The prefill entries add two non-causal right-bounded cases each, (window_left,
// window_right) from {-1, 31} x {1, 7} in turn (all four for every dtype and format; decode
// has one row per request, which no right bound clips).
std::vector<Fp8Case> grid() {
  std::vector<Fp8Case> cases;
  const int page_sizes[] = {1, 5, 16, 128};
  const float scales[] = {1.0f, 0.37f, 3.1f};
  const std::pair<int, int> right_bounded[] = {{-1, 1}, {31, 1}, {-1, 7}, {31, 7}};
  uint64_t seed = 100, right_seed = 10000;  // the right-bounded cases leave the others' seeds as they were
  for (DType qd : {DType::kF16, DType::kBF16})
    for (DType kvd : {DType::kE4M3, DType::kE5M2}) {
      int k = 0;  // (head dim, prefill entry) pairs so far, for the right bounds' turn
      for (int D : {64, 128, 256})
        for (Entry e : {Entry::kSingle, Entry::kRagged, Entry::kPaged, Entry::kDecode}) {
          auto add = [&](int i, bool causal, int w, int r, float cap, uint64_t case_seed) {
            Fp8Case c;
            c.q_dtype = qd;
            c.kv_dtype = kvd;
            c.head_dim = D;
            c.entry = e;
            c.causal = causal;
            c.window_left = w;
            c.window_right = r;
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
            c.seed = case_seed;
            cases.push_back(c);
          };
          int i = 0;
          for (bool causal : {false, true})
            for (int w : {-1, 0, 31, 127})
              for (float cap : {0.0f, 2.0f}) add(i++, causal, w, -1, cap, seed++);
          if (e == Entry::kDecode) continue;
          for (int j = 0; j < 2; ++j) {
            const auto [w, r] = right_bounded[(k + 2 * j) % 4];
            add(16 + 2 * k + j, false, w, r, j == 1 ? 2.0f : 0.0f, right_seed++);
          }
          ++k;
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
  const Expected want = oracle(c, rs, sm_scale, c.k_scale, c.v_scale, c.window_left, c.window_right);
  // SPEC.md: a window test first shows the window matters, each bound on its own, by more
  // than 0.1 of the output's scale (the tiny mix's outputs are ~1e-2 or less).
  double scale = 0.0;
  for (double x : want.out) scale = std::max(scale, std::fabs(x));
  if (c.window_left >= 0) {
    const Expected wider = oracle(c, rs, sm_scale, c.k_scale, c.v_scale, -1, c.window_right);
    ASSERT_GT(max_abs_diff(want.out, wider.out), 0.1 * scale) << "window_left changes nothing here";
  }
  if (c.window_right >= 0) {
    const Expected wider = oracle(c, rs, sm_scale, c.k_scale, c.v_scale, c.window_left, -1);
    ASSERT_GT(max_abs_diff(want.out, wider.out), 0.1 * scale) << "window_right changes nothing here";
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
  const Comparison cmp = check(c, got, oracle(c, rs, sm_scale, c.k_scale, c.v_scale, c.window_left, c.window_right));
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
  const Expected want = oracle(c, rs, sm_scale, 1.0, 1.0, c.window_left, c.window_right);
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

// --- NaN and Inf in the cache ---------------------------------------------------------

// SPEC.md "Quantized KV": fp8 NaN and e5m2 Inf decode to NaN and Inf, and a row that sees such
// a key gets what IEEE arithmetic gives in the oracle: NaN in K (or a +inf logit) -> the row's
// output and LSE NaN; NaN in V -> those output elements NaN; a -inf logit weighs the key 0; a
// soft cap makes an infinite logit +-cap. Rows that do not see it are exact.
enum class Poison { kKNaN, kVNaN, kKInf };
const char* poison_name(Poison p) { return p == Poison::kKNaN ? "k_nan" : p == Poison::kVNaN ? "v_nan" : "k_inf"; }

// full: no mask, so the long request of the batch entries is split (the NaN goes through the
// split-KV merge). band: window_left 31, non-causal: every row sees its request's last 32 keys,
// and kv head 1 gets keys that no row sees: K right left of every row's window (in a tile the
// rows visit, masked to -inf), V at key 0 (in a tile no row visits; a V value in a visited
// tile meets zero probabilities, 0 x NaN, see SPEC.md).
enum class PoisonMask { kFull, kBand };

using PoisonParam = std::tuple<DType, DType, Poison, Entry, PoisonMask>;

// The codes: e4m3 NaN is S.1111.111; e5m2 NaN S.11111.{01,10,11}, Inf S.11111.00.
uint8_t poison_code(DType fmt, Poison p, int variant) {
  if (p == Poison::kKInf) return variant % 2 ? 0xFC : 0x7C;  // -Inf, +Inf
  if (fmt == DType::kE4M3) return variant % 2 ? 0xFF : 0x7F;
  const uint8_t e5m2_nan[] = {0x7D, 0xFE, 0x7F};
  return e5m2_nan[variant % 3];
}

class Sm80Fp8KVNonFinite : public ::testing::TestWithParam<PoisonParam> {};

TEST_P(Sm80Fp8KVNonFinite, RowsThatSeeItAndOnlyThose) {
  FB_SKIP_WITHOUT_CUDA();
  const DType qd = std::get<0>(GetParam()), kvd = std::get<1>(GetParam());
  const Poison poison = std::get<2>(GetParam());
  const Entry entry = std::get<3>(GetParam());
  const PoisonMask mask = std::get<4>(GetParam());
  Fp8Case c;
  c.q_dtype = qd;
  c.kv_dtype = kvd;
  c.entry = entry;
  c.head_dim = entry == Entry::kRagged ? 64 : entry == Entry::kPaged ? 256 : 128;
  c.window_left = mask == PoisonMask::kBand ? 31 : -1;
  c.soft_cap = entry == Entry::kPaged ? 2.0f : 0.0f;  // an infinite logit capped to +-cap
  c.k_scale = 0.37f;
  c.seed = 7000 + static_cast<uint64_t>(poison) * 10 + static_cast<uint64_t>(entry);
  std::vector<Request> rs = make_requests(c);
  const double sm_scale = sm_scale_for(c, rs);  // from the finite values
  const int D = c.head_dim, B = static_cast<int>(rs.size());
  const bool in_k = poison != Poison::kVNaN;
  int variant = 0;
  auto put = [&](Request& r, int key, int kv_head) {
    std::vector<uint8_t>& bytes = in_k ? r.k8 : r.v8;
    const std::size_t row = (static_cast<std::size_t>(key) * kHk + kv_head) * D;
    bytes[row + 5] = poison_code(kvd, poison, variant++);
    if (!in_k) bytes[row + D - 1] = poison_code(kvd, poison, variant++);
  };
  for (int b = 0; b < B; ++b) {
    Request& r = rs[b];
    // Seen by every row of kv head 0 of the first and the last request.
    if (b == 0) put(r, mask == PoisonMask::kBand ? r.kv_len - 5 : r.kv_len / 3, 0);
    if (b == B - 1 && B > 1) put(r, r.kv_len - 1, 0);
    // Seen by no row of kv head 1.
    if (mask == PoisonMask::kBand) put(r, in_k ? r.kv_len - r.qo_len - 32 : 0, 1);
  }

  Expected want = oracle(c, rs, sm_scale, c.k_scale, c.v_scale, c.window_left, c.window_right);
  KernelOutput got = run_sm80(c, rs, sm_scale, c.k_scale, c.v_scale);
  if (entry == Entry::kDecode && mask == PoisonMask::kFull) EXPECT_GT(got.num_kv_splits, 1);

  // Where the oracle is NaN the kernel must be NaN; those places then compare as 0 = 0, and
  // everything else is held to q's tolerance.
  int nan_rows = 0, nan_rows_kv_head1 = 0;
  const int Hq = num_qo_heads(c);
  std::string first_miss;
  for (std::size_t row = 0; row < want.lse.size(); ++row) {
    bool row_nan = false;
    for (int d = 0; d < D; ++d) {
      const std::size_t i = row * D + d;
      if (!std::isnan(want.out[i])) continue;
      row_nan = true;
      if (!std::isnan(got.out[i]) && first_miss.empty())
        first_miss = "out[token " + std::to_string(row / Hq) + ", head " + std::to_string(row % Hq) + ", d " +
                     std::to_string(d) + "] = " + std::to_string(got.out[i]) + ", oracle NaN";
      want.out[i] = got.out[i] = 0.0;
    }
    if (std::isnan(want.lse[row])) {
      if (!std::isnan(got.lse[row]) && first_miss.empty())
        first_miss = "lse[token " + std::to_string(row / Hq) + ", head " + std::to_string(row % Hq) +
                     "] = " + std::to_string(got.lse[row]) + ", oracle NaN";
      want.lse[row] = got.lse[row] = 0.0;
    }
    nan_rows += row_nan;
    nan_rows_kv_head1 += row_nan && static_cast<int>(row % Hq) >= Hq / kHk;
  }
  EXPECT_TRUE(first_miss.empty()) << first_miss << " (splits " << got.num_kv_splits << ")";
  // The poison is seen: K NaN and V NaN reach every row of kv head 0 of two requests (one for
  // single); an Inf reaches those rows whose q gives it a +inf logit, unless capped.
  if (poison != Poison::kKInf) EXPECT_GE(nan_rows, 1);
  if (poison == Poison::kKInf && c.soft_cap == 0.0f) EXPECT_GE(nan_rows, 1);
  EXPECT_EQ(nan_rows_kv_head1, 0) << "the oracle must see none of kv head 1's poison";
  const Comparison cmp = check(c, got, want);
  EXPECT_TRUE(cmp.passed) << cmp.failure << " (splits " << got.num_kv_splits << ", NaN rows " << nan_rows << ")";
}

// Both formats and q dtypes, K NaN and V NaN, e5m2 Inf in K (e4m3 has none), every entry
// under the band mask and the batch entries under the full one (single has no workspace,
// so no split). 40 cases.
std::vector<PoisonParam> poison_cases() {
  std::vector<PoisonParam> ps;
  for (DType qd : {DType::kF16, DType::kBF16})
    for (DType kvd : {DType::kE4M3, DType::kE5M2})
      for (Poison p : {Poison::kKNaN, Poison::kVNaN, Poison::kKInf}) {
        if (p == Poison::kKInf && kvd == DType::kE4M3) continue;
        for (Entry e : {Entry::kSingle, Entry::kRagged, Entry::kPaged, Entry::kDecode})
          for (PoisonMask m : {PoisonMask::kFull, PoisonMask::kBand})
            if (e != Entry::kSingle || m == PoisonMask::kBand) ps.emplace_back(qd, kvd, p, e, m);
      }
  return ps;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, Sm80Fp8KVNonFinite, ::testing::ValuesIn(poison_cases()),
    [](const ::testing::TestParamInfo<PoisonParam>& i) {
      const PoisonParam& c = i.param;
      std::string n = std::string(dtype_name(std::get<0>(c))) + "_" + dtype_name(std::get<1>(c)) + "_" +
                      poison_name(std::get<2>(c)) + "_" + entry_name(std::get<3>(c)) +
                      (std::get<4>(c) == PoisonMask::kBand ? "_band" : "_full");
      for (char& ch : n)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return n;
    });

}  // namespace
}  // namespace flashband::testing
