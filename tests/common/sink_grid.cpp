#include "sink_grid.h"

#include <algorithm>

namespace flashband::testing {

std::vector<float> sink_values(int heads, int rotation) {
  // ln(kv_len)-sized values weigh about as much as all keys of a unit-spread row together.
  // Larger sinks would push fp16 outputs into subnormals and hide the window from its guard.
  static const float pattern[] = {-1.0e4f, 0.5f, 4.0f, 6.5f, -3.0f, 2.5f};
  std::vector<float> s(static_cast<std::size_t>(heads));
  for (int h = 0; h < heads; ++h) s[static_cast<std::size_t>(h)] = pattern[(h + rotation) % 6];
  // At least one sink that matters, so the case's sink guard holds.
  if (heads == 1) s[0] = 2.5f;  // one head: visible beside a one-key window too
  else if (*std::max_element(s.begin(), s.end()) < 4.0f) s.back() = 6.5f;
  return s;
}

void rotate_shape(Case& c, int k, const std::vector<DType>& dtypes) {
  static const int heads[][2] = {{2, 2}, {4, 2}, {4, 1}, {6, 3}, {1, 1}};
  static const int dims[] = {64, 128, 256};
  c.num_qo_heads = heads[k % 5][0];
  c.num_kv_heads = heads[k % 5][1];
  c.head_dim = dims[(k / 2) % 3];
  c.dtype = dtypes[static_cast<std::size_t>(k / 3) % dtypes.size()];
  c.layout = (k / 4) % 2 ? KVLayout::kHND : KVLayout::kNHD;
  c.page_size = (k % 3) * 7 + 1;  // 1, 8, 15
}

std::vector<Case> sink_cases(const std::vector<DType>& dtypes) {
  const EntryPoint entries[] = {EntryPoint::kSingle, EntryPoint::kRagged, EntryPoint::kPaged, EntryPoint::kDecode};
  const int windows[] = {-1, 0, 5};
  std::vector<Case> cases;
  int k = 0;
  for (EntryPoint e : entries)
    for (bool causal : {false, true})
      for (int w : windows)
        for (bool cap : {false, true}) {
          Case c;
          c.entry = e;
          // Requests with qo_len > kv_len and an empty one: causal rows that see no key, which
          // must give 0 and the sink's LSE.
          if (e == EntryPoint::kSingle) {
            c.qo_lens = {k % 2 ? 40 : 9};
            c.kv_lens = {k % 2 ? 23 : 70};
          } else if (e == EntryPoint::kDecode) {
            c.kv_lens = {45, 0, 1, 90};
            c.qo_lens.assign(c.kv_lens.size(), 1);
          } else {
            c.qo_lens = {17, 30, 5, 0};
            c.kv_lens = {70, 11, 0, 9};
          }
          c.causal = causal;
          c.window_left = w;
          if (cap) c.logits_soft_cap = 3.0f;
          rotate_shape(c, k, dtypes);
          c.sinks = sink_values(c.num_qo_heads, k);
          c.seed = 700 + k;
          cases.push_back(c);
          ++k;
        }
  // Two-sided band with sinks (window_right, non-causal).
  for (EntryPoint e : {EntryPoint::kSingle, EntryPoint::kRagged, EntryPoint::kPaged}) {
    Case c;
    c.entry = e;
    c.qo_lens = e == EntryPoint::kSingle ? std::vector<int>{50} : std::vector<int>{50, 8};
    c.kv_lens = e == EntryPoint::kSingle ? std::vector<int>{50} : std::vector<int>{50, 30};
    c.window_left = 5;
    c.window_right = 3;
    c.num_qo_heads = 4;
    c.num_kv_heads = 2;
    c.dtype = dtypes[0];
    c.sinks = sink_values(4, k++);
    cases.push_back(c);
  }
  return cases;
}

std::vector<Case> sink_split_cases(const std::vector<DType>& dtypes) {
  std::vector<Case> cases;
  int k = 0;
  for (EntryPoint e : {EntryPoint::kSingle, EntryPoint::kRagged, EntryPoint::kPaged, EntryPoint::kDecode})
    for (bool causal : {false, true}) {
      if (e == EntryPoint::kDecode && causal) continue;  // one row: causal changes nothing
      Case c;
      c.entry = e;
      c.kv_lens = {4099};
      c.qo_lens = {e == EntryPoint::kDecode ? 1 : 3};
      c.causal = causal;
      c.num_qo_heads = 4;
      c.num_kv_heads = 4;
      c.head_dim = 128;
      c.dtype = dtypes[static_cast<std::size_t>(k) % dtypes.size()];
      c.page_size = 16;
      // Sinks near ln(kv_len) ~ 8.3 weigh like the keys; one dominant, one negligible.
      c.sinks = {8.0f, -1.0e4f, 9.5f, 10.0f};
      c.seed = 900 + k++;
      cases.push_back(c);
    }
  return cases;
}

}  // namespace flashband::testing
