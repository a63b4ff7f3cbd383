#include "compare.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace flashband::testing {

Tolerance tolerance_for(DType dtype) {
  switch (dtype) {
    case DType::kF16: return {2e-3, 2e-3, 1e-3, 2e-3};
    case DType::kBF16: return {1.6e-2, 1.6e-2, 8e-3, 1e-2};
    case DType::kF32: return {1e-4, 1e-4, 1e-5, 1e-4};
    default: throw std::invalid_argument(std::string("tolerance_for: ") + dtype_name(dtype));
  }
}

namespace {
std::string where(int64_t flat_row, int heads) {
  std::ostringstream s;
  s << "[token " << flat_row / heads << ", head " << flat_row % heads << "]";
  return s.str();
}
}  // namespace

Comparison compare_attention(const Tolerance& tol, int heads, int head_dim,
                             const std::vector<double>& out, const std::vector<double>& ref,
                             const std::vector<double>& lse, const std::vector<double>& ref_lse,
                             const std::vector<char>& empty) {
  if (out.size() != ref.size() || empty.size() * head_dim != ref.size() ||
      (!lse.empty() && (lse.size() != ref_lse.size() || lse.size() != empty.size())))
    throw std::invalid_argument("compare_attention: sizes do not match");
  Comparison c;
  auto fail = [&c](const std::string& msg) {
    if (c.passed) c.failure = msg;
    c.passed = false;
  };
  const double inf = std::numeric_limits<double>::infinity();
  double err2 = 0.0, ref2 = 0.0;
  const int64_t rows = static_cast<int64_t>(empty.size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int d = 0; d < head_dim; ++d) {
      const int64_t i = r * head_dim + d;
      const double e = std::fabs(out[i] - ref[i]);
      if (empty[r]) {
        if (out[i] != 0.0) {
          std::ostringstream s;
          s << "fully masked row " << where(r, heads) << " d " << d << ": out " << out[i] << ", expected exactly 0";
          fail(s.str());
        }
      } else if (!(e <= tol.atol + tol.rtol * std::fabs(ref[i]))) {
        std::ostringstream s;
        s << "out" << where(r, heads) << " d " << d << " = " << out[i] << ", ref " << ref[i] << ": |err| " << e
          << " > atol + rtol*|ref| = " << tol.atol + tol.rtol * std::fabs(ref[i]);
        fail(s.str());
      }
      if (!(e <= c.max_abs_err)) c.max_abs_err = std::isnan(e) ? inf : e;
      err2 += e * e;
      ref2 += ref[i] * ref[i];
    }
    if (!lse.empty()) {
      if (empty[r] && ref_lse[r] == -inf) {
        if (!(lse[r] == -inf)) {
          std::ostringstream s;
          s << "fully masked row " << where(r, heads) << ": lse " << lse[r] << ", expected exactly -inf";
          fail(s.str());
        }
      } else {
        const double e = std::fabs(lse[r] - ref_lse[r]);
        // Plus float32's own rounding of a large LSE (a sink of -1e4 gives -14427, whose ulp
        // is 1e-3): two ulps of the reference, negligible at ordinary magnitudes.
        const double allowed = tol.lse + 2.0 * std::numeric_limits<float>::epsilon() * std::fabs(ref_lse[r]);
        if (!(e <= allowed)) {
          std::ostringstream s;
          s << "lse" << where(r, heads) << " = " << lse[r] << ", ref " << ref_lse[r] << ": |err| " << e << " > " << allowed;
          fail(s.str());
        }
        if (!(e <= c.lse_max_err)) c.lse_max_err = std::isnan(e) ? inf : e;
      }
    }
  }
  // Every row fully masked leaves nothing to normalise by; the exact-zero checks above hold.
  c.frob_rel_err = ref2 > 0.0 ? std::sqrt(err2 / ref2) : (err2 > 0.0 || std::isnan(err2) ? inf : 0.0);
  if (std::isnan(c.frob_rel_err)) c.frob_rel_err = inf;
  if (!(c.frob_rel_err <= tol.frob)) {
    std::ostringstream s;
    s << "relative Frobenius error " << c.frob_rel_err << " > " << tol.frob;
    fail(s.str());
  }
  return c;
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) throw std::invalid_argument("max_abs_diff: sizes differ");
  double m = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double e = std::fabs(a[i] - b[i]);
    if (std::isnan(e)) return e;
    m = std::max(m, e);
  }
  return m;
}

}  // namespace flashband::testing
