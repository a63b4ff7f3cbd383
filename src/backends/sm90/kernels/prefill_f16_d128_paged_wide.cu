// Wide KV tiles (tile_config.h): non-default wgmma N, so the extended shapes are switched on
// for this file only (the selector would otherwise fall back to narrow atoms).
#define CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED
#include "backends/sm90/launch_prefill.cuh"

// The 176-key tile on gathered pages without a causal / window mask, from 2048 keys: the
// mask folds away (tile_config.h kWidePagedGatherOnly, kWidePagedMinLength). Masked paged
// problems keep the narrow tile (kWidePagedMasked).
FLASHBAND_SM90_PREFILL_WIDE_UNMASKED(kF16, 128, true)
