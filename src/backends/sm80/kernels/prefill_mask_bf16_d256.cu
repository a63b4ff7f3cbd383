// sm80 prefill kernels with a packed custom mask for bf16, head dim 256 (see
// register_variants.cuh for the list).
#include "backends/sm80/register_variants.cuh"

namespace flashband::sm80 {
void register_prefill_mask_bf16_d256(dispatch::Registry& r) { register_prefill_custom_mask<__nv_bfloat16, 256>(r); }
}  // namespace flashband::sm80
