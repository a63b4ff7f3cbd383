// Connects the cpu backend to dispatch and plan: one kernel (cpu_attention) serves every
// variant key (fp8 K/V included), and planning only aims the index pointers at the plan's own host vectors.
#include "backends/cpu/cpu_backend.h"
#include "dispatch/registry.h"
#include "plan/plan.h"

#include <vector>

namespace flashband {

namespace dispatch {

namespace {
// K/V dtypes beside q's (validate::kv_dtype): fp8 caches with 16-bit q; fp8 attention reads
// e4m3 q, K and V.
std::vector<DType> kv_dtypes_for(DType q) {
  if (q == DType::kF16 || q == DType::kBF16) return {q, DType::kE4M3, DType::kE5M2};
  return {q};
}
}  // namespace

void register_cpu_kernels(Registry& r) {
  for (KernelShape shape : {KernelShape::kPrefill, KernelShape::kDecode})
    for (core::KVStorage storage : {core::KVStorage::kContiguous, core::KVStorage::kPaged})
      for (DType dtype : {DType::kF16, DType::kBF16, DType::kF32, DType::kE4M3})
        for (DType kv_dtype : kv_dtypes_for(dtype))
        for (int mask = 0; mask < 3; ++mask)  // none, needs_mask, needs_mask + custom mask
          for (bool soft_cap : {false, true}) {
            VariantKey key;
            key.backend = Backend::kCPU;
            key.shape = shape;
            key.storage = storage;
            key.dtype = dtype;
            key.kv_dtype = kv_dtype;
            key.head_dim = 0;  // any head dim
            key.needs_mask = mask > 0;
            key.custom_mask = mask == 2;
            key.soft_cap = soft_cap;
            r.add(key, &cpu::cpu_attention);
          }
}

}  // namespace dispatch

namespace detail {

// The plan's host vectors are the cpu backend's memory. They live as long as the plan, which
// run() holds through a shared_ptr; a copied Plan must be planned again.
void plan_cpu(Plan& plan, const Workspace& /*workspace*/) {
  core::AttentionParams& p = plan.params;
  auto data_or_null = [](const std::vector<int32_t>& v) { return v.empty() ? nullptr : v.data(); };
  p.qo_indptr = data_or_null(plan.qo_indptr);
  p.kv_indptr = data_or_null(plan.kv_indptr);
  p.page_indices = data_or_null(plan.page_indices);
  p.last_page_len = data_or_null(plan.last_page_len);
  p.kv_lens = data_or_null(plan.kv_lens);
  p.mask_indptr = plan.mask_indptr.empty() ? nullptr : plan.mask_indptr.data();
  p.work = nullptr;
  p.num_work_items = 0;
  p.num_kv_splits = 1;
  p.scratch = nullptr;
  p.scratch_bytes = 0;
}

}  // namespace detail
}  // namespace flashband
