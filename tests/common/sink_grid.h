// The attention-sink grid (issue 66): every entry point x causal x window x soft cap x GQA
// with per-head sinks that span very negative, moderate and dominant values, rows that see no
// key, and long single requests that GPU planners split (split-KV), as Cases that the cpu
// grid (tests/unit/sinks_test.cpp) and the GPU grid (tests/gpu/attention_grid_test.cpp) run.
#pragma once
#include <vector>

#include "case.h"

namespace flashband::testing {

// Sinks for `heads` query heads: a rotation of -1e4 (never matters), small ones, and values
// near ln of the row sums (they weigh like all keys together), so every case has a sink
// above 0 and its sink guard (case.h) applies.
std::vector<float> sink_values(int heads, int rotation);

std::vector<Case> sink_cases(const std::vector<DType>& dtypes);

// The shape the k-th case of a grid takes (GQA heads, head dim 64/128/256, dtype from
// `dtypes`, layout, page size 1/8/15), each rotating with its own period so that their
// combinations vary; the sink and mask grids share it.
void rotate_shape(Case& c, int k, const std::vector<DType>& dtypes);

// Cases whose single long request a GPU planner cuts into several KV splits (batch 1, one KV
// head group, short q, kv_len in the thousands), so the sink must be counted once after the
// merge; the cpu backend runs them unsplit.
std::vector<Case> sink_split_cases(const std::vector<DType>& dtypes);

}  // namespace flashband::testing
