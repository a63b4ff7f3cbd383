// How many pieces the planner cuts each row tile's KV range into (split-KV), as a plain
// host function so tests/unit can pin it down.
#pragma once
#include <cstdint>

namespace flashband::sm80 {

// Limits that also bound sm80_workspace_bytes.
constexpr int kMaxKVSplits = 64;
constexpr int64_t kMaxSplitWorkItems = 1 << 15;       // work items of a split plan
constexpr int64_t kMaxPartialRowSplits = int64_t{1} << 16;  // (token, head) rows x splits
constexpr int kMinKeysPerSplit = 256;  // below this the merge costs more than it saves

struct SplitInputs {
  int64_t items = 0;        // work items without splitting (row tiles x kv heads)
  int64_t total_tiles = 0;  // KV tiles summed over those items
  int64_t max_tiles = 0;    // KV tiles of the longest item
  int64_t slots = 1;        // CTAs resident at once: SMs x CTAs per SM
  int min_tiles_per_split = 1;
  int max_splits = kMaxKVSplits;  // after workspace and work-list limits
};

// Minimises an estimated makespan in tile units: waves x (average item / s) against the
// critical path (longest item / s), plus one tile of fixed cost per CTA, and charges
// splitting 15% for the partial results and the merge. Returns 1 when splitting does not
// pay (enough row tiles to fill the GPU).
int choose_kv_splits(const SplitInputs& in);

// The split count of a cuda_graph plan, which must not follow the lengths: a captured launch
// keeps its grid and its merge, and later plans over longer caches must launch alike. As
// many splits as fill one wave of `slots` CTAs (items x splits <= slots), within
// max_splits; splits past a short span are empty and merge as the empty state.
int wave_kv_splits(const SplitInputs& in);

}  // namespace flashband::sm80
