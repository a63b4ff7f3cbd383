// Request lengths of the oracle grids' cases: per entry point three variants (0: qo_len <
// kv_len, 1: equal, 2: greater, where causal rows with p < 0 see nothing) in two widths (wide
// for windows whose guard needs keys well beyond the window). Each grid has its own table.
#pragma once
#include <vector>

#include "case.h"

namespace flashband::testing {

struct Lens {
  std::vector<int> qo, kv;
};

struct LensTable {
  Lens single[2][3];  // [wide][variant]
  Lens decode[2][3];  // kv only: one query per request
  Lens batch[2][3];   // ragged and paged prefill
  const Lens& pick(EntryPoint e, int variant, bool wide) const {
    const Lens(&t)[2][3] = e == EntryPoint::kSingle ? single : e == EntryPoint::kDecode ? decode : batch;
    return t[wide ? 1 : 0][variant];
  }
};

}  // namespace flashband::testing
