// The custom-mask grid (issue 66): single, ragged and paged prefill x window (none, left,
// right, two-sided) x soft cap x GQA x mask density, with sinks and fp8 K/V on some cases,
// batches with empty requests and rows that see no key, as Cases that the cpu grid
// (tests/unit/custom_mask_test.cpp) runs against the fp64 oracle's own mask.
#pragma once
#include <vector>

#include "case.h"

namespace flashband::testing {

std::vector<Case> custom_mask_cases(const std::vector<DType>& dtypes);

// Masks of density 0 (every row sees nothing) and 1 (all but the hidden row 0), single,
// ragged and paged (page sizes 1 and 16), GQA, soft cap, density 1 with and without a window.
std::vector<Case> mask_extreme_cases(const std::vector<DType>& dtypes);

// Tree-verify masks (Case::mask_tree): up to 64 draft rows over prefixes of a few tiles,
// batches mixing prefix lengths (none, off tile edges), GQA groups 1 to 8, head dims 64 to
// 256, pages of 1 and 16, with soft cap or a window on some.
std::vector<Case> tree_verify_cases(const std::vector<DType>& dtypes);

// One long request per case (kv_len in the thousands, 3 random rows or 64 tree rows) that GPU planners
// cut into KV splits: each split masks its own keys and the partial states merge as before.
std::vector<Case> mask_split_cases(const std::vector<DType>& dtypes);

}  // namespace flashband::testing
