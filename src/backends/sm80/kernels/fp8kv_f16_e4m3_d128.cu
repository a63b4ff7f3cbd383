// sm80 kernels for f16 q with e4m3 K/V, head dim 128 (see register_variants.cuh for the list).
#include "backends/sm80/register_variants.cuh"

namespace flashband::sm80 {
void register_fp8kv_f16_e4m3_d128(dispatch::Registry& r) { register_fp8_kv<__half, __nv_fp8_e4m3, 128>(r); }
}  // namespace flashband::sm80
