// SPEC.md "NaN and infinity": a NaN in one element of key j makes the output of every row that
// sees key j NaN (split-KV partials carry it as LSE NaN, never as the empty state); a NaN in
// element d of value j makes element d of those rows NaN; every other output is what it is
// without the NaN. Shared by the cpu test (tests/unit/non_finite_test.cpp) and the GPU tests.
#pragma once
#include <string>
#include <vector>

#include "case.h"

namespace flashband::testing {

struct NonFiniteCheck {
  int wrong = 0;      // outputs that differ from what SPEC.md says
  std::string first;  // the first few of them, for the failure message
};

// Runs `c` (one request; causal or not, no window, no sinks or mask) twice through the public
// API: as made, then with NaN in element `dim` of kv head 0's key `key` (in_k) or value
// `key` (else), and checks every output of the second run against the first.
NonFiniteCheck check_one_nan(const Case& c, bool in_k, int key, int dim);

// The cases both run: every entry point x `dtypes` (16-bit K/V, and fp8 K/V under 16-bit q) x
// causal or not, one request of 37 rows over 300 keys (decode: one row), Hq 4 / Hk 2, D 128.
// The key the NaN goes into (kNanKey) is seen by rows 17 on when causal.
std::vector<Case> non_finite_cases(const std::vector<DType>& dtypes);
inline constexpr int kNanKey = 280;
inline constexpr int kNanDim = 5;

}  // namespace flashband::testing
