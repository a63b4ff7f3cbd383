// The kernel registry and the process-wide instance filled by every compiled-in backend.
#include "dispatch/registry.h"

#include <mutex>

#include "core/mask.h"
#include "dispatch/backend.h"
#include "flashband/error.h"

namespace flashband::dispatch {

void Registry::add(const VariantKey& key, LaunchFn launch) {
  for (auto& e : entries_) {
    if (e.key == key)
      throw Error(ErrorCode::kInternal, "kernel registered twice: " + key.to_string());
  }
  entries_.push_back({key, launch});
}

const KernelEntry* Registry::find(const VariantKey& key) const {
  for (const auto& e : entries_) {
    VariantKey k = key;
    if (e.key.head_dim == 0) k.head_dim = 0;  // a kernel for any head dim
    if (e.key == k) return &e;
  }
  return nullptr;
}

const KernelEntry& Registry::get(const VariantKey& key, const core::AttentionParams& params) const {
  const KernelEntry* e = find(key);
  if (!e)
    throw Error(ErrorCode::kNotBuilt, "no kernel " + key.to_string() + " in this build of flashband");
  check_kernel_fits(*e, params);
  return *e;
}

void check_kernel_fits(const KernelEntry& e, const core::AttentionParams& params) {
  // The guard against the bug flashband exists for: a kernel compiled without masking must
  // never see a problem that needs one.
  if ((core::needs_mask(params.causal, params.window_left, params.window_right) || params.custom_mask) &&
      !e.key.needs_mask)
    throw Error(ErrorCode::kInternal, "dispatch chose unmasked kernel " + e.key.to_string() +
                                          " for a problem with causal, window_left, window_right or a custom mask");
  // The same bug class for custom masks: a kernel that does not read the bits must never
  // get them (a band-masking kernel would silently compute the unmasked result).
  if (params.custom_mask && !e.key.custom_mask)
    throw Error(ErrorCode::kInternal, "dispatch chose kernel " + e.key.to_string() +
                                          ", which does not read custom-mask bits, for a problem with a custom mask");
  if ((params.logits_soft_cap > 0.0f) != e.key.soft_cap)
    throw Error(ErrorCode::kInternal, "dispatch chose kernel " + e.key.to_string() +
                                          " whose soft-cap axis does not match logits_soft_cap");
  if (e.key.dtype != params.dtype || (e.key.head_dim != 0 && e.key.head_dim != params.head_dim))
    throw Error(ErrorCode::kInternal, "dispatch chose kernel " + e.key.to_string() + " for a different dtype or head_dim");
  // An fp8 cache read by a 16-bit kernel (or the reverse) would be garbage, not an error.
  if (e.key.kv_dtype != params.kv_dtype)
    throw Error(ErrorCode::kInternal, "dispatch chose kernel " + e.key.to_string() + " for K/V of dtype " +
                                          dtype_name(params.kv_dtype));
}

const Registry& registry() {
  static const Registry r = [] {
    Registry reg;
    for (const BackendOps* ops : built_backend_ops()) ops->register_kernels(reg);
    return reg;
  }();
  return r;
}

}  // namespace flashband::dispatch
