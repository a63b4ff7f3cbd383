// The kernel registry: VariantKey -> launch function. Backends register their compiled
// instantiations explicitly (no static-initialiser tricks, so nothing is dropped by the
// linker); a key with no entry is an error that names the build option that adds it.
#pragma once
#include <vector>

#include "core/params.h"
#include "dispatch/variant.h"

namespace flashband::dispatch {

using LaunchFn = void (*)(const core::AttentionParams&);

struct KernelEntry {
  VariantKey key;
  LaunchFn launch = nullptr;
};

class Registry {
 public:
  void add(const VariantKey& key, LaunchFn launch);
  // nullptr when absent.
  const KernelEntry* find(const VariantKey& key) const;
  // Throws Error(kNotBuilt) naming the key and the build option when absent; throws
  // Error(kInternal) when a kernel without masking would receive needs_mask.
  const KernelEntry& get(const VariantKey& key, const core::AttentionParams& params) const;
  const std::vector<KernelEntry>& entries() const { return entries_; }

 private:
  std::vector<KernelEntry> entries_;
};

// Throws Error(kInternal) unless `entry` may run `params`: a kernel without masking never
// receives needs_mask, one that reads no custom-mask bits never receives them, and dtype,
// head_dim and the soft-cap axis match.
void check_kernel_fits(const KernelEntry& entry, const core::AttentionParams& params);

// The process-wide registry, filled on first use by every backend compiled in.
const Registry& registry();

}  // namespace flashband::dispatch
