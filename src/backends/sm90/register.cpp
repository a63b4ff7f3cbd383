// register_sm90_kernels: the sm90 prefill kernels compiled in kernels/*.cu. Masking and the
// soft cap are runtime inside each kernel (full tiles skip the mask arithmetic either way),
// so one kernel serves all four (needs_mask, soft_cap) keys of its dtype / head dim /
// storage. Decode is not registered: the sm80 backend's decode kernel serves it.
#include "backends/sm90/sm90_backend.h"
#include "dispatch/registry.h"

namespace flashband::dispatch {

namespace {

struct Compiled {
  DType dtype;
  int head_dim;
  core::KVStorage storage;
  LaunchFn launch;
};

constexpr core::KVStorage kContiguous = core::KVStorage::kContiguous;
constexpr core::KVStorage kPaged = core::KVStorage::kPaged;

// The kernel list: one row per kernels/*.cu file.
const Compiled kCompiled[] = {
    {DType::kF16, 64, kContiguous, sm90::launch_prefill<DType::kF16, 64, false>},
    {DType::kF16, 64, kPaged, sm90::launch_prefill<DType::kF16, 64, true>},
    {DType::kF16, 128, kContiguous, sm90::launch_prefill<DType::kF16, 128, false>},
    {DType::kF16, 128, kPaged, sm90::launch_prefill<DType::kF16, 128, true>},
    {DType::kF16, 256, kContiguous, sm90::launch_prefill<DType::kF16, 256, false>},
    {DType::kF16, 256, kPaged, sm90::launch_prefill<DType::kF16, 256, true>},
    {DType::kBF16, 64, kContiguous, sm90::launch_prefill<DType::kBF16, 64, false>},
    {DType::kBF16, 64, kPaged, sm90::launch_prefill<DType::kBF16, 64, true>},
    {DType::kBF16, 128, kContiguous, sm90::launch_prefill<DType::kBF16, 128, false>},
    {DType::kBF16, 128, kPaged, sm90::launch_prefill<DType::kBF16, 128, true>},
    {DType::kBF16, 256, kContiguous, sm90::launch_prefill<DType::kBF16, 256, false>},
    {DType::kBF16, 256, kPaged, sm90::launch_prefill<DType::kBF16, 256, true>},
};

}  // namespace

void register_sm90_kernels(Registry& r) {
  for (const Compiled& c : kCompiled) {
    for (bool needs_mask : {false, true}) {
      for (bool soft_cap : {false, true}) {
        VariantKey key;
        key.backend = Backend::kSM90;
        key.shape = KernelShape::kPrefill;
        key.storage = c.storage;
        key.dtype = c.dtype;
        key.head_dim = c.head_dim;
        key.needs_mask = needs_mask;
        key.soft_cap = soft_cap;
        r.add(key, c.launch);
      }
    }
  }
}

}  // namespace flashband::dispatch
