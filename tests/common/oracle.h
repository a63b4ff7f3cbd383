// The fp64 oracle: SPEC.md's formulas evaluated directly in double, one request at a time.
// Written independently of the cpu backend and of src/core/mask.h (its own visibility test,
// a straight loop over every key), so that both can be judged by it.
#pragma once
#include <cstdint>
#include <vector>

namespace flashband::testing {

struct OracleProblem {
  int qo_len = 0;
  int kv_len = 0;
  int num_qo_heads = 1;
  int num_kv_heads = 1;
  int head_dim = 1;
  bool causal = false;
  int window_left = -1;          // as given by the user: -1 no window, w >= 0
  int window_right = -1;         // as given by the user: -1 no right bound, r >= 0
  double logits_soft_cap = 0.0;  // 0: off
  double sm_scale = 1.0;
  // fp8 K/V dequantization (SPEC.md): logits scale by k_scale, outputs by v_scale; k and v
  // are then the stored fp8 values, exact in double.
  double k_scale = 1.0;
  double v_scale = 1.0;
  // fp8 attention (SPEC.md): logits scale by q_scale too; with quantize_p the oracle becomes
  // the fp8-emulating reference, P.V using e4m3(2^8 exp(s - m)) / 2^8 against the row's
  // final maximum while the denominator keeps the exact weights.
  double q_scale = 1.0;
  bool quantize_p = false;
  // Attention sinks, natural-log domain: [num_qo_heads], or empty for none (SPEC.md).
  std::vector<double> sinks;
  // Custom mask (SPEC.md "Custom masks"), unpacked: [qo_len * kv_len] row-major, nonzero where
  // key j is allowed for row i, ANDed with the rest of visible(i, j); empty for none.
  std::vector<char> mask;
};

// SPEC.md "visible(i, j)", written out from the text.
bool oracle_visible(int qo_len, int kv_len, bool causal, int window_left, int window_right, int i, int j);

// Number of visible (row, key) pairs of one request and one head.
int64_t oracle_visible_pairs(int qo_len, int kv_len, bool causal, int window_left, int window_right);
// visible(i, j) of a problem, its custom mask included; and the count of such pairs.
bool oracle_sees(const OracleProblem& p, int i, int j);
int64_t oracle_visible_pairs(const OracleProblem& p);

struct OracleResult {
  std::vector<double> out;  // [qo_len, num_qo_heads, head_dim]
  std::vector<double> lse;  // [qo_len, num_qo_heads], base 2; a row that sees nothing: -inf, or its sink / ln 2
  std::vector<char> empty;  // [qo_len, num_qo_heads], 1 where the row sees no key
};

// q [qo_len, Hq, D], k and v [kv_len, Hk, D], all row-major doubles.
OracleResult oracle_attention(const OracleProblem& p, const std::vector<double>& q,
                              const std::vector<double>& k, const std::vector<double>& v);

// The same for one query head only, into a result sized by oracle_empty_result (every row
// empty: out 0, LSE -inf). Heads are independent, so callers may run them in parallel.
OracleResult oracle_empty_result(const OracleProblem& p);
void oracle_attention_head(const OracleProblem& p, const std::vector<double>& q,
                           const std::vector<double>& k, const std::vector<double>& v, int head,
                           OracleResult* result);

}  // namespace flashband::testing
