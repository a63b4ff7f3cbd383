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

std::vector<Case> mask_extreme_cases(const std::vector<DType>& dtypes) {
  std::vector<Case> cases;
  int k = 0;
  for (EntryPoint e : {EntryPoint::kSingle, EntryPoint::kRagged, EntryPoint::kPaged})
    for (double density : {0.0, 1.0})
      for (int window : {-1, 20}) {
        if (density == 0.0 && window >= 0) continue;  // nothing visible: a window could not show
        Case c;
        c.entry = e;
        if (e == EntryPoint::kSingle) {
          c.qo_lens = {70};
          c.kv_lens = {150};
        } else {
          c.qo_lens = {65, 3, 0, 40};
          c.kv_lens = {129, 200, 5, 40};
        }
        c.window_left = window;
        c.mask_density = density;
        rotate_shape(c, k, dtypes);
        c.page_size = k % 2 ? 16 : 1;
        if (k % 3 == 1) c.logits_soft_cap = 3.0f;
        c.seed = 1300 + k++;
        cases.push_back(c);
      }
  return cases;
}

std::vector<Case> tree_verify_cases(const std::vector<DType>& dtypes) {
  struct Shape {
    EntryPoint entry;
    std::vector<int> qo, kv;
    int hq, hk, d, page_size;
    float cap;
    int window;
  };
  const Shape shapes[] = {
      {EntryPoint::kSingle, {64}, {64 + 300}, 4, 1, 128, 16, 0.0f, -1},
      {EntryPoint::kSingle, {64}, {64 + 1024}, 8, 8, 64, 16, 0.0f, -1},
      {EntryPoint::kSingle, {37}, {37 + 129}, 2, 2, 256, 16, 3.0f, -1},
      {EntryPoint::kRagged, {64, 17, 64, 5}, {64 + 700, 17, 64 + 63, 5 + 1}, 8, 1, 128, 16, 0.0f, -1},
      {EntryPoint::kRagged, {64, 30}, {64 + 257, 30 + 64}, 6, 3, 64, 16, 0.0f, 100},
      {EntryPoint::kPaged, {64, 64, 9}, {64 + 1000, 64 + 15, 9 + 200}, 8, 2, 128, 16, 0.0f, -1},
      {EntryPoint::kPaged, {64, 11}, {64 + 333, 11 + 50}, 4, 4, 256, 1, 3.0f, -1},
      {EntryPoint::kPaged, {48, 64}, {48 + 77, 64 + 190}, 4, 1, 64, 1, 0.0f, 70},
  };
  std::vector<Case> cases;
  int k = 0;
  for (const Shape& s : shapes) {
    Case c;
    c.entry = s.entry;
    c.qo_lens = s.qo;
    c.kv_lens = s.kv;
    c.num_qo_heads = s.hq;
    c.num_kv_heads = s.hk;
    c.head_dim = s.d;
    c.page_size = s.page_size;
    c.logits_soft_cap = s.cap;
    c.window_left = s.window;
    c.dtype = dtypes[static_cast<std::size_t>(k) % dtypes.size()];
    c.mask_density = 1.0;
    c.mask_tree = true;
    c.seed = 1400 + k++;
    cases.push_back(c);
  }
  return cases;
}

std::vector<Case> mask_split_cases(const std::vector<DType>& dtypes) {
  std::vector<Case> cases;
  int k = 0;
  for (EntryPoint e : {EntryPoint::kSingle, EntryPoint::kRagged, EntryPoint::kPaged})
    for (bool tree : {false, true}) {
      Case c;
      c.entry = e;
      // A tree's prefix of 1000 keys over 8 heads still leaves its drafts weight enough for
      // the mask guard (at 1500 keys and 4 heads the references without the mask differ by
      // < 0.1); 4 row tiles of 17 KV tiles still split.
      c.qo_lens = {tree ? 64 : 3};
      c.kv_lens = {tree ? 64 + 1000 : 4099};
      c.num_qo_heads = tree ? 8 : 4;
      c.num_kv_heads = tree ? 2 : 4;
      c.head_dim = 128;
      c.dtype = dtypes[static_cast<std::size_t>(k) % dtypes.size()];
      c.page_size = 16;
      c.mask_density = tree ? 1.0 : 0.5;
      c.mask_tree = tree;
      c.seed = 1500 + k++;
      cases.push_back(c);
    }
  return cases;
}

}  // namespace flashband::testing
