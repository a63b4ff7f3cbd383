#include "case_steps.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/mask.h"
#include "compare.h"
#include "dtype_values.h"
#include "oracle.h"
#include "parallel_tasks.h"
#include "random.h"

namespace flashband::testing {

void validate_case(const Case& c) {
  auto bad = [&](const std::string& what) { throw std::invalid_argument("case " + c.name() + ": " + what); };
  if (c.kv_lens.empty() && c.entry == EntryPoint::kSingle) bad("single prefill needs one request");
  if (c.entry == EntryPoint::kSingle && (c.kv_lens.size() != 1 || c.qo_lens.size() != 1))
    bad("single prefill takes exactly one qo_len and one kv_len");
  if (c.entry != EntryPoint::kDecode && c.qo_lens.size() != c.kv_lens.size())
    bad("qo_lens and kv_lens must have one entry per request");
  for (int len : c.kv_lens)
    if (len < 0) bad("negative kv_len");
  for (int len : c.qo_lens)
    if (len < 0) bad("negative qo_len");
  if (c.num_kv_heads <= 0 || c.num_qo_heads % c.num_kv_heads != 0) bad("Hq must be a multiple of Hk");
  if (c.head_dim <= 0) bad("head_dim must be positive");
  if ((c.entry == EntryPoint::kPaged || c.entry == EntryPoint::kDecode) && c.page_size < 1)
    bad("page_size must be >= 1");
  if (c.far_kv && (c.entry == EntryPoint::kSingle || c.device != Device::kCUDA))
    bad("far_kv: ragged, paged or decode on the GPU only");
  if (c.mask_tree && !c.mask_density) bad("mask_tree: set mask_density too (it marks a masked case)");
  for (std::size_t b = 0; c.mask_tree && b < c.kv_lens.size(); ++b)
    if (c.qo_lens[b] > c.kv_lens[b]) bad("mask_tree: qo_len must not exceed kv_len (the drafts are the last keys)");
  if (c.far_kv && c.entry == EntryPoint::kRagged &&
      (c.layout == KVLayout::kNHD ? c.kv_lens.empty() || *std::max_element(c.kv_lens.begin(), c.kv_lens.end()) < 2
                                    : c.num_kv_heads < 2))
    bad("far_kv: ragged needs a request of two tokens (NHD) or two KV heads (HND) to spread apart");
}

std::vector<int> case_qo_lens(const Case& c) {
  if (c.entry == EntryPoint::kDecode) return std::vector<int>(c.kv_lens.size(), 1);
  return c.qo_lens;
}

double case_sm_scale(const Case& c) {
  return c.sm_scale ? static_cast<double>(*c.sm_scale) : 1.0 / std::sqrt(static_cast<double>(c.head_dim));
}

Options case_options(const Case& c) {
  Options o;
  o.causal = c.causal;
  o.window_left = c.window_left;
  o.window_right = c.window_right;
  o.logits_soft_cap = c.logits_soft_cap;
  o.sm_scale = c.sm_scale;
  o.sinks = !c.sinks.empty();
  o.custom_mask = c.mask_density.has_value();
  o.return_lse = c.return_lse;
  o.kv_layout = c.layout;
  o.backend = c.backend;
  return o;
}

ProblemDesc problem_of(const Case& c) {
  ProblemDesc d;
  switch (c.entry) {
    case EntryPoint::kSingle: d.op = Op::kSinglePrefill; break;
    case EntryPoint::kRagged: d.op = Op::kRaggedPrefill; break;
    case EntryPoint::kPaged: d.op = Op::kPagedPrefill; break;
    case EntryPoint::kDecode: d.op = Op::kPagedDecode; break;
  }
  d.dtype = c.dtype;
  d.kv_dtype = c.kv_dtype;
  d.device = c.device;
  d.head_dim = c.head_dim;
  d.num_qo_heads = c.num_qo_heads;
  d.num_kv_heads = c.num_kv_heads;
  // As plan() gives it: causal is the right bound 0 (make_plan.cpp).
  const int right = c.causal ? 0 : c.window_right;
  d.causal = right == 0;
  int max_kv = 0, max_qo = 0;
  for (int k : c.kv_lens) max_kv = std::max(max_kv, k);
  for (int q : case_qo_lens(c)) max_qo = std::max(max_qo, q);
  d.window_left = core::normalize_window(c.window_left, max_kv);
  d.window_right = right < 1 ? -1 : core::normalize_window_right(right, max_qo);
  d.max_kv_len = max_kv;
  d.soft_cap = c.logits_soft_cap > 0.0f;
  d.sinks = !c.sinks.empty();
  d.custom_mask = c.mask_density.has_value();
  if (d.custom_mask) d.has_empty_rows = true;  // as plan() assumes
  d.return_lse = c.return_lse;
  d.kv_layout = c.layout;
  d.page_size = (c.entry == EntryPoint::kPaged || c.entry == EntryPoint::kDecode) ? c.page_size : 0;
  for (std::size_t b = 0; b < c.kv_lens.size(); ++b) {
    const int qo = c.entry == EntryPoint::kDecode ? 1 : c.qo_lens[b];
    const int kv = c.kv_lens[b];
    if (qo > 0 && (kv == 0 || (right >= 0 && int64_t{qo} > int64_t{kv} + right))) d.has_empty_rows = true;
    if (qo > kv) d.qo_longer_than_kv = true;
  }
  return d;
}

namespace {

// fp8 K or V of one request, [kv_len, Hk, D]: element d of a row is normal / scale (so the
// dequantized values have unit spread), except d = 0, which spans the format: magnitudes
// log-uniform from the smallest subnormal to `top`, with the first tokens planted at
// +top, -top, the smallest and the largest subnormal.
std::vector<double> draw_fp8(DType kv, Rng& rng, int kv_len, int Hk, int D, double scale, double top) {
  const double min_sub = kv == DType::kE4M3 ? std::ldexp(1.0, -9) : std::ldexp(1.0, -16);
  const double max_sub = kv == DType::kE4M3 ? 7 * std::ldexp(1.0, -9) : 3 * std::ldexp(1.0, -16);
  const double planted[] = {top, -top, min_sub, max_sub};
  std::vector<double> x(static_cast<std::size_t>(kv_len) * Hk * D);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t token = i / (static_cast<std::size_t>(Hk) * D);
    if (i % D != 0) {
      x[i] = round_to_dtype(kv, rng.normal() / scale);
    } else if (token < 4) {
      x[i] = planted[token];
    } else {
      const double mag = min_sub * std::pow(top / min_sub, rng.uniform());
      x[i] = round_to_dtype(kv, rng.uniform() < 0.5 ? -mag : mag);
    }
  }
  return x;
}

double fp8_max(DType kv) { return kv == DType::kE4M3 ? 448.0 : 57344.0; }

// Case::mask_tree: the prefix is visible to every row; draft row i sees itself and its
// ancestors in a random tree whose node i hangs under one of 0 .. i - 1 (or the root).
void tree_verify_mask(int qo_len, int kv_len, Rng& rng, std::vector<char>& mask) {
  const int prefix = kv_len - qo_len;
  std::vector<int> parent(static_cast<std::size_t>(qo_len));
  for (int i = 0; i < qo_len; ++i) {
    parent[static_cast<std::size_t>(i)] = rng.uniform_int(-1, i - 1);
    char* row = mask.data() + static_cast<std::size_t>(i) * kv_len;
    for (int j = 0; j < prefix; ++j) row[j] = 1;
    for (int d = i; d >= 0; d = parent[static_cast<std::size_t>(d)]) row[prefix + d] = 1;
  }
}

// The case's custom masks, if it has them.
std::vector<RequestData> with_masks(const Case& c, std::vector<RequestData> data) {
  if (c.mask_density) {
    // Its own stream, so a masked case keeps the q, k and v of the same case without one.
    Rng mask_rng(c.seed ^ 0x6d61736bULL);
    for (RequestData& r : data) {
      r.mask.resize(static_cast<std::size_t>(r.qo_len) * r.kv_len);
      if (c.mask_tree) {
        tree_verify_mask(r.qo_len, r.kv_len, mask_rng, r.mask);
        continue;
      }
      for (std::size_t i = 0; i < r.mask.size(); ++i)
        r.mask[i] = (r.qo_len < 3 || i >= static_cast<std::size_t>(r.kv_len)) && mask_rng.uniform() < *c.mask_density;
    }
  }
  return data;
}

// e4m3 of normal / scale, so the dequantized values have unit spread; with outliers one
// element in 64 is 16 times larger (saturating at e4m3's 448 before the rounding).
std::vector<double> draw_e4m3(Rng& rng, std::size_t n, double scale, bool outliers) {
  std::vector<double> x(n);
  for (double& e : x) {
    const double big = outliers && rng.uniform() < 1.0 / 64 ? 16.0 : 1.0;
    e = round_to_dtype(DType::kE4M3, std::clamp(big * rng.normal() / scale, -448.0, 448.0));
  }
  return x;
}

// fp8 attention's inputs: q, k and v all e4m3, each of unit spread after its descale.
std::vector<RequestData> fp8_attention_data(const Case& c, const std::vector<int>& qo, Rng& rng) {
  std::vector<RequestData> data(c.kv_lens.size());
  const std::size_t Hq = c.num_qo_heads, Hk = c.num_kv_heads, D = c.head_dim;
  for (std::size_t b = 0; b < data.size(); ++b) {
    RequestData& r = data[b];
    r.qo_len = qo[b];
    r.kv_len = c.kv_lens[b];
    r.q = draw_e4m3(rng, r.qo_len * Hq * D, c.q_scale, c.outliers);
    r.k = draw_e4m3(rng, r.kv_len * Hk * D, c.k_scale, c.outliers);
    r.v = draw_e4m3(rng, r.kv_len * Hk * D, c.v_scale, c.outliers);
  }
  return data;
}

}  // namespace

