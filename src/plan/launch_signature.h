// The launch signature of a plan: every value a launch of it bakes into a CUDA graph that
// captures the launch, other than the run's tensors. A captured launch reads its device
// arrays (lengths, page tables, work lists) from the workspace when replayed, but its
// kernel, grid and arguments are the ones it was captured with. So a graph captured under
// plan A computes plan B's problem on replay exactly when B writes its arrays to the same
// workspace addresses and launches with the same arguments: when the two signatures are
// equal. Options::cuda_graph checks this (api/capture_guard.h).
#pragma once
#include <string>

#include "plan/plan.h"

namespace flashband::detail {

// "name=value;" fields: the backend and kernel variant, the plan's scalars, every launch
// parameter the plan sets (AttentionParams, with the workspace addresses of its arrays; the
// tensors and the stream are the run's, not the plan's) and the backend's state_signature.
std::string launch_signature(const Plan& plan);

// The first field in which two signatures differ, as "name: a vs b"; empty when equal.
std::string signature_difference(const std::string& a, const std::string& b);

}  // namespace flashband::detail
