// The table of compiled sm90 kernels (kernel_list.h): dtype, head dim, storage, tile, mask
// kind and K/V element -> launch function and name. The planner finds its row once (find_kernel) and
// stores it in the plan.
#pragma once
#include <vector>

#include "backends/sm90/tile_shapes.h"
#include "core/params.h"
#include "dispatch/registry.h"

namespace flashband::sm90 {

struct CompiledKernel {
  DType dtype;
  int head_dim;
  core::KVStorage storage;
  bool wide;  // the head dim's wide tile (TileConfig<head_dim, true>), else its narrow one
  MaskKind mask;
  bool fp8_kv;  // K/V in e4m3 or e5m2 (which one: the launch's kv_dtype), else in dtype
  dispatch::LaunchFn launch;
  const char* name;  // also its generated source's: kernels/<name>.cu
};

// Every row of kernel_list.h, in its order.
const std::vector<CompiledKernel>& compiled_kernels();

// The row with these columns; nullptr where none is compiled.
const CompiledKernel* find_kernel(DType dtype, int head_dim, core::KVStorage storage, bool wide, MaskKind mask,
                                  bool fp8_kv);

// The names kernel_list.h's columns use (FLASHBAND_SM90_KERNEL's arguments).
namespace kernel_columns {
constexpr DType f16 = DType::kF16, bf16 = DType::kBF16;
constexpr core::KVStorage contiguous = core::KVStorage::kContiguous, paged = core::KVStorage::kPaged;
constexpr bool narrow = false, wide = true;
constexpr MaskKind any = MaskKind::kAny, causal = MaskKind::kCausal, kvlen = MaskKind::kKVLen;
constexpr bool same = false, fp8 = true;
}  // namespace kernel_columns

}  // namespace flashband::sm90

// The launch function of a kernel_list.h row (compiled_kernels.cpp takes its address, each
// generated kernels/*.cu file instantiates it).
#define FLASHBAND_SM90_LAUNCH_OF(DTYPE, HEAD_DIM, STORAGE, TILE, MASK, KV)                             \
  ::flashband::sm90::launch_prefill<                                                                   \
      ::flashband::sm90::kernel_columns::DTYPE, HEAD_DIM,                                              \
      ::flashband::sm90::kernel_columns::STORAGE == ::flashband::sm90::kernel_columns::paged,          \
      ::flashband::sm90::kernel_columns::TILE, ::flashband::sm90::kernel_columns::MASK,                \
      ::flashband::sm90::kernel_columns::KV>
