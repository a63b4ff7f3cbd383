#include "backends/sm90/launch_prefill.cuh"

// Paged K/V on the 192-row, three-consumer D = 64 tile, for problems without a mask
// (tile_config.h kWidePaged).
FLASHBAND_SM90_PREFILL_WIDE_UNMASKED(kBF16, 64, true)
