// sm80 kernels for f16 q with e5m2 K/V, head dim 256 (see register_variants.cuh for the list).
#include "backends/sm80/register_variants.cuh"

namespace flashband::sm80 {
void register_fp8kv_f16_e5m2_d256(dispatch::Registry& r) { register_fp8_kv<__half, __nv_fp8_e5m2, 256>(r); }
}  // namespace flashband::sm80
