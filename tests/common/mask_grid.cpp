#include "mask_grid.h"

#include "sink_grid.h"

namespace flashband::testing {

std::vector<Case> custom_mask_cases(const std::vector<DType>& dtypes) {
  const EntryPoint entries[] = {EntryPoint::kSingle, EntryPoint::kRagged, EntryPoint::kPaged};
  // {window_left, window_right}: the mask is ANDed with each side (SPEC.md "Custom masks").
  const int windows[][2] = {{-1, -1}, {6, -1}, {-1, 4}, {9, 2}};
  const double densities[] = {0.5, 0.2, 0.85};
  std::vector<Case> cases;
  int k = 0;
  for (EntryPoint e : entries)
    for (const auto& w : windows)
      for (bool cap : {false, true}) {
        Case c;
        c.entry = e;
        // Lengths off every tile edge, qo_len > kv_len, and (batches) an empty request and a
        // request without keys, whose segments are empty.
        if (e == EntryPoint::kSingle) {
          c.qo_lens = {k % 2 ? 37 : 9};
          c.kv_lens = {k % 2 ? 23 : 70};
        } else {
          c.qo_lens = {17, 30, 0, 5, 3};
          c.kv_lens = {70, 11, 9, 0, 131};
        }
        c.window_left = w[0];
        c.window_right = w[1];
        if (cap) c.logits_soft_cap = 3.0f;
        c.mask_density = densities[k % 3];
        rotate_shape(c, k, dtypes);
        if (k % 4 == 3) c.sinks = sink_values(c.num_qo_heads, k);
        // fp8 K/V (16-bit q only), with scales that the mask must not disturb.
        if (k % 5 == 2 && c.dtype != DType::kF32) {
          c.kv_dtype = k % 2 ? DType::kE5M2 : DType::kE4M3;
          c.k_scale = 0.37f;
          c.v_scale = 3.1f;
        }
        c.seed = 1100 + k;
        cases.push_back(c);
        ++k;
      }
  return cases;
}

}  // namespace flashband::testing
