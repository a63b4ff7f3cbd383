// Wide KV tiles (tile_config.h): non-default wgmma N, so the extended shapes are switched on
// for this file only (the selector would otherwise fall back to narrow atoms).
#define CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED
#include "backends/sm90/launch_prefill.cuh"

// The 80-key tile on gathered pages with the causal / window mask (tile_config.h
// kWideMasked, kWidePagedGatherOnly).
FLASHBAND_SM90_PREFILL_WIDE(kF16, 256, true)
