#include "run/launch.h"

#include "dispatch/registry.h"
#include "plan/make_plan.h"

namespace flashband::detail {

RunInfo launch(const Plan& plan, const core::AttentionParams& params) {
  dispatch::check_kernel_fits(plan.kernel, params);
  // No query rows (batch 0, or only empty requests): nothing to compute or write.
  if (params.total_qo_tokens > 0) plan.kernel.launch(params);
  RunInfo info = planned_info(plan);
  info.num_kv_splits = params.num_kv_splits;
  return info;
}

}  // namespace flashband::detail