std::vector<RequestData> make_case_data(const Case& c) {
  validate_case(c);
  const std::vector<int> qo = case_qo_lens(c);
  Rng rng(c.seed);
  auto draw = [&](std::size_t n) {
    std::vector<double> x(n);
    for (double& e : x) e = round_to_dtype(c.dtype, rng.normal());
    return x;
  };
  const DType kv = c.kv_dtype.value_or(c.dtype);
  if (c.dtype == DType::kE4M3) return with_masks(c, fp8_attention_data(c, qo, rng));
  const bool fp8 = is_fp8(kv);
  // K's d = 0 reaches the format's largest value; q's d = 0 shrinks by as much, so that
  // key's logits stay of unit spread (else softmax is one-hot and the LSE past float32's
  // resolution). V's top is the largest value whose output fits q's dtype after v_scale.
  const double k_top = fp8 ? fp8_max(kv) : 0.0;
  double v_top = k_top;
  if (fp8 && c.dtype == DType::kF16 && v_top * c.v_scale > 60000.0)
    v_top = round_to_dtype(kv, 40000.0 / c.v_scale);
  std::vector<RequestData> data(c.kv_lens.size());
  for (std::size_t b = 0; b < data.size(); ++b) {
    RequestData& r = data[b];
    r.qo_len = qo[b];
    r.kv_len = c.kv_lens[b];
    r.q = draw(static_cast<std::size_t>(r.qo_len) * c.num_qo_heads * c.head_dim);
    if (!fp8) {
      r.k = draw(static_cast<std::size_t>(r.kv_len) * c.num_kv_heads * c.head_dim);
      r.v = draw(static_cast<std::size_t>(r.kv_len) * c.num_kv_heads * c.head_dim);
      continue;
    }
    for (std::size_t i = 0; i < r.q.size(); i += static_cast<std::size_t>(c.head_dim))
      r.q[i] = round_to_dtype(c.dtype, r.q[i] / (k_top * c.k_scale));
    r.k = draw_fp8(kv, rng, r.kv_len, c.num_kv_heads, c.head_dim, c.k_scale, k_top);
    r.v = draw_fp8(kv, rng, r.kv_len, c.num_kv_heads, c.head_dim, c.v_scale, v_top);
  }
  return with_masks(c, std::move(data));
}

