// Wide KV tiles (tile_config.h): non-default wgmma N, so the extended shapes are switched on
// for this file only (the selector would otherwise fall back to narrow atoms).
#define CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED
#include "backends/sm90/launch_prefill.cuh"

// The 176-key tile of contiguous K/V with the causal / window mask (tile_config.h kWideMasked).
FLASHBAND_SM90_PREFILL_WIDE(kF16, 128, false)
