// Median wall time of a callable: CUDA events on the GPU (so host launch overhead between
// iterations does not count), steady_clock on the host.
#pragma once
#include <functional>

#include "flashband/tensor.h"

namespace flashband::testing {

double median_ms(Device device, int warmup_iters, int timed_iters, const std::function<void()>& fn);

}  // namespace flashband::testing
