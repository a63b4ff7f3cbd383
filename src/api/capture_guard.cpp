#include "api/capture_guard.h"

#include <string>
#include <utility>

#include "flashband/config.h"
#include "flashband/error.h"
#include "plan/launch_signature.h"
#if FLASHBAND_WITH_SM80
#include <cuda_runtime_api.h>
#endif

namespace flashband::detail {

bool stream_is_capturing(void* stream) {
#if FLASHBAND_WITH_SM80
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

void note_capture(std::shared_ptr<const Plan>& captured, const std::shared_ptr<const Plan>& plan, bool capturing) {
  if (capturing && plan->opts.cuda_graph) captured = plan;
}

void check_capture(std::shared_ptr<const Plan>& captured, const Plan& next) {
  if (!captured) return;
  const std::string diff = signature_difference(launch_signature(*captured), launch_signature(next));
  if (diff.empty()) return;
  captured.reset();
  throw Error(ErrorCode::kUnsupported,
              "cuda_graph: a CUDA graph captured run() under the previous plan, and this plan launches "
              "differently (" + diff + "), so replaying that graph would compute the wrong problem; this "
              "plan is in place for run(), capture run() again before replaying (with cuda_graph, a plan "
              "may change only what the kernel reads from the workspace: page indices, and lengths "
              "that leave every launch argument as it was)");
}

void install_plan(std::shared_ptr<const Plan>& plan, std::shared_ptr<const Plan>& captured,
                  std::shared_ptr<const Plan> next) {
  plan = std::move(next);  // in place even when the check throws: the workspace holds it now
  check_capture(captured, *plan);
}

void after_run(std::shared_ptr<const Plan>& captured, const std::shared_ptr<const Plan>& plan) {
  // Only cuda_graph plans pay for the query.
  if (plan->opts.cuda_graph && plan->shape.device == Device::kCUDA)
    note_capture(captured, plan, stream_is_capturing(plan->params.stream));
}

}  // namespace flashband::detail
