// launch_prefill<DType, D, kPaged, kWide, kMask, kFp8KV>: the launch function of one compiled kernel
// (its compiled_kernels.h row). No allocation and no host synchronisation: tensor maps are
// encoded on the host (a pure function of pointers and strides), the grid is one CTA per
// multiprocessor at most. Each generated kernels/*.cu file instantiates one of these.
#pragma once
#include <algorithm>
#include <type_traits>

#include "backends/cuda/check.h"
#include "backends/cuda/merge.h"
#include "backends/cuda/smem_limit.h"
#include "backends/sm90/compiled_kernels.h"
#include "backends/sm90/kernel_args.h"
#include "backends/sm90/prefill_kernel.cuh"
#include "backends/sm90/sm90_backend.h"

namespace flashband::sm90 {

template <DType kDType>
using ElementOf = std::conditional_t<kDType == DType::kF16, cute::half_t, cute::bfloat16_t>;

template <DType kDType, int kHeadDim, bool kPaged, bool kWide, MaskKind kMask, bool kFp8KV>
void launch_prefill(const core::AttentionParams& a) {
  static_assert(kDType == DType::kF16 || kDType == DType::kBF16);
  static_assert(!(kWide && kPaged) || kWidePaged<kHeadDim>,
                "this head dim's wide tile is for contiguous K/V only (tile_shapes.h kWidePaged)");
  static_assert(!kFp8KV || kPaged, "fp8 K/V is converted by the paged gather only (producer.h)");
  using Traits = KernelTraits<ElementOf<kDType>, kHeadDim, kWide, kMask, kFp8KV>;
  const PlanState& st = plan_state(a);
  const KernelParams p = make_kernel_params(
      a, st, {Traits::kBlockM, Traits::kBlockN, kPaged, kMask, SharedStorage<Traits>::kGatherOnly, kFp8KV});
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

// One explicit instantiation per generated kernels/*.cu file, whose one line is its
// kernel_list.h row.
#define FLASHBAND_SM90_KERNEL(DTYPE, HEAD_DIM, STORAGE, TILE, MASK, KV)           \
  template void FLASHBAND_SM90_LAUNCH_OF(DTYPE, HEAD_DIM, STORAGE, TILE, MASK, KV)( \
      const flashband::core::AttentionParams&);
