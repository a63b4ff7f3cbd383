// What the batch classes do around plan() and run() beyond planning and launching: the
// workspace claims (plan/workspace_claim.h) and Options::cuda_graph. run() notes the plan a
// CUDA graph captures; plan() refuses a new plan whose launch differs from the captured one
// (launch_signature), since a replay would launch the old plan's kernel and arguments over
// the new plan's arrays in the workspace, and a paged plan naming a page past the captured
// cache, since a replay skips run()'s check of the cache.
#pragma once
#include <cstdint>
#include <memory>

#include "core/params.h"
#include "plan/make_plan.h"
#include "plan/plan.h"

namespace flashband::detail {

// What a capture holds: the plan (kept, as a replay may still need what it owns, such as a
// cuDNN graph) and the pages of the cache the captured run read (0 for contiguous K/V).
struct Capture {
  std::shared_ptr<const Plan> plan;
  int64_t cache_pages = 0;
};

// Whether work issued on `stream` (a cudaStream_t) is being captured into a CUDA graph.
bool stream_is_capturing(void* stream);

// run() of `plan` with the launch's bound parameters `bound` and `capturing` =
// stream_is_capturing of its stream: under opts.cuda_graph, the capture now holds this run.
void note_capture(std::shared_ptr<const Capture>& captured, const std::shared_ptr<const Plan>& plan,
                  const core::AttentionParams& bound, bool capturing);

// plan() produced `next` (already in the workspace): throws when a captured launch would
// differ from next's, or next names a page the captured cache lacks, after forgetting the
// capture (its replays are wrong from now on).
void check_capture(std::shared_ptr<const Capture>& captured, const Plan& next);

// Installs `next` (already in the workspace) as `plan`, then check_capture.
void install_plan(std::shared_ptr<const Plan>& plan, std::shared_ptr<const Capture>& captured,
                  std::shared_ptr<Plan> next);

// The batch classes' plan(): the workspace checks and claim (plan/workspace_claim.h) around
// make_plan, then install_plan. `owner` is the batch object's token (copies share it).
// Under cuda_graph an auto request keeps the backend of the object's previous cuda_graph
// plan (RunInfo::selection then begins "auto: kept").
void plan_into(std::shared_ptr<const Plan>& plan, std::shared_ptr<const Capture>& captured,
               const PlanRequest& request, const Workspace& workspace, const std::shared_ptr<const void>& owner);

// The batch classes' run(): before binding, refuses a plan whose workspace a later plan wrote
// over; after a launch, notes a capture.
void before_run(const std::shared_ptr<const Plan>& plan);
void after_run(std::shared_ptr<const Capture>& captured, const std::shared_ptr<const Plan>& plan,
               const core::AttentionParams& bound);

}  // namespace flashband::detail
