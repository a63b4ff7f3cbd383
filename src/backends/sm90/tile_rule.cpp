#include "backends/sm90/tile_rule.h"

#include <cerrno>
#include <cstdlib>
#include <string>

#include "backends/sm90/sm90_backend.h"
#include "core/mask.h"
#include "flashband/error.h"

namespace flashband::sm90 {

bool wide_masked_pays(WorkListInput in, int head_dim, int max_splits) {
  // The step costs were fitted to makespans of the bucket order; the balanced lists'
  // makespans would move the rule's thresholds without a measurement behind them.
  in.balance = false;
  auto makespan = [&](bool wide) {
    const TileShape t = tile_shape(head_dim, wide);
    in.block_m = t.block_m;
    in.block_n = t.block_n;
    return planned_makespan(in, max_splits, kMinKVTilesPerSplit);
  };
  return makespan(true) * wide_masked_step_cost(head_dim) < makespan(false) * 1000;
}

bool plan_wide_tiles(const WorkListInput& in, int head_dim, bool masked, bool paged, bool tma_pages, int max_splits) {
  if (in.custom_mask) return false;  // compiles_custom_mask
  // A band bounded on both sides (causal or window_right, and window_left; as normalised).
  const bool causal_window = (in.causal || in.window_right >= 0) && in.window_left >= 0;
  const bool wide = use_wide_tiles(head_dim, masked, paged, tma_pages,
                                   tile_rule_length(masked, in.qo_indptr, in.kv_lens, in.batch)) &&
                    !(masked && causal_window && !wide_masked_takes_causal_windows(head_dim));
  return wide && masked && wide_masked_step_cost(head_dim) > 0 ? wide_masked_pays(in, head_dim, max_splits) : wide;
}

KernelChoice choose_kernel(const WorkListInput& in, int head_dim, bool paged, int64_t page_size, bool soft_cap,
                           int max_splits) {
  // A custom mask is one more runtime mask: only the kAny kernels read its bits.
  const bool masked = takes_runtime_mask_kernels(
      core::needs_mask(in.causal, in.window_left, in.window_right) || in.custom_mask, soft_cap);
  // fp8 K/V: one kernel per dtype and head dim (narrow, runtime mask: every mask and the
  // soft cap), whose pages are always gathered, to keep the kernel count small.
  if (in.fp8_kv) return KernelChoice{false, MaskKind::kAny};
  const bool tma_pages = paged && pages_by_tma(page_size);
  KernelChoice c;
  c.wide = plan_wide_tiles(in, head_dim, masked, paged, tma_pages, max_splits);
  // A causal plan carries window_right -1 (plan/make_plan.cpp), so the causal-only kernel
  // never meets a right band; kernel_args.cpp checks it.
  if (use_causal_kernel(head_dim, paged, paged && !tma_pages, c.wide, in.causal, in.window_left, soft_cap,
                        typical_request_rows(in.qo_indptr, in.batch), causal_kernel_max_rows()))
    c.mask = MaskKind::kCausal;
  else if (!masked && (c.wide || narrow_folds_mask(head_dim)))
    c.mask = MaskKind::kKVLen;
  else
    c.mask = MaskKind::kAny;
  return c;
}

int64_t parse_causal_kernel_max_rows(const char* env) {
  if (env == nullptr) return kCausalKernelMaxRows;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(env, &end, 10);
  if (end == env || *end != '\0' || v < 0 || errno == ERANGE)
    throw Error(ErrorCode::kInvalidArgument, std::string("FLASHBAND_SM90_CAUSAL_MAX_ROWS: got '") + env +
                                                 "', allowed: a non-negative integer (query rows)");
  return static_cast<int64_t>(v);
}

int64_t causal_kernel_max_rows() {
  static const int64_t max_rows = parse_causal_kernel_max_rows(std::getenv("FLASHBAND_SM90_CAUSAL_MAX_ROWS"));
  return max_rows;
}

}  // namespace flashband::sm90
