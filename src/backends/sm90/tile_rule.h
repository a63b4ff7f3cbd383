// The host-only rule that picks, for one problem, the tile (narrow or wide) and the mask
// kind of the sm90 kernel that runs it (choose_kernel). The planner asks it once, looks the
// kernel up in the compiled table (compiled_kernels.h) and stores it in the plan; the
// launch runs what the plan stored. Thresholds are measurements: each points to its
// findings entry.
#pragma once
#include <cstdint>

#include "backends/sm90/tile_shapes.h"
#include "backends/sm90/work_list.h"

namespace flashband::sm90 {

// "masked" in this file: a causal / window mask or a soft cap, since only the runtime-mask
// kernels compile the soft cap (compiles_soft_cap), so a soft-capped problem takes the
// kernels and the tile of a masked problem of its length.
constexpr bool takes_runtime_mask_kernels(bool needs_mask, bool soft_cap) { return needs_mask || soft_cap; }

// Head dims whose wide tile also serves causal / window problems (findings:
// sm90-wide-masked); D = 128's not under a causal window, whose band fills whole 176-key
// tiles with more waste than 128-key ones.
template <int kHeadDim>
constexpr bool kWideMasked = kHeadDim == 64 || kHeadDim == 128 || kHeadDim == 256;
constexpr bool wide_masked_takes_causal_windows(int head_dim) { return head_dim != 128; }

// Narrow tiles with a kernel compiled without masks, for the unmasked problems that no wide
// tile serves; elsewhere a narrow tile serves only masked problems (findings:
// sm90-narrow-unmasked-kernels). Every wide tile has one (findings: sm90-wide-kvlen-kernels).
constexpr bool narrow_folds_mask(int head_dim) { return head_dim == 128 || head_dim == 256; }

// Tiles with a causal-only kernel beside the runtime-mask one: every narrow tile, and every
// wide tile that takes masked problems (paged D = 128's 176 keys take none) (findings:
// sm90-causal-kernels).
constexpr bool has_causal_kernel(int head_dim, bool paged, bool wide) {
  return (head_dim == 64 || head_dim == 128 || head_dim == 256) && !(head_dim == 128 && paged && wide);
}

// The most query rows of a typical request for which a narrow tile on contiguous K/V or TMA
// pages runs its causal-only kernel; the wide tiles and gathered pages have no limit
// (findings: sm90-causal-kernel-max-rows).
constexpr int64_t kCausalKernelMaxRows = 8192;

// kCausalKernelMaxRows, or FLASHBAND_SM90_CAUSAL_MAX_ROWS where set (0: never, on every
// tile): a knob for measuring the two kernels against each other on one build; results do
// not depend on it. Read once; a value that is not a non-negative integer fails the plan by
// name.
int64_t causal_kernel_max_rows();
// The parse behind it: the setting's text (nullptr: unset) -> the limit.
int64_t parse_causal_kernel_max_rows(const char* env);

// window_left normalised (a window that hides nothing is -1); soft_cap: logits_soft_cap > 0;
// gathered: paged K/V whose pages are not pages_by_tma; request_rows: typical_request_rows;
// max_rows: causal_kernel_max_rows() (0 turns the kernels off everywhere).
constexpr bool use_causal_kernel(int head_dim, bool paged, bool gathered, bool wide, bool causal, int window_left,
                                 bool soft_cap, int64_t request_rows, int64_t max_rows) {
  return has_causal_kernel(head_dim, paged, wide) && causal && window_left < 0 && !soft_cap && max_rows > 0 &&
         (wide || gathered || request_rows <= max_rows);
}

// Masked problems take a kWideMasked tile only when the typical request has at least this
// many query rows: the taller or wider tile's diagonal waste and fewer units cost short
// requests more than it gains (findings: sm90-wide-masked-min-rows). D = 128 starts where
// its narrow tile's causal-only kernel ends.
template <int kHeadDim>
constexpr int64_t kWideMaskedMinRows = 0;
template <>
constexpr int64_t kWideMaskedMinRows<64> = 1024;
template <>
constexpr int64_t kWideMaskedMinRows<128> = kCausalKernelMaxRows;
// The wide tile's KV step in thousandths of the narrow tile's, for the head dims whose
// masked problems choose by planned makespan (wide_masked_pays; 0: by kWideMaskedMinRows
// alone). Fitted to measurements (findings: sm90-wide-masked-min-rows).
constexpr int wide_masked_step_cost(int head_dim) { return head_dim == 64 ? 1320 : 0; }

// Unmasked problems at contiguous D = 128: the narrow fused tile (its kernel without masks)
// where a cost per unit, fitted to measurements, says it beats the 176-key tile for the
// typical request's keys; from kNarrowUnmaskedMaxKeys on, beyond what was measured, the wide
// tile stays (findings: sm90-narrow-unmasked-by-cost).
template <int kHeadDim>
constexpr bool kNarrowUnmaskedByCost = kHeadDim == 128;
constexpr int64_t kNarrowUnmaskedMaxKeys = 1024;

template <int kHeadDim>
constexpr bool narrow_unmasked_pays(int64_t keys) {
  if (!kNarrowUnmaskedByCost<kHeadDim> || keys >= kNarrowUnmaskedMaxKeys) return false;
  constexpr int64_t narrow_n = TileConfig<kHeadDim, false>::kBlockN, wide_n = TileConfig<kHeadDim, true>::kBlockN;
  const int64_t narrow = 172 + 128 * ((keys + narrow_n - 1) / narrow_n);
  const int64_t wide = 225 + 157 * ((keys + wide_n - 1) / wide_n);
  return narrow < wide;
}

// Whether a head dim's masked problems take its wide tile on paged K/V too; paged D = 128's
// do not (findings: sm90-wide-paged).
template <int kHeadDim>
constexpr bool kWidePagedMasked = kHeadDim != 128;
// Whether masked problems on this storage may take the head dim's wide tile; every such tile
// has a causal-only kernel.
template <int kHeadDim>
constexpr bool wide_takes_masked(bool paged) {
  return kWideMasked<kHeadDim> && (!paged || kWidePagedMasked<kHeadDim>);
}
static_assert(has_causal_kernel(128, true, true) == wide_takes_masked<128>(true) &&
              has_causal_kernel(128, false, true) == wide_takes_masked<128>(false));
// Paged problems take the wide tile only from this rule length (tile_rule_length), and
// contiguous ones at D = 256 (findings: sm90-wide-paged, sm90-d256-wide-contiguous).
template <int kHeadDim>
constexpr int64_t kWidePagedMinLength = kHeadDim == 128 || kHeadDim == 256 ? 2048 : 0;
template <int kHeadDim>
constexpr int64_t kWideContiguousMinLength = kHeadDim == 256 ? 4096 : 0;

// masked: takes_runtime_mask_kernels; tma_pages: paged K/V whose pages are pages_by_tma;
// length: the problem's tile_rule_length.
template <int kHeadDim>
constexpr bool use_wide_tiles_of(bool masked, bool paged, bool tma_pages, int64_t length) {
  return kHasWide<kHeadDim> &&
         (paged ? kWidePaged<kHeadDim> && !(tma_pages && kWidePagedGatherOnly<kHeadDim>) &&
                      length >= kWidePagedMinLength<kHeadDim>
                : length >= kWideContiguousMinLength<kHeadDim>) &&
         (masked ? wide_takes_masked<kHeadDim>(paged) && length >= kWideMaskedMinRows<kHeadDim>
                 : !narrow_unmasked_pays<kHeadDim>(length));
}

constexpr bool use_wide_tiles(int head_dim, bool masked, bool paged, bool tma_pages, int64_t length) {
  return head_dim == 64    ? use_wide_tiles_of<64>(masked, paged, tma_pages, length)
         : head_dim == 128 ? use_wide_tiles_of<128>(masked, paged, tma_pages, length)
         : head_dim == 256 ? use_wide_tiles_of<256>(masked, paged, tma_pages, length)
                           : false;
}

// The query rows (tokens; each query head is its own unit) of the request a typical query
// row belongs to: sum(rows^2) / sum(rows) over the requests, so one long request among
// short ones counts as long, as its work does. 0 for a problem without query rows.
inline int64_t typical_request_rows(const int32_t* qo_indptr, int batch) {
  double sum = 0, sum_sq = 0;
  for (int b = 0; b < batch; ++b) {
    const double rows = static_cast<double>(qo_indptr[b + 1] - qo_indptr[b]);
    sum += rows;
    sum_sq += rows * rows;
  }
  return sum > 0 ? static_cast<int64_t>(sum_sq / sum) : 0;
}

// The keys a typical query row sees: sum(rows x keys) / sum(rows) over the requests (a unit's
// KV steps follow its request's keys). 0 for a problem without query rows.
inline int64_t typical_request_keys(const int32_t* qo_indptr, const int32_t* kv_lens, int batch) {
  double sum = 0, sum_keys = 0;
  for (int b = 0; b < batch; ++b) {
    const double rows = static_cast<double>(qo_indptr[b + 1] - qo_indptr[b]);
    sum += rows;
    sum_keys += rows * static_cast<double>(kv_lens[b]);
  }
  return sum > 0 ? static_cast<int64_t>(sum_keys / sum) : 0;
}

// The length use_wide_tiles decides a problem's tile by: the typical request's query rows
// for a masked problem, its keys for an unmasked one.
inline int64_t tile_rule_length(bool masked, const int32_t* qo_indptr, const int32_t* kv_lens, int batch) {
  return masked ? typical_request_rows(qo_indptr, batch) : typical_request_keys(qo_indptr, kv_lens, batch);
}

// For a masked problem that use_wide_tiles lets take the wide tile at a head dim with a
// wide_masked_step_cost: whether its planned makespan (work_list.h), each KV step counted at
// that cost, is below the narrow tile's, each with the KV splits choose_num_splits gives it up
// to max_splits (1: a plan without a workspace). `in` describes the problem (its block_m,
// block_n and num_splits are not read).
bool wide_masked_pays(WorkListInput in, int head_dim, int max_splits);

// Whether the problem `in` describes takes the wide tile: use_wide_tiles for its
// tile_rule_length (less causal windows where wide_masked_takes_causal_windows says no;
// in.window_left normalised), then wide_masked_pays where that applies.
bool plan_wide_tiles(const WorkListInput& in, int head_dim, bool masked, bool paged, bool tma_pages, int max_splits);

// The kernel the rule picks for a problem, as the compiled table's tile and mask columns.
struct KernelChoice {
  bool wide = false;
  MaskKind mask = MaskKind::kAny;
};

// `in` describes the problem as plan_sm90 builds it (window_left normalised); page_size:
// paged K/V's (ignored for contiguous); max_splits: the plan's split limit.
KernelChoice choose_kernel(const WorkListInput& in, int head_dim, bool paged, int64_t page_size, bool soft_cap,
                           int max_splits);

}  // namespace flashband::sm90
