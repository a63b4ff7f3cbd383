#include "band_grid.h"

#include <cstddef>

#include "grid_lens.h"

namespace flashband::testing {

namespace {

// Lengths under which each window_right clips some row (r clips rows of requests with
// qo_len > r + 1): variant 0 has qo_len < kv_len, 1 equal, 2 greater. `wide` for
// window_left 127 or window_right 128.
const LensTable kBandLens = {
    {{{{40}, {90}}, {{77}, {77}}, {{90}, {61}}},
     {{{200}, {263}}, {{263}, {263}}, {{300}, {229}}}},
    {{{{}, {77, 1, 0, 45, 16}}, {{}, {64, 33, 2}}, {{}, {5, 0, 90}}},
     {{{}, {300, 1, 0, 129, 200}}, {{}, {263, 170}}, {{}, {7, 0, 229}}}},
    {{{{40, 0, 9, 5}, {70, 13, 45, 0}}, {{33, 1, 70}, {33, 1, 70}}, {{50, 3, 12}, {37, 0, 5}}},
     {{{150, 0, 20, 5}, {263, 13, 200, 0}}, {{150, 1, 229}, {150, 1, 229}}, {{260, 3, 40}, {229, 0, 11}}}},
};

}  // namespace

// FlashInfer's decode with q_len_per_req > 1 (python/flashband/decode.py) is the second
// loop: a paged prefill of equal query chunks, causal=false with the plan's window_right in
// place of the causal bound.
std::vector<Case> band_cases(const std::vector<DType>& dtypes) {
  const EntryPoint entries[] = {EntryPoint::kSingle, EntryPoint::kRagged, EntryPoint::kPaged, EntryPoint::kDecode};
  const int dims[] = {64, 128, 256};
  const int heads[][2] = {{2, 2}, {4, 2}, {4, 1}, {6, 3}};
  std::vector<Case> cases;
  int k = 0;
  auto rotate = [&](Case& c) {
    c.dtype = dtypes[static_cast<std::size_t>(k / 2) % dtypes.size()];
    c.head_dim = dims[(k / 3) % 3];
    c.layout = (k / 5) % 2 ? KVLayout::kHND : KVLayout::kNHD;
    c.page_size = (k % 3) * 7 + 1;  // 1, 8, 15
    c.num_qo_heads = heads[k % 4][0];
    c.num_kv_heads = heads[k % 4][1];
    if (k % 7 == 3) c.logits_soft_cap = 2.0f;
    c.seed = 500 + k;
    ++k;
  };
  for (EntryPoint e : entries)
    for (bool causal : {false, true})
      for (int wl : kBandLefts)
        for (int wr : kBandRights) {
          if (causal && wr > 0) continue;
          Case c;
          c.entry = e;
          c.causal = causal;
          c.window_left = wl;
          c.window_right = wr;
          const Lens l = kBandLens.pick(e, k % 3, wl == 127 || wr == 128);
          c.qo_lens = e == EntryPoint::kDecode ? std::vector<int>(l.kv.size(), 1) : l.qo;
          c.kv_lens = l.kv;
          rotate(c);
          cases.push_back(c);
        }
  for (int wl : kBandLefts)
    for (int wr : kBandRights) {
      Case c;  // decode, q_len_per_req = 6 (and 160 where window_right is 128)
      c.entry = EntryPoint::kPaged;
      const int q = wr == 128 ? 160 : 6;
      c.qo_lens = {q, q, q};
      c.kv_lens = {q + 200, q, q + 33};
      c.window_left = wl;
      c.window_right = wr;
      rotate(c);
      cases.push_back(c);
    }
  return cases;
}

}  // namespace flashband::testing
