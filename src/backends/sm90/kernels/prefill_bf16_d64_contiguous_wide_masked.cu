#include "backends/sm90/launch_prefill.cuh"

// Contiguous K/V on the 192-row, three-consumer D = 64 tile, with the causal / window
// mask: masked problems where its schedule pays (plan.cpp wide_masked_pays).
FLASHBAND_SM90_PREFILL_WIDE(kBF16, 64, false)
