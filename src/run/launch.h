// The last step of every run(): the kernel chosen at plan time, launched on bound params.
#pragma once
#include "plan/plan.h"

namespace flashband::detail {

// Checks that the kernel chosen at plan time may receive these params (the needs_mask
// guard), launches it and reports what ran.
RunInfo launch(const Plan& plan, const core::AttentionParams& params);

}  // namespace flashband::detail
