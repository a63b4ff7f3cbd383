// The sm90 prefill kernel: a persistent, warp-specialised CTA of one producer warpgroup and
// two or three consumer warpgroups (see producer.h, consumer.h). Registers move from the
// producer to the consumers with setmaxnreg; the kernel is compiled with a cap of 65536 /
// kThreads per thread (launch bounds with min 1 block), which setmaxnreg needs to take
// effect.
#pragma once
#include "backends/sm90/consumer.h"
#include "backends/sm90/kernel_params.h"
#include "backends/sm90/kernel_traits.h"
#include "backends/sm90/producer.h"
#include "backends/sm90/ptx.h"
#include "backends/sm90/shared_storage.h"

namespace flashband::sm90 {

template <class Traits, bool kPaged>
__global__ void __launch_bounds__(Traits::kThreads, 1) prefill_kernel(const __grid_constant__ KernelParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // No static shared memory, so the dynamic block starts the CTA's window, which is 1024-byte
  // aligned; a start that is not would break the 128-byte swizzle, so it traps instead.
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  auto& s = *reinterpret_cast<SharedStorage<Traits>*>(smem_raw);
  if (threadIdx.x == 0) {
    if ((ptx::smem_addr_checked(smem_raw) & 1023u) != 0) __trap();
#pragma unroll
    for (int i = 0; i < Traits::kQStages; ++i) {
      ptx::mbar_init(&s.q_full[i], 1);
      ptx::mbar_init(&s.q_empty[i], Traits::kConsumerWarps);
    }
#pragma unroll
    for (int i = 0; i < Traits::kStages; ++i) {
      ptx::mbar_init(&s.k_full[i], kPaged ? 128 : 1);
      ptx::mbar_init(&s.v_full[i], kPaged ? 128 : 1);
      ptx::mbar_init(&s.k_empty[i], Traits::kConsumerWarps);
      ptx::mbar_init(&s.v_empty[i], Traits::kConsumerWarps);
    }
    ptx::mbar_fence_init();
  }
  __syncthreads();

  const int warpgroup = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x) / 128, 0);
  if (warpgroup == 0) {
    ptx::regs_dealloc<Traits::template kProducerRegs<kPaged>>();
    if constexpr (kPaged) {
      if constexpr (SharedStorage<Traits>::kGatherOnly)  // launch_prefill refuses TMA pages
        produce_paged<Traits, false>(p, s, threadIdx.x);
      else if (p.paged_tma_rows > 0)
        produce_paged<Traits, true>(p, s, threadIdx.x);
      else
        produce_paged<Traits, false>(p, s, threadIdx.x);
    } else {
      if (threadIdx.x == 0) produce_tma<Traits>(p, s);
    }
  } else {
    ptx::regs_alloc<Traits::template kConsumerRegs<kPaged>>();
    consume<Traits, kPaged>(p, s, threadIdx.x - 128);
  }
#endif
}

}  // namespace flashband::sm90
