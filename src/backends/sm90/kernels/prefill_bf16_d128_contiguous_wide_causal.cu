// Wide KV tiles (tile_config.h): non-default wgmma N, so the extended shapes are switched on
// for this file only (the selector would otherwise fall back to narrow atoms).
#define CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED
#include "backends/sm90/launch_prefill.cuh"

// The 176-key tile of contiguous K/V for causal problems without a window or soft cap: the
// window's arithmetic and the soft cap fold away (tile_config.h kCausalKernel).
FLASHBAND_SM90_PREFILL_WIDE_CAUSAL(kBF16, 128, false)
