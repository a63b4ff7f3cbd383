#include "oracle_grid.h"

#include "grid_lens.h"

namespace flashband::testing {
namespace {

// Variant 0: qo_len < kv_len, 1: equal, 2: greater (causal rows with p < 0 see nothing).
// `wide` for windows >= 31, whose window guard needs keys well beyond the window.
const LensTable kGridLens = {
    {{{{13}, {77}}, {{129}, {129}}, {{90}, {61}}},
     {{{61}, {263}}, {{200}, {200}}, {{300}, {229}}}},
    {{{{}, {77, 1, 0, 45, 16}}, {{}, {64, 33, 2}}, {{}, {5, 0, 90}}},
     {{{}, {300, 1, 0, 129, 200}}, {{}, {263, 170}}, {{}, {7, 0, 229}}}},
    {{{{17, 0, 9, 5}, {70, 13, 45, 0}}, {{65, 1, 70}, {65, 1, 70}}, {{50, 3, 12}, {37, 0, 5}}},
     {{{40, 0, 20, 5}, {263, 13, 200, 0}}, {{150, 1, 229}, {150, 1, 229}}, {{260, 3, 40}, {229, 0, 11}}}},
};

}  // namespace

std::vector<Case> oracle_grid(const std::vector<DType>& dtypes) {
  const EntryPoint entries[] = {EntryPoint::kSingle, EntryPoint::kRagged, EntryPoint::kPaged, EntryPoint::kDecode};
  const int dims[] = {64, 128, 256};
  const KVLayout layouts[] = {KVLayout::kNHD, KVLayout::kHND};
  const int page_sizes[] = {1, 5, 16, 128};
  const int heads[][2] = {{2, 2}, {4, 2}, {4, 1}, {3, 3}};

  std::vector<Case> cases;
  int k = 0;
  for (EntryPoint e : entries)
    for (bool causal : {false, true})
      for (int w : kGridWindows)
        for (DType dt : dtypes)
          for (int d : dims) {
            Case c;
            c.entry = e;
            const Lens l = kGridLens.pick(e, (k / 7) % 3, w >= 31 && w != kNoOpWindow);
            c.qo_lens = e == EntryPoint::kDecode ? std::vector<int>{} : l.qo;
            c.kv_lens = l.kv;
            if (e == EntryPoint::kDecode) c.qo_lens.assign(c.kv_lens.size(), 1);
            c.num_qo_heads = heads[(k / 5) % 4][0];
            c.num_kv_heads = heads[(k / 5) % 4][1];
            c.head_dim = d;
            c.dtype = dt;
            c.causal = causal;
            c.window_left = w;
            c.layout = layouts[k % 2];
            c.page_size = page_sizes[(k / 3) % 4];
            c.stacked_kv = e == EntryPoint::kPaged && (k / 11) % 2 == 1;
            if (k % 13 == 6) c.logits_soft_cap = 20.0f;
            c.seed = 1000 + k;
            cases.push_back(c);
            ++k;
          }
  return cases;
}

}  // namespace flashband::testing
