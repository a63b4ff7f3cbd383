#include "backends/sm90/launch_prefill.cuh"

// The narrow contiguous tile for problems without a causal / window mask or soft cap whose
// keys are short enough that narrow_unmasked_pays: the mask folds away (tile_config.h
// kNarrowFoldsMask).
FLASHBAND_SM90_PREFILL_UNMASKED(kBF16, 128, false)
