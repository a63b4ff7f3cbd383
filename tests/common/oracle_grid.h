// The one-sided window grid that the cpu grid (tests/unit/cpu_grid_test.cpp) and the GPU grid
// (tests/gpu/attention_grid_test.cpp) both run against the fp64 oracle: entry point x causal x
// window_left {-1, 0, 1, 31, 127, >= kv_len} x dtype (from `dtypes`) x head dim {64, 128, 256}
// in full, with layout, page size {1, 5, 16, 128}, GQA shape, lengths and soft cap rotated
// through it (different periods, so their combinations vary). Lengths cross the sm80 tile
// edges (64/128 rows, 64 keys) and batches include empty requests.
#pragma once
#include <vector>

#include "case.h"

namespace flashband::testing {

inline constexpr int kNoOpWindow = 1000;  // >= every kv_len of the grid: the window changes nothing
inline constexpr int kGridWindows[] = {-1, 0, 1, 31, 127, kNoOpWindow};

std::vector<Case> oracle_grid(const std::vector<DType>& dtypes);

}  // namespace flashband::testing
