// The custom-mask grid (issue 66): single, ragged and paged prefill x window (none, left,
// right, two-sided) x soft cap x GQA x mask density, with sinks and fp8 K/V on some cases,
// batches with empty requests and rows that see no key, as Cases that the cpu grid
// (tests/unit/custom_mask_test.cpp) runs against the fp64 oracle's own mask.
#pragma once
#include <vector>

#include "case.h"

namespace flashband::testing {

std::vector<Case> custom_mask_cases(const std::vector<DType>& dtypes);

}  // namespace flashband::testing
