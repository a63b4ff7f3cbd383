// register_sm90_kernels: one registry key per dtype / K/V dtype / head dim / storage of the
// compiled table and each (needs_mask, custom_mask, soft_cap), all with the same trampoline: a key's launch runs
// the kernel its plan found in the table (plan_sm90, tile_rule.h choose_kernel), so which
// kernel runs is decided once, in the planner. Decode is not registered: the sm80 backend's
// decode kernel serves it.
#include <utility>
#include <vector>

#include "backends/sm90/compiled_kernels.h"
#include "backends/sm90/kernel_args.h"
#include "backends/sm90/sm90_backend.h"
#include "dispatch/registry.h"
#include "flashband/error.h"

namespace flashband::dispatch {

namespace {

void launch_planned_kernel(const core::AttentionParams& a) {
  const sm90::PlanState& st = sm90::plan_state(a);
  if (st.kernel == nullptr) throw Error(ErrorCode::kInternal, "sm90: a plan without a kernel reached its launch");
  st.kernel->launch(a);
}

}  // namespace

void register_sm90_kernels(Registry& r) {
  for (const sm90::CompiledKernel& k : sm90::compiled_kernels()) {
    // (needs_mask, custom_mask): none, the band, the band and the bits (a custom mask implies
    // needs_mask). The planner routes mask bits to the runtime-mask rows only (tile_rule.h).
    // An fp8 row reads either format (the launch passes which).
    const std::vector<DType> kv_dtypes =
        k.fp8_kv ? std::vector<DType>{DType::kE4M3, DType::kE5M2} : std::vector<DType>{k.dtype};
    for (DType kv_dtype : kv_dtypes) {
      for (auto [needs_mask, custom_mask] : {std::pair{false, false}, {true, false}, {true, true}}) {
        for (bool soft_cap : {false, true}) {
          VariantKey key;
          key.backend = Backend::kSM90;
          key.shape = KernelShape::kPrefill;
          key.storage = k.storage;
          key.dtype = k.dtype;
          key.kv_dtype = kv_dtype;
          key.head_dim = k.head_dim;
          key.needs_mask = needs_mask;
          key.custom_mask = custom_mask;
          key.soft_cap = soft_cap;
          if (r.find(key) == nullptr) r.add(key, launch_planned_kernel);  // the table's other rows of this key
        }
      }
    }
  }
}

}  // namespace flashband::dispatch
