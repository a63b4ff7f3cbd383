// Options::cuda_graph for the batch classes. run() notes the plan a CUDA graph captures;
// plan() refuses a new plan whose launch differs from the captured one (launch_signature),
// since a replay would launch the old plan's kernel and arguments over the new plan's
// arrays in the workspace.
#pragma once
#include <memory>

#include "plan/plan.h"

namespace flashband::detail {

// Whether work issued on `stream` (a cudaStream_t) is being captured into a CUDA graph.
bool stream_is_capturing(void* stream);

// run() of `plan` with `capturing` = stream_is_capturing of its stream: under
// opts.cuda_graph, the capture now holds this plan's launch, so `captured` keeps the plan (a
// replay may still need what it owns, such as a cuDNN graph) for later plans to compare with.
void note_capture(std::shared_ptr<const Plan>& captured, const std::shared_ptr<const Plan>& plan, bool capturing);

// plan() produced `next` (already in the workspace): throws when a captured launch would
// differ from next's, after forgetting the capture (its replays are wrong from now on).
void check_capture(std::shared_ptr<const Plan>& captured, const Plan& next);

// The batch classes' plan() and run() (after a launch), through the two above.
void install_plan(std::shared_ptr<const Plan>& plan, std::shared_ptr<const Plan>& captured,
                  std::shared_ptr<const Plan> next);
void after_run(std::shared_ptr<const Plan>& captured, const std::shared_ptr<const Plan>& plan);

}  // namespace flashband::detail
