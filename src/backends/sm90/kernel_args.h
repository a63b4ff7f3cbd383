// Host side of a launch, shared by every instantiation: AttentionParams + the plan's state
// -> KernelParams (tensor maps included), and the split-KV merge that follows a split run.
#pragma once
#include "backends/sm90/kernel_params.h"
#include "backends/sm90/sm90_backend.h"
#include "backends/sm90/tile_shapes.h"
#include "core/params.h"

namespace flashband::sm90 {

struct LaunchShape {
  int block_m = 0;
  int block_n = 0;
  bool paged = false;
  MaskKind mask = MaskKind::kAny;  // what the kernel masks; it refuses problems it cannot
  bool gather_only = false;        // paged kernels with no TMA page path (kWidePagedGatherOnly, fp8 K/V)
  bool fp8_kv = false;             // K/V in e4m3 / e5m2, converted by the paged gather
};

// The plan state behind params.work; throws Error(kInternal) when plan_sm90 did not run.
const PlanState& plan_state(const core::AttentionParams& a);

// Fills everything the kernel reads. num_units == 0 means there is nothing to launch.
KernelParams make_kernel_params(const core::AttentionParams& a, const PlanState& st, const LaunchShape& shape);

}  // namespace flashband::sm90
