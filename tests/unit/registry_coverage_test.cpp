// The shipped registry against the shipped capability table: every kernel key that a
// validated or declared row of a compiled-in backend admits has a launch function. A key the
// table admits but no kernel serves would otherwise surface only at run time, on a GPU.
#include <gtest/gtest.h>

#include "dispatch/select.h"
#include "flashband/config.h"

namespace flashband::dispatch {
namespace {

bool compiled_in(Backend b) {
  switch (b) {
    case Backend::kCPU: return true;
    case Backend::kSM80: return FLASHBAND_WITH_SM80 != 0;
    case Backend::kSM90: return FLASHBAND_WITH_SM90 != 0;
    case Backend::kCUDNN: return FLASHBAND_WITH_CUDNN != 0;
    default: return false;
  }
}

// The head dims a row admits: its list, or a spread up to its maximum.
std::vector<int> admitted_head_dims(const Limits& l) {
  if (!l.head_dims.empty()) return l.head_dims;
  std::vector<int> v;
  for (int d : {1, 64, 128, 256, l.max_head_dim})
    if (d <= l.max_head_dim) v.push_back(d);
  return v;
}

// Masks: 0 none, 1 causal (the band), 2 a custom mask (with the band kernel's window
// machinery; never causal, which plan() refuses beside a mask). A custom-mask key must find a
// kernel that reads the bits: the band kernel would compute the unmasked result.
TEST(RegistryCoverage, EveryAdmittedKeyHasAKernel) {
  int checked = 0, custom_checked = 0;
  for (const CapabilityRow& row : capability_table()) {
    if (row.status != Status::kValidated && row.status != Status::kDeclared) continue;
    if (!compiled_in(row.backend)) continue;
    const Limits& l = row.limits;
    const bool mask_admitted = l.causal || l.window_with_causal || l.window_without_causal;
    for (DType dtype : l.dtypes) {
      // fp8 caches go with 16-bit q; fp8 attention's q (e4m3) with e4m3 K/V only (SPEC.md).
      std::vector<DType> kv_dtypes = {dtype};
      if (dtype == DType::kF16 || dtype == DType::kBF16)
        kv_dtypes.insert(kv_dtypes.end(), l.kv_dtypes.begin(), l.kv_dtypes.end());
      for (DType kv_dtype : kv_dtypes)
        for (int head_dim : admitted_head_dims(l))
          for (int mask : {0, 1, 2})
            for (bool cap : {false, true}) {
              if ((mask == 1 && !mask_admitted) || (mask == 2 && !l.custom_mask) || (cap && !l.soft_cap)) continue;
              ProblemDesc p;
              p.op = row.op;
              p.dtype = dtype;
              if (kv_dtype != dtype) p.kv_dtype = kv_dtype;
              p.head_dim = head_dim;
              p.causal = mask == 1;
              p.custom_mask = mask == 2;
              p.soft_cap = cap;
              const VariantKey key = variant_for(p, row.backend);
              const KernelEntry* e = registry().find(key);
              ASSERT_NE(e, nullptr) << key.to_string() << " (" << op_name(row.op) << ")";
              EXPECT_NE(e->launch, nullptr) << key.to_string();
              EXPECT_EQ(e->key.needs_mask, mask > 0) << key.to_string();
              EXPECT_EQ(e->key.custom_mask, mask == 2) << key.to_string();
              ++checked;
              custom_checked += mask == 2;
            }
    }
  }
  EXPECT_GT(checked, 0);
  EXPECT_GT(custom_checked, 0);  // cpu serves custom masks in every build
}

}  // namespace
}  // namespace flashband::dispatch
