// The fp8 KV grid (issue 65), one list for the cpu backend (tests/unit/fp8_kv_grid_test.cpp)
// and the GPU backends (tests/gpu/fp8_kv_grid_test.cpp): e4m3 and e5m2 x q fp16 and bf16 x
// causal x window {-1, 0, 31, 127} x soft cap x scales {1.0, 0.37, 3.1} in full, on every
// entry point, paged ones at page sizes {1, 5, 16, 128}; head dim, layout, GQA, stacked
// caches and scale tensors rotate through it. Paged caches hold NaN in every unused slot
// (kv_layout.h), so a kernel that reads past a request's last key fails.
#pragma once
#include <string>
#include <vector>

#include "case.h"

namespace flashband::testing {

// head_dims: those the backends under test serve (rotated through the grid).
std::vector<Case> fp8_grid_cases(const std::vector<int>& head_dims);

// A case with k_scale 0.37 and v_scale 3.1 (fp8 `kv`, bf16 q; scale tensors if asked).
Case fp8_scaled_case(EntryPoint e, DType kv, bool tensors);

// Runs `c` once and judges its output against the oracle with the case's own scales and
// with (k_judged, v_judged): a backend that applies the scales passes the first only.
struct ScaleJudgement {
  bool passes_own = false;
  bool passes_judged = false;
  std::string own_failure;
};
ScaleJudgement judge_with_scales(const Case& c, float k_judged, float v_judged);
// As judge_with_scales, the second reference made from `judged` (c with any input changed).
ScaleJudgement judge_as(const Case& c, const Case& judged);

}  // namespace flashband::testing
