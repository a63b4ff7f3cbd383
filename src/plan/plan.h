// Plan: the plain data a batch plan() produces and run() consumes. Host vectors hold the
// validated index arrays; `params` holds everything about the launch except the tensors,
// with index pointers already aimed at the memory of the backend that runs (host vectors
// for cpu, the caller's workspace for GPU backends).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/params.h"
#include "dispatch/auto_order.h"
#include "dispatch/registry.h"
#include "dispatch/select.h"
#include "flashband/config.h"
#include "flashband/attention.h"
#include "flashband/capability.h"

namespace flashband::detail {

struct WorkspaceClaim;  // plan/workspace_claim.h
class PageStatus;      // plan/page_status.h

struct Plan {
  ProblemDesc problem;  // window normalised against max_kv_len
  BatchShape shape;
  Options opts;         // as given, with sm_scale resolved
  int batch = 0;

  std::vector<int32_t> qo_indptr;      // [batch + 1]
  std::vector<int32_t> kv_indptr;      // ragged token offsets or page offsets, [batch + 1]
  std::vector<int32_t> page_indices;   // paged only; empty when only device indices were given
  const int32_t* device_page_indices = nullptr;  // PagedIndex::device_indices
  // The batch object's status word (plan/page_status.h) when runs read device indices.
  std::shared_ptr<PageStatus> page_status_owner;
  int* page_status = nullptr;
  std::vector<int32_t> last_page_len;  // paged only
  std::vector<int32_t> kv_lens;        // [batch]
  int page_size = 0;
  int num_pages = 0;
  int max_page_index = -1;
  int64_t total_kv_tokens = 0;         // ragged only
  // Options::custom_mask: request b's packed bits start at byte mask_indptr[b];
  // mask_indptr[batch] is the length run() requires of the mask tensor.
  std::vector<int64_t> mask_indptr;

  Backend backend = Backend::kCPU;
  dispatch::KernelEntry kernel;
  std::vector<dispatch::Selection> candidates;  // what `auto` may fall back to, in order
  std::string selection;               // RunInfo::selection: why this backend
  bool chosen_by_auto = false;         // auto chose (or, under cuda_graph, kept) the backend
  const dispatch::AutoRule* auto_rule = nullptr;  // auto's order for this problem (auto_order.h)
  core::AttentionParams params;        // tensors filled in by run()
  std::shared_ptr<void> backend_state; // e.g. a cuDNN graph, owned by the plan
  // RunInfo::variant, built once per plan: the kernel key, plus what the backend's planner
  // appends of its own choices (sm90: "/tileMxN", chosen by shape for some keys).
  std::string variant;
  // What a launch reads from backend_state, as "name=value;" fields (plan/launch_signature.h):
  // finish_plan() asks the backends whose launch reads host state (sm90, cudnn), for
  // Options::cuda_graph plans (the guard's only reader; empty otherwise).
  std::string state_signature;
  // This plan's hold on the workspace it wrote (null on the host or without one).
  std::shared_ptr<WorkspaceClaim> claim;
};

}  // namespace flashband::detail
