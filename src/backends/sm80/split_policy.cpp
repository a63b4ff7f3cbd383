#include "backends/sm80/split_policy.h"

#include <algorithm>

namespace flashband::sm80 {

int choose_kv_splits(const SplitInputs& in) {
  if (in.items <= 0 || in.max_tiles <= 1 || in.slots <= 0) return 1;
  const double avg = static_cast<double>(in.total_tiles) / static_cast<double>(in.items);
  auto estimate = [&](int s) {
    const double waves = static_cast<double>((in.items * s + in.slots - 1) / in.slots);
    const double throughput = waves * (avg / s + 1.0);
    const double critical = static_cast<double>(in.max_tiles) / s + 1.0;
    return std::max(throughput, critical) * (s > 1 ? 1.15 : 1.0);
  };
  int best = 1;
  double best_cost = estimate(1);
  for (int s = 2; s <= in.max_splits; ++s) {
    if (in.max_tiles < static_cast<int64_t>(s) * in.min_tiles_per_split) break;
    const double c = estimate(s);
    if (c < best_cost) {
      best_cost = c;
      best = s;
    }
  }
  return best;
}

int wave_kv_splits(const SplitInputs& in) {
  if (in.items <= 0 || in.slots <= in.items) return 1;
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(in.max_splits, in.slots / in.items)));
}

}  // namespace flashband::sm80
