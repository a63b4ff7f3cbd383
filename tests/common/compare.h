// SPEC.md "Numerics and how results are checked": the tolerances per dtype and the
// comparison of an output (and its LSE) against the oracle.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "flashband/tensor.h"

namespace flashband::testing {

struct Tolerance {
  double atol;  // element-wise: |out - ref| <= atol + rtol * |ref|
  double rtol;
  double frob;  // ||out - ref|| / ||ref||
  double lse;   // max |lse - ref_lse|
};

// fp16 and bf16 as SPEC.md states them. float32 is not in SPEC.md: float accumulation over a
// few thousand keys stays near 1e-6, so 1e-4 element-wise still catches any real bug.
Tolerance tolerance_for(DType dtype);
// fp8 attention's relative Frobenius bound against the exact fp64 oracle (SPEC.md).
constexpr double kFp8AttentionFrob = 3e-2;

struct Comparison {
  bool passed = true;
  std::string failure;  // the first violated bound, with its position
  double max_abs_err = 0.0;
  double frob_rel_err = 0.0;
  double lse_max_err = 0.0;
};

// out / ref: [rows, heads, head_dim]; lse / ref_lse: [rows, heads] (lse empty: not checked);
// empty: [rows, heads], 1 where the row sees no key and must be exactly 0 with LSE -inf.
// NaN anywhere fails.
Comparison compare_attention(const Tolerance& tol, int heads, int head_dim,
                             const std::vector<double>& out, const std::vector<double>& ref,
                             const std::vector<double>& lse, const std::vector<double>& ref_lse,
                             const std::vector<char>& empty);

// max |a - b| (NaN-propagating: returns NaN if any difference is NaN).
double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace flashband::testing
