#include "backends/sm90/launch_prefill.cuh"

// The narrow contiguous D = 256 tile (64 keys) with the runtime mask and soft cap, for
// masked problems shorter than kWideContiguousMinLength (tile_config.h).
FLASHBAND_SM90_PREFILL(kBF16, 256, false)
