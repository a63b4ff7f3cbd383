// launch_prefill<DType, D, kPaged, kWide, kMask>: the registry's launch function for one compiled
// kernel. No allocation and no host synchronisation: tensor maps are encoded on the host
// (a pure function of pointers and strides), the grid is one CTA per multiprocessor at most.
// Each kernels/*.cu file instantiates one of these.
#pragma once
#include <algorithm>
#include <type_traits>

#include "backends/cuda/check.h"
#include "backends/cuda/merge.h"
#include "backends/cuda/smem_limit.h"
#include "backends/sm90/kernel_args.h"
#include "backends/sm90/prefill_kernel.cuh"
#include "backends/sm90/sm90_backend.h"

namespace flashband::sm90 {

template <DType kDType>
using ElementOf = std::conditional_t<kDType == DType::kF16, cute::half_t, cute::bfloat16_t>;

template <DType kDType, int kHeadDim, bool kPaged, bool kWide, MaskKind kMask>
void launch_prefill(const core::AttentionParams& a) {
  static_assert(kDType == DType::kF16 || kDType == DType::kBF16);
  static_assert(!(kWide && kPaged) || kWidePaged<kHeadDim>,
                "this head dim's wide tile is for contiguous K/V only (tile_config.h)");
  static_assert(kMask != MaskKind::kCausal || kCausalKernel<kHeadDim, kPaged, kWide>,
                "this tile has no causal-only kernel (tile_config.h kCausalKernel)");
  static_assert(kMask != MaskKind::kKVLen || kWide || kNarrowFoldsMask<kHeadDim, kPaged>,
                "this narrow tile has no kernel without masks (tile_config.h kNarrowFoldsMask)");
  using Traits = KernelTraits<ElementOf<kDType>, kHeadDim, kWide, kMask>;
  const PlanState& st = plan_state(a);
  const KernelParams p = make_kernel_params(
      a, st, {Traits::kBlockM, Traits::kBlockN, kPaged, kMask, kPagedGatherOnly<kHeadDim, kWide>});
  if (p.num_units == 0) return;

  constexpr int kSmem = shared_storage_bytes<Traits>();
  const auto kernel = prefill_kernel<Traits, kPaged>;
  static cuda::SmemLimit smem_limit;
  smem_limit.ensure(reinterpret_cast<const void*>(kernel), kSmem, "sm90 prefill kernel");

  const int grid = std::max(1, std::min(p.num_units, st.num_sms));
  kernel<<<grid, Traits::kThreads, kSmem, static_cast<cudaStream_t>(a.stream)>>>(p);
  FB_CUDA_CHECK_LAUNCH("sm90 prefill kernel");
  if (st.num_splits > 1) cuda::merge_split_partials(a, st.partial_o, st.partial_lse, st.num_splits);
}

}  // namespace flashband::sm90

// One explicit instantiation per kernels/*.cu file, through the named forms of
// kernel_instances.h.
#define FLASHBAND_SM90_INSTANTIATE(DTYPE, HEAD_DIM, PAGED, WIDE, MASK)                         \
  template void flashband::sm90::launch_prefill<flashband::DType::DTYPE, HEAD_DIM, PAGED, WIDE,   \
                                                flashband::sm90::MaskKind::MASK>(                \
      const flashband::core::AttentionParams&);
#include "backends/sm90/kernel_instances.h"
