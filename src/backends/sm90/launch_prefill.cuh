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
  const KernelParams p = make_kernel_params(a, st, {Traits::kBlockM, Traits::kBlockN, kPaged, kMask});
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

// One explicit instantiation per kernels/*.cu file, through the named forms below.
#define FLASHBAND_SM90_INSTANTIATE(DTYPE, HEAD_DIM, PAGED, WIDE, MASK)                         \
  template void flashband::sm90::launch_prefill<flashband::DType::DTYPE, HEAD_DIM, PAGED, WIDE,   \
                                                flashband::sm90::MaskKind::MASK>(                \
      const flashband::core::AttentionParams&);
#define FLASHBAND_SM90_PREFILL(DTYPE, HEAD_DIM, PAGED) \
  FLASHBAND_SM90_INSTANTIATE(DTYPE, HEAD_DIM, PAGED, false, kAny)
// The narrow tile compiled without masks (kNarrowFoldsMask).
#define FLASHBAND_SM90_PREFILL_UNMASKED(DTYPE, HEAD_DIM, PAGED) \
  FLASHBAND_SM90_INSTANTIATE(DTYPE, HEAD_DIM, PAGED, false, kKVLen)
// The narrow tile compiled for causal problems without a window (kCausalKernel).
#define FLASHBAND_SM90_PREFILL_CAUSAL(DTYPE, HEAD_DIM, PAGED) \
  FLASHBAND_SM90_INSTANTIATE(DTYPE, HEAD_DIM, PAGED, false, kCausal)
// The wide-tile variants (contiguous K/V, and paged where kWidePaged): with the causal /
// window mask (where kWideMasked), and without it (every wide tile). Where its wgmma N
// is not a default shape (176, 80), its file defines CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED
// before any include.
#define FLASHBAND_SM90_PREFILL_WIDE(DTYPE, HEAD_DIM, PAGED) \
  FLASHBAND_SM90_INSTANTIATE(DTYPE, HEAD_DIM, PAGED, true, kAny)
#define FLASHBAND_SM90_PREFILL_WIDE_UNMASKED(DTYPE, HEAD_DIM, PAGED) \
  FLASHBAND_SM90_INSTANTIATE(DTYPE, HEAD_DIM, PAGED, true, kKVLen)
