// The one list of the backends this build compiles, under its FLASHBAND_WITH_* options.
#include "dispatch/backend.h"
#include "flashband/config.h"

namespace flashband::dispatch {

extern const BackendOps kCpuBackendOps;
#if FLASHBAND_WITH_SM80
extern const BackendOps kSm80BackendOps;
#endif
#if FLASHBAND_WITH_SM90
extern const BackendOps kSm90BackendOps;
#endif
#if FLASHBAND_WITH_CUDNN
extern const BackendOps kCudnnBackendOps;
#endif

const std::vector<const BackendOps*>& built_backend_ops() {
  static const std::vector<const BackendOps*> all = {
      &kCpuBackendOps,
#if FLASHBAND_WITH_SM80
      &kSm80BackendOps,
#endif
#if FLASHBAND_WITH_SM90
      &kSm90BackendOps,
#endif
#if FLASHBAND_WITH_CUDNN
      &kCudnnBackendOps,
#endif
  };
  return all;
}

const BackendOps* backend_ops(Backend b) {
  for (const BackendOps* ops : built_backend_ops())
    if (ops->id == b) return ops;
  return nullptr;
}

const BackendOps* merge_ops(Device d) {
  for (const BackendOps* ops : built_backend_ops())
    if (ops->merge_state && ((ops->id == Backend::kCPU) == (d == Device::kCPU))) return ops;
  return nullptr;
}

}  // namespace flashband::dispatch
