// How much workspace an sm80 batch plan can need (host-only; batch_workspace_bytes adds it).
#pragma once
#include <cstddef>
#include <cstdint>

namespace flashband::sm80 {

// Upper bound for plans with at most these sizes: the index arrays, the work list and the
// split-KV partial results. Paged plans also copy their page indices, 4 bytes each
// (sm80_page_index_bytes); a plan that finds less room uses fewer KV splits, and fails
// with Error(kInvalidArgument) naming the bytes it needs only when the arrays alone do not
// fit.
std::size_t sm80_workspace_bytes(int max_batch, int64_t max_qo_tokens, int num_qo_heads, int head_dim);
// The index arrays and the work list alone: what a separate Workspace::plan_data needs
// (plus sm80_page_index_bytes).
std::size_t sm80_plan_bytes(int max_batch, int64_t max_qo_tokens, int num_qo_heads);
std::size_t sm80_page_index_bytes(int64_t num_page_indices);

}  // namespace flashband::sm80
