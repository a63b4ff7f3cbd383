#include "non_finite.h"

#include <cmath>
#include <limits>
#include <vector>

#include "case_steps.h"

namespace flashband::testing {

NonFiniteCheck check_one_nan(const Case& c, bool in_k, int key, int dim) {
  NonFiniteCheck r;
  if (c.kv_lens.size() != 1 || c.window_left >= 0 || c.window_right > 0 || !c.sinks.empty() || c.mask_density) {
    r.wrong = -1;
    r.first = "check_one_nan takes one request without window, sinks or mask";
    return r;
  }
  std::vector<RequestData> data = make_case_data(c);
  const ApiOutputs clean = run_api(c, data);
  const int hq = c.num_qo_heads, hk = c.num_kv_heads, d = c.head_dim;
  (in_k ? data[0].k : data[0].v)[(static_cast<size_t>(key) * hk + 0) * d + dim] =
      std::numeric_limits<double>::quiet_NaN();  // stored as the dtype's (or fp8 format's) NaN
  const ApiOutputs got = run_api(c, data);
  const int rows = static_cast<int>(got.out.size() / (static_cast<size_t>(hq) * d));
  const int kv = data[0].kv_len, qo = data[0].qo_len;
  for (int i = 0; i < rows; ++i) {
    // Bottom-right causal: row i sees keys up to i + kv - qo (decode: its one row sees all).
    const bool sees = !c.causal || c.entry == EntryPoint::kDecode || key <= i + kv - qo;
    for (int h = 0; h < hq; ++h)
      for (int e = 0; e < d; ++e) {
        const size_t at = (static_cast<size_t>(i) * hq + h) * d + e;
        const bool nan_expected = sees && h < hq / hk && (in_k || e == dim);
        const bool ok = nan_expected ? std::isnan(got.out[at]) : got.out[at] == clean.out[at];
        if (!ok && ++r.wrong <= 5)
          r.first += " [row " + std::to_string(i) + " head " + std::to_string(h) + " dim " + std::to_string(e) +
                     ": got " + std::to_string(got.out[at]) + ", clean " + std::to_string(clean.out[at]) + "]";
      }
    // The LSE: NaN where the key's NaN is in K and the row sees it, else unchanged.
    if (!got.lse.empty())
      for (int h = 0; h < hq; ++h) {
        const size_t at = static_cast<size_t>(i) * hq + h;
        const bool nan_expected = in_k && sees && h < hq / hk;
        const bool ok = nan_expected ? std::isnan(got.lse[at]) : got.lse[at] == clean.lse[at];
        if (!ok && ++r.wrong <= 5)
          r.first += " [lse row " + std::to_string(i) + " head " + std::to_string(h) + ": got " +
                     std::to_string(got.lse[at]) + ", clean " + std::to_string(clean.lse[at]) + "]";
      }
  }
  return r;
}

std::vector<Case> non_finite_cases(const std::vector<DType>& dtypes) {
  std::vector<Case> cases;
  int seed = 0;
  for (EntryPoint e : {EntryPoint::kSingle, EntryPoint::kRagged, EntryPoint::kPaged, EntryPoint::kDecode})
    for (DType dt : dtypes)
      for (int kv = 0; kv < 3; ++kv) {
        if (kv > 0 && dt == DType::kF32) continue;  // fp8 K/V go with 16-bit q
        for (bool causal : {false, true}) {
          Case c;
          c.entry = e;
          c.qo_lens = {37};
          c.kv_lens = {300};
          c.num_qo_heads = 4;
          c.num_kv_heads = 2;
          c.head_dim = 128;
          c.dtype = dt;
          if (kv > 0) c.kv_dtype = kv == 1 ? DType::kE4M3 : DType::kE5M2;
          c.causal = causal;
          c.page_size = 16;
          c.seed = 4400 + static_cast<uint64_t>(++seed);
          cases.push_back(c);
        }
      }
  return cases;
}

}  // namespace flashband::testing
