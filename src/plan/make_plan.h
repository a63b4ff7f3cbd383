// make_plan(): the host work shared by every entry point -- validate the index arrays,
// derive per-request lengths, normalise the window, select the backend and let it plan.
#pragma once
#include <functional>
#include <memory>

#include "plan/plan.h"

namespace flashband::detail {

struct PlanRequest {
  Op op = Op::kSinglePrefill;
  int batch = 0;
  const int32_t* qo_indptr = nullptr;  // null for decode (one query per request)
  const int32_t* kv_indptr = nullptr;  // ragged ops
  const PagedIndex* pages = nullptr;   // paged ops
  BatchShape shape;
  Options opts;
  std::shared_ptr<PageStatus> page_status;  // paged with device indices: the object's word
};

std::shared_ptr<Plan> make_plan(const PlanRequest& request, const Workspace& workspace);

// make_plan in two steps, for callers that know the tensors at plan time (single_prefill):
// prepare_plan does the host work and selection; the caller may bind tensors into
// plan.params (so backends that bake strides into what they build see the real ones); then
// finish_plan lets the chosen backend plan.
std::shared_ptr<Plan> prepare_plan(const PlanRequest& request);
void finish_plan(Plan& plan, const Workspace& workspace);

// Calls attempt(0), attempt(1), ... until one returns, and returns the refusals it passed
// ("\n  " before each). With `fallback` (backend auto), an Error(kUnsupported) moves on to
// the next candidate; any other error, or a refusal by the last candidate, propagates, the
// latter naming every earlier refusal too.
std::string first_accepting(std::size_t n, bool fallback, const std::function<void(std::size_t)>& attempt);

// What the plan's runs will launch, and why that backend (RunInfo::selection).
RunInfo planned_info(const Plan& plan);

}  // namespace flashband::detail
