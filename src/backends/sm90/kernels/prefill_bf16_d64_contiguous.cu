#include "backends/sm90/launch_prefill.cuh"

FLASHBAND_SM90_PREFILL(kBF16, 64, false)
