// The cpu backend as dispatch sees it: its kernels and planner; it needs no workspace (its
// plans keep their arrays on the host).
#include "backends/cpu/cpu_backend.h"
#include "dispatch/backend.h"

namespace flashband::dispatch {

extern const BackendOps kCpuBackendOps = {Backend::kCPU, register_cpu_kernels, detail::plan_cpu};

}  // namespace flashband::dispatch
