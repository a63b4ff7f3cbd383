#include "backends/sm90/compiled_kernels.h"

#include "backends/sm90/sm90_backend.h"

namespace flashband::sm90 {

const std::vector<CompiledKernel>& compiled_kernels() {
  namespace c = kernel_columns;
#define FLASHBAND_SM90_KERNEL(DTYPE, HEAD_DIM, STORAGE, TILE, MASK, KV)                             \
  CompiledKernel{c::DTYPE,                                                                          \
                 HEAD_DIM,                                                                          \
                 c::STORAGE,                                                                        \
                 c::TILE,                                                                           \
                 c::MASK,                                                                           \
                 c::KV,                                                                             \
                 &FLASHBAND_SM90_LAUNCH_OF(DTYPE, HEAD_DIM, STORAGE, TILE, MASK, KV),               \
                 c::KV ? "prefill_" #DTYPE "_d" #HEAD_DIM "_" #STORAGE "_" #TILE "_" #MASK "_fp8kv"          \
                       : "prefill_" #DTYPE "_d" #HEAD_DIM "_" #STORAGE "_" #TILE "_" #MASK},
  static const std::vector<CompiledKernel> table = {
#include "backends/sm90/kernel_list.h"
  };
#undef FLASHBAND_SM90_KERNEL
  return table;
}

const CompiledKernel* find_kernel(DType dtype, int head_dim, core::KVStorage storage, bool wide, MaskKind mask,
                                  bool fp8_kv) {
  for (const CompiledKernel& k : compiled_kernels())
    if (k.dtype == dtype && k.head_dim == head_dim && k.storage == storage && k.wide == wide && k.mask == mask &&
        k.fp8_kv == fp8_kv)
      return &k;
  return nullptr;
}

}  // namespace flashband::sm90
