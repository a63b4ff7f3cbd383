// sm80 kernels for bf16 q with e5m2 K/V, head dim 64 (see register_variants.cuh for the list).
#include "backends/sm80/register_variants.cuh"

namespace flashband::sm80 {
void register_fp8kv_bf16_e5m2_d64(dispatch::Registry& r) { register_fp8_kv<__nv_bfloat16, __nv_fp8_e5m2, 64>(r); }
}  // namespace flashband::sm80
