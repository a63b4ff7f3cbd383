#include "oracle.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "dtype_values.h"

namespace flashband::testing {

namespace {
// fp8 attention's P for P.V (SPEC.md): e4m3 of 2^8 e, ties to even (dtype_values' nearest
// code search, not the cpu backend's rounding), scaled back.
double quantized_probability(double e) { return round_to_dtype(DType::kE4M3, 256.0 * e) / 256.0; }
}  // namespace

bool oracle_visible(int qo_len, int kv_len, bool causal, int window_left, int window_right, int i, int j) {
  const long pos = static_cast<long>(i) + kv_len - qo_len;  // bottom-right alignment
  if (j < 0 || j >= kv_len) return false;
  if (causal && j > pos) return false;
  if (window_left >= 0 && j < pos - window_left) return false;
  if (window_right >= 0 && j > pos + window_right) return false;
  return true;
}

int64_t oracle_visible_pairs(int qo_len, int kv_len, bool causal, int window_left, int window_right) {
  int64_t n = 0;
  for (int i = 0; i < qo_len; ++i)
    for (int j = 0; j < kv_len; ++j) n += oracle_visible(qo_len, kv_len, causal, window_left, window_right, i, j);
  return n;
}

bool oracle_sees(const OracleProblem& p, int i, int j) {
  if (!p.mask.empty() && !p.mask[static_cast<std::size_t>(i) * p.kv_len + j]) return false;
  return oracle_visible(p.qo_len, p.kv_len, p.causal, p.window_left, p.window_right, i, j);
}

int64_t oracle_visible_pairs(const OracleProblem& p) {
  int64_t n = 0;
  for (int i = 0; i < p.qo_len; ++i)
    for (int j = 0; j < p.kv_len; ++j) n += oracle_sees(p, i, j);
  return n;
}

namespace {
void check_sizes(const OracleProblem& p, const std::vector<double>& q, const std::vector<double>& k,
                 const std::vector<double>& v) {
  if (p.num_kv_heads <= 0 || p.num_qo_heads % p.num_kv_heads != 0)
    throw std::invalid_argument("oracle: Hq must be a multiple of Hk");
  const std::size_t nq = static_cast<std::size_t>(p.qo_len) * p.num_qo_heads * p.head_dim;
  const std::size_t nk = static_cast<std::size_t>(p.kv_len) * p.num_kv_heads * p.head_dim;
  if (q.size() != nq || k.size() != nk || v.size() != nk)
    throw std::invalid_argument("oracle: input sizes do not match the problem");
  if (!p.sinks.empty() && p.sinks.size() != static_cast<std::size_t>(p.num_qo_heads))
    throw std::invalid_argument("oracle: sinks must have num_qo_heads entries");
  if (!p.mask.empty() && p.mask.size() != static_cast<std::size_t>(p.qo_len) * p.kv_len)
    throw std::invalid_argument("oracle: mask must have qo_len * kv_len entries");
}
}  // namespace

OracleResult oracle_empty_result(const OracleProblem& p) {
  OracleResult r;
  r.out.assign(static_cast<std::size_t>(p.qo_len) * p.num_qo_heads * p.head_dim, 0.0);
  r.lse.assign(static_cast<std::size_t>(p.qo_len) * p.num_qo_heads, -std::numeric_limits<double>::infinity());
  r.empty.assign(r.lse.size(), 1);
  return r;
}

void oracle_attention_head(const OracleProblem& p, const std::vector<double>& q,
                           const std::vector<double>& k, const std::vector<double>& v, int h,
                           OracleResult* result) {
  check_sizes(p, q, k, v);
  const int Hq = p.num_qo_heads, Hk = p.num_kv_heads, D = p.head_dim;
  const int hk = h / (Hq / Hk);  // GQA: query head h reads KV head h / (Hq / Hk)
  const double neg_inf = -std::numeric_limits<double>::infinity();
  OracleResult& r = *result;
  std::vector<double> s(static_cast<std::size_t>(p.kv_len));
  std::vector<char> vis(static_cast<std::size_t>(p.kv_len));

  for (int i = 0; i < p.qo_len; ++i) {
    const double* qi = &q[(static_cast<std::size_t>(i) * Hq + h) * D];
    double m = neg_inf;
    for (int j = 0; j < p.kv_len; ++j) {
      vis[j] = oracle_sees(p, i, j);
      if (!vis[j]) continue;
      const double* kj = &k[(static_cast<std::size_t>(j) * Hk + hk) * D];
      // Four partial sums: the same double-precision dot product without one serial chain.
      double part[4] = {0.0, 0.0, 0.0, 0.0};
      int d = 0;
      for (; d + 4 <= D; d += 4)
        for (int e = 0; e < 4; ++e) part[e] += qi[d + e] * kj[d + e];
      for (; d < D; ++d) part[0] += qi[d] * kj[d];
      double x = p.sm_scale * p.q_scale * p.k_scale * ((part[0] + part[1]) + (part[2] + part[3]));
      if (p.logits_soft_cap > 0.0) x = p.logits_soft_cap * std::tanh(x / p.logits_soft_cap);
      s[j] = x;
      m = std::max(m, x);
    }
    const std::size_t row = static_cast<std::size_t>(i) * Hq + h;
    double* oi = &r.out[row * D];
    // The sink: one more denominator term exp(sink), with no value (SPEC.md).
    const double sink = p.sinks.empty() ? neg_inf : p.sinks[static_cast<std::size_t>(h)];
    if (m == neg_inf) {  // no visible key: output exactly 0, LSE -inf or the sink's
      for (int d = 0; d < D; ++d) oi[d] = 0.0;
      r.lse[row] = sink == neg_inf ? neg_inf : sink / std::log(2.0);
      r.empty[row] = 1;
      continue;
    }
    const double m_keys = m;  // fp8 attention quantizes P against the keys' maximum alone
    m = std::max(m, sink);
    double sum = sink == neg_inf ? 0.0 : std::exp(sink - m);
    for (int j = 0; j < p.kv_len; ++j)
      if (vis[j]) sum += std::exp(s[j] - m);
    for (int d = 0; d < D; ++d) oi[d] = 0.0;
    for (int j = 0; j < p.kv_len; ++j) {
      if (!vis[j]) continue;
      const double e = p.quantize_p ? quantized_probability(std::exp(s[j] - m_keys)) * std::exp(m_keys - m)
                                    : std::exp(s[j] - m);
      const double w = p.v_scale * e / sum;
      const double* vj = &v[(static_cast<std::size_t>(j) * Hk + hk) * D];
      for (int d = 0; d < D; ++d) oi[d] += w * vj[d];
    }
    r.lse[row] = (m + std::log(sum)) / std::log(2.0);
    r.empty[row] = 0;
  }
}

OracleResult oracle_attention(const OracleProblem& p, const std::vector<double>& q,
                              const std::vector<double>& k, const std::vector<double>& v) {
  check_sizes(p, q, k, v);
  OracleResult r = oracle_empty_result(p);
  for (int h = 0; h < p.num_qo_heads; ++h) oracle_attention_head(p, q, k, v, h, &r);
  return r;
}

}  // namespace flashband::testing