Reference make_reference(const Case& c, const std::vector<RequestData>& data, Window window, bool quantize_p) {
  std::vector<OracleProblem> problems(data.size());
  std::vector<OracleResult> results(data.size());
  for (std::size_t b = 0; b < data.size(); ++b) {
    OracleProblem& p = problems[b];
    p.qo_len = data[b].qo_len;
    p.kv_len = data[b].kv_len;
    p.num_qo_heads = c.num_qo_heads;
    p.num_kv_heads = c.num_kv_heads;
    p.head_dim = c.head_dim;
    p.causal = c.causal;
    p.window_left = window.left;
    p.window_right = window.right;
    p.logits_soft_cap = c.logits_soft_cap;
    p.sm_scale = case_sm_scale(c);
    p.k_scale = c.k_scale;
    p.v_scale = c.v_scale;
    p.q_scale = c.q_scale;
    p.quantize_p = quantize_p;
    p.sinks.assign(c.sinks.begin(), c.sinks.end());
    p.mask = data[b].mask;
    results[b] = oracle_empty_result(p);
  }
  // One task per (request, head): the heads of one request write disjoint rows.
  const int H = c.num_qo_heads;
  parallel_tasks(static_cast<int>(data.size()) * H, [&](int t) {
    const std::size_t b = static_cast<std::size_t>(t / H);
    oracle_attention_head(problems[b], data[b].q, data[b].k, data[b].v, t % H, &results[b]);
  });

  Reference ref;
  for (std::size_t b = 0; b < data.size(); ++b) {
    const OracleResult& o = results[b];
    ref.out.insert(ref.out.end(), o.out.begin(), o.out.end());
    ref.lse.insert(ref.lse.end(), o.lse.begin(), o.lse.end());
    ref.empty.insert(ref.empty.end(), o.empty.begin(), o.empty.end());
    ref.visible_pairs += oracle_visible_pairs(problems[b]) * H;
  }
  return ref;
}

