#include "run/capture_guard.h"

#include <algorithm>
#include <string>
#include <utility>

#include "flashband/config.h"
#include "flashband/error.h"
#include "plan/launch_signature.h"
#include "plan/workspace_claim.h"
#if FLASHBAND_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace flashband::detail {

bool stream_is_capturing(void* stream) {
#if FLASHBAND_WITH_CUDA
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &status) != cudaSuccess) {
    cudaGetLastError();  // a stream that cannot be queried is not capturing for us
    return false;
  }
  return status == cudaStreamCaptureStatusActive;
#else
  (void)stream;
  return false;
#endif
}

void note_capture(std::shared_ptr<const Capture>& captured, const std::shared_ptr<const Plan>& plan,
                  const core::AttentionParams& bound, bool capturing) {
  if (!capturing || !plan->opts.cuda_graph) return;
  if (plan->claim) plan->claim->captured = true;  // no other object may write over it now
  auto c = std::make_shared<Capture>();
  c->plan = plan;
  if (bound.kv_storage == core::KVStorage::kPaged) c->cache_pages = std::min(bound.k_num_pages, bound.v_num_pages);
  captured = std::move(c);
}

void check_capture(std::shared_ptr<const Capture>& captured, const Plan& next) {
  if (!captured) return;
  std::string why = signature_difference(launch_signature(*captured->plan), launch_signature(next));
  if (why.empty() && next.params.kv_storage == core::KVStorage::kPaged && next.max_page_index >= captured->cache_pages)
    why = "page index " + std::to_string(next.max_page_index) + " is past the captured cache's " +
          std::to_string(captured->cache_pages) + " pages";
  if (why.empty()) return;
  captured.reset();
  throw Error(ErrorCode::kUnsupported,
              "cuda_graph: a CUDA graph captured run() under the previous plan, and this plan launches "
              "differently (" + why + "), so replaying that graph would compute the wrong problem; this "
              "plan is in place for run(), capture run() again before replaying (with cuda_graph, a plan "
              "may change only what the kernel reads from the workspace: page indices within the "
              "captured cache, and lengths that leave every launch argument as it was)");
}

void install_plan(std::shared_ptr<const Plan>& plan, std::shared_ptr<const Capture>& captured,
                  std::shared_ptr<Plan> next) {
  plan = next;  // in place even when the check throws: the workspace holds it now
  try {
    check_capture(captured, *next);
  } catch (...) {
    if (next->claim) next->claim->captured = false;  // the capture is forgotten
    throw;
  }
}

void plan_into(std::shared_ptr<const Plan>& plan, std::shared_ptr<const Capture>& captured,
               const PlanRequest& request, const Workspace& workspace, const std::shared_ptr<const void>& owner) {
  // Host plans keep their arrays in the plan, not the workspace.
  const bool device = request.shape.device == Device::kCUDA;
  if (device) check_workspace_free(workspace, owner);
  // Under cuda_graph, auto chooses once per object: its first plan's backend serves every
  // later plan (or that backend's refusal names why), so a replayed graph never meets a plan
  // that auto moved to another backend (padded batches, growing lengths).
  PlanRequest r = request;
  const bool keep = r.opts.cuda_graph && r.opts.backend == Backend::kAuto && plan && plan->opts.cuda_graph &&
                    plan->chosen_by_auto;
  if (keep) r.opts.backend = plan->backend;
  std::shared_ptr<Plan> next = make_plan(r, workspace);
  if (keep) {
    next->chosen_by_auto = true;
    static const std::string kept = "auto: kept ";
    next->selection = plan->selection.compare(0, kept.size(), kept) == 0
                          ? plan->selection
                          : kept + backend_name(plan->backend) + ", chosen by this object's first cuda_graph plan: " +
                                plan->selection;
  }
  if (device) next->claim = claim_workspace(workspace, owner, captured != nullptr);
  install_plan(plan, captured, std::move(next));
}

void before_run(const std::shared_ptr<const Plan>& plan) {
  if (!plan) throw Error(ErrorCode::kInvalidArgument, "run: plan() has not been called");
  check_claim(plan->claim.get());
}

void after_run(std::shared_ptr<const Capture>& captured, const std::shared_ptr<const Plan>& plan,
               const core::AttentionParams& bound) {
  // Only cuda_graph plans pay for the query.
  if (plan->opts.cuda_graph && plan->shape.device == Device::kCUDA)
    note_capture(captured, plan, bound, stream_is_capturing(bound.stream));
}

}  // namespace flashband::detail
