#include "backends/sm90/launch_prefill.cuh"

// The 192-row, three-consumer D = 64 tile for causal problems without a window or soft cap
// (where it pays: plan.cpp wide_masked_pays): the window's arithmetic and the soft
// cap fold away (tile_config.h kCausalKernel).
FLASHBAND_SM90_PREFILL_WIDE_CAUSAL(kF16, 64, false)
