#include "backends/sm90/launch_prefill.cuh"

// The narrow contiguous D = 256 tile without masks, for problems without a mask or soft
// cap whose keys are shorter than kWideContiguousMinLength (tile_config.h kNarrowFoldsMask).
FLASHBAND_SM90_PREFILL_UNMASKED(kBF16, 256, false)