std::vector<uint8_t> pack_case_mask(const std::vector<RequestData>& data) {
  std::vector<uint8_t> bytes;
  for (const RequestData& r : data) {
    const std::size_t start = bytes.size();
    bytes.resize(start + (r.mask.size() + 7) / 8, 0);
    for (std::size_t k = 0; k < r.mask.size(); ++k)
      if (r.mask[k]) bytes[start + k / 8] |= static_cast<uint8_t>(1u << (k % 8));
  }
  return bytes;
}

bool window_changes_visibility(const Case& c, Window with, Window without) {
  const std::vector<int> qo = case_qo_lens(c);
  for (std::size_t b = 0; b < c.kv_lens.size(); ++b) {
    // Callers drop bounds from `with` to get `without`, so one set contains the other and
    // equal counts mean equal sets.
    if (oracle_visible_pairs(qo[b], c.kv_lens[b], c.causal, with.left, with.right) !=
        oracle_visible_pairs(qo[b], c.kv_lens[b], c.causal, without.left, without.right))
      return true;
  }
  return false;
}

DType case_out_dtype(const Case& c) { return c.o_dtype.value_or(c.dtype); }

Comparison judge_case(const Case& c, const Case& ref_case, const std::vector<RequestData>& data,
                      const ApiOutputs& api) {
  const Window window{ref_case.window_left, ref_case.window_right};
  const Reference ref = make_reference(ref_case, data, window);
  Tolerance tol = tolerance_for(case_out_dtype(c));
  if (c.dtype == DType::kE4M3) {
    // FlashAttention-3's style of bound: twice what exact arithmetic on the quantized P
    // misses, plus the output dtype's rounding; no relative term.
    const Reference emulated = make_reference(ref_case, data, window, /*quantize_p=*/true);
    tol.atol += 2.0 * max_abs_diff(emulated.out, ref.out);
    tol.rtol = 0.0;
    tol.frob = kFp8AttentionFrob;
  }
  return compare_attention(tol, c.num_qo_heads, c.head_dim, api.out, ref.out, api.lse, ref.lse, ref.empty);
}

}  // namespace flashband::testing
