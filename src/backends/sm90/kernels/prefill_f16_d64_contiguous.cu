#include "backends/sm90/launch_prefill.cuh"

FLASHBAND_SM90_PREFILL(kF16, 64, false)
