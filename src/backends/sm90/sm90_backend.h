// What the rest of flashband sees of the sm90 backend: workspace sizing, the host-side plan
// state a launch reads, and the launch function of each compiled kernel.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/sm90/tile_shapes.h"
#include "backends/sm90/work_list.h"
#include "core/params.h"
#include "flashband/attention.h"
#include "flashband/tensor.h"

namespace flashband::sm90 {

struct CompiledKernel;

// Upper bound of workspace an sm90 batch plan needs for these maxima: index arrays, work
// list and split-KV partial states. Paged plans also copy their page indices
// (sm90_page_index_bytes). A plan that finds less room uses fewer KV splits, and fails with
// Error(kInvalidArgument) naming the bytes it needs only when the arrays alone do not fit.
std::size_t sm90_workspace_bytes(int max_batch, int64_t max_qo_tokens, int num_qo_heads, int head_dim);
// The index arrays and the work list alone: what a separate Workspace::plan_data needs
// (plus sm90_page_index_bytes).
std::size_t sm90_plan_bytes(int max_batch, int64_t max_qo_tokens, int head_dim);
std::size_t sm90_page_index_bytes(int64_t num_page_indices);

// Limits that bound the split-KV part of sm90_workspace_bytes.
constexpr int kMaxKVSplits = 32;
constexpr int kMaxMultiprocessors = 256;  // any Hopper part has fewer
constexpr int kMinKVTilesPerSplit = 4;    // below this the merge costs more than it saves

// Host state of a plan: owned by Plan::backend_state, reached through
// AttentionParams::work. Everything a launch needs that AttentionParams does not carry.
struct PlanState {
  const WorkItem* items = nullptr;  // device work list; nullptr: one request, derived in-kernel
  int num_items = 0;                // query tiles x splits (without heads)
  int64_t total_kv_tokens = 0;      // contiguous K/V rows addressable through TMA
  int num_sms = 0;
  int num_splits = 1;
  int block_m = 0;                  // query tile rows the work list was built for (tile_shapes.h)
  int block_n = 0;                  // KV tile width the work list was built for
  const CompiledKernel* kernel = nullptr;  // what the launch runs (tile_rule.h choose_kernel)
  float* partial_o = nullptr;       // split-KV states in the workspace
  float* partial_lse = nullptr;
  // Custom mask: each work item's request's byte offset into the bits (device, beside the
  // work list; nullptr without a list), and the bytes run()'s mask tensor holds.
  const int64_t* mask_offsets = nullptr;
  int64_t mask_bytes = 0;
  std::vector<WorkItem> host_items; // what was uploaded (for inspection and tests)
  std::vector<int64_t> host_mask_offsets;
};

// The launch of one compiled kernel (dtype x head dim x storage x tile x mask kind x K/V element), the
// launch column of its compiled_kernels.h row; each is explicitly instantiated in the
// kernels/*.cu file CMake generates for its kernel_list.h row.
template <DType kDType, int kHeadDim, bool kPaged, bool kWide = false, MaskKind kMask = MaskKind::kAny,
          bool kFp8KV = false>
void launch_prefill(const core::AttentionParams& params);

}  // namespace flashband::sm90

// Connects the backend to dispatch (backend_ops.cpp).
namespace flashband {
namespace detail {
struct Plan;
void plan_sm90(Plan& plan, const Workspace& workspace);
std::string state_signature_sm90(const Plan& plan);
}  // namespace detail
namespace dispatch {
class Registry;
void register_sm90_kernels(Registry& r);
}  // namespace dispatch
}  // namespace flashband
