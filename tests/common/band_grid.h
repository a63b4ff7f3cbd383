// The two-sided window grid (issue 66): every entry point x causal x window_left x
// window_right, and FlashInfer's decode with q_len_per_req > 1, as Cases that the cpu grid
// (tests/unit/cpu_grid_test.cpp) and the GPU grid (tests/gpu/attention_grid_test.cpp) both run.
#pragma once
#include <vector>

#include "case.h"

namespace flashband::testing {

inline constexpr int kBandRights[] = {-1, 0, 1, 7, 128};
inline constexpr int kBandLefts[] = {-1, 0, 31, 127};

// causal takes only window_right -1 and 0 (a wider right bound beside it is refused). The
// other axes (dtype from `dtypes`, head dim, layout, page size, GQA, soft cap) rotate through
// the cases; lengths are chosen so that each window_right clips some row.
std::vector<Case> band_cases(const std::vector<DType>& dtypes);

}  // namespace flashband::testing
