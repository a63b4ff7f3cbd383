#include "api/capture_guard.h"

#include <algorithm>
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

void note_capture(std::shared_ptr<const Capture>& captured, const std::shared_ptr<const Plan>& plan,
                  const core::AttentionParams& bound, bool capturing) {
  if (!capturing || !plan->opts.cuda_graph) return;
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
                  std::shared_ptr<const Plan> next) {
  plan = std::move(next);  // in place even when the check throws: the workspace holds it now
  check_capture(captured, *plan);
}

void after_run(std::shared_ptr<const Capture>& captured, const std::shared_ptr<const Plan>& plan,
               const core::AttentionParams& bound) {
  // Only cuda_graph plans pay for the query.
  if (plan->opts.cuda_graph && plan->shape.device == Device::kCUDA)
    note_capture(captured, plan, bound, stream_is_capturing(plan->params.stream));
}

}  // namespace flashband::detail
