// dispatch::register_sm80_kernels: every kernels/*.cu file's registration, in one list.
#include "backends/sm80/sm80_backend.h"
#include "dispatch/registry.h"

namespace flashband {

namespace sm80 {
#define FB_SM80_KERNEL_FILE(name) void register_##name(dispatch::Registry& r);
#include "backends/sm80/kernel_files.inc"
#undef FB_SM80_KERNEL_FILE
}  // namespace sm80

namespace dispatch {

void register_sm80_kernels(Registry& r) {
#define FB_SM80_KERNEL_FILE(name) sm80::register_##name(r);
#include "backends/sm80/kernel_files.inc"
#undef FB_SM80_KERNEL_FILE
}

}  // namespace dispatch
}  // namespace flashband
