#include "backends/sm90/launch_prefill.cuh"

// The 192-row, three-consumer tile of unmasked contiguous K/V (tile_config.h). Its wgmma N
// (128) is a default shape: no extended-shapes switch.
FLASHBAND_SM90_PREFILL_WIDE_UNMASKED(kBF16, 64, false)
