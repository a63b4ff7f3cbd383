// register_sm90_kernels: the sm90 prefill kernels compiled in kernels/*.cu. Masking and the
// soft cap are runtime inside the runtime-mask kernels (full tiles skip the mask arithmetic
// either way), and only those compile the soft cap, so a key with a soft cap is served as a
// masked one ("masked" below: needs_mask or soft_cap, tile_config.h
// takes_runtime_mask_kernels). One kernel serves the four (needs_mask, soft_cap) keys of
// its dtype / head dim / storage, except that the wide-tile kernel takes over where the
// head dim has one: D = 64 (192 query rows; contiguous and paged K/V) and 128 (176 keys;
// contiguous, and paged on gathered pages) for keys neither masked nor soft-capped, D = 256
// (80 keys; contiguous, and paged on gathered pages) for all four, with a kernel of its own
// for the unmasked keys
// and, for the masked ones (D = 64, 128 and 256), a runtime-mask one and a causal-only one
// (tile_config.h use_wide_tiles, the rule plan_sm90 follows too; make_kernel_params refuses
// a plan whose tile is not the kernel's). Where the rule depends on the problem's shape
// (D = 64 and 128 with a mask: long requests only, and at D = 128 not under a causal
// window; contiguous D = 128 without one: by the typical request's keys,
// narrow_unmasked_pays; paged D = 128 without one and D = 256: by the length, and paged by
// the page size, pages_by_tma), the key's launch runs the kernel of the tile its plan
// chose. On the narrow tiles of D = 64, 128 and 256 (contiguous and paged), and the masked
// wide tiles (D = 64 and 256, contiguous and paged; D = 128, contiguous) a masked key's
// launch runs a causal-only
// kernel where the plan chose it (causal problems without a window or soft cap: short
// requests on a narrow tile, any length on gathered pages or a wide one; tile_config.h
// use_causal_kernel), the runtime-mask one otherwise.
// D = 128 and D = 256 unmasked keys run a narrow kernel compiled without masks where the
// plan takes the narrow tile (tile_config.h kNarrowFoldsMask).
// Decode is not registered: the sm80 backend's decode kernel serves it.
#include "backends/sm90/kernel_args.h"
#include "backends/sm90/sm90_backend.h"
#include "backends/sm90/tile_config.h"
#include "dispatch/registry.h"
#include "flashband/error.h"

namespace flashband::dispatch {

namespace {

struct Compiled {
  DType dtype;
  int head_dim;
  core::KVStorage storage;
  LaunchFn launch;              // the narrow tile; nullptr where the wide one serves every key
  LaunchFn launch_unmasked;     // the narrow tile without masks; nullptr where it has none
  LaunchFn launch_wide;         // the wide tile without masks; nullptr where it has none
  // The wide tile with masks (a launch_masked where the head dim has no narrow tile); nullptr
  // where it has none.
  LaunchFn launch_wide_masked;
  LaunchFn launch_masked;       // launch_masked where a masked key's kernel depends on the problem
  LaunchFn launch_unmasked_by_shape;  // where an unmasked key's tile depends on the problem (no mask or soft cap)
};

constexpr core::KVStorage kContiguous = core::KVStorage::kContiguous;
constexpr core::KVStorage kPaged = core::KVStorage::kPaged;

using sm90::MaskKind;

template <DType kDType, int kHeadDim, bool kPaged, bool kWide = false, MaskKind kMask = MaskKind::kAny>
constexpr LaunchFn kLaunch = sm90::launch_prefill<kDType, kHeadDim, kPaged, kWide, kMask>;

// The launch of a masked key whose kernel the plan picks by the problem: the tile it
// recorded (where the head dim has a masked wide tile and a narrow one; a head dim with
// only the wide tile, kNarrow false, always runs it) and, on either tile, whether the
// causal-only kernel runs (make_kernel_params refuses a problem either kernel cannot serve).
template <DType kDType, int kHeadDim, bool kPaged, bool kNarrow, bool kWideMasked, bool kCausal, bool kWideCausal>
void launch_masked(const core::AttentionParams& a) {
  const sm90::PlanState& st = sm90::plan_state(a);
  if constexpr (kWideMasked) {
    constexpr sm90::TileShape wide = sm90::tile_shape_of<kHeadDim, true>();
    if (!kNarrow || (st.block_m == wide.block_m && st.block_n == wide.block_n)) {
      if constexpr (kWideCausal) {
        if (st.causal_kernel) return sm90::launch_prefill<kDType, kHeadDim, kPaged, true, MaskKind::kCausal>(a);
      }
      return sm90::launch_prefill<kDType, kHeadDim, kPaged, true, MaskKind::kAny>(a);  // refuses any other tile
    }
  }
  if constexpr (kNarrow) {
    if constexpr (kCausal) {
      if (st.causal_kernel) return sm90::launch_prefill<kDType, kHeadDim, kPaged, false, MaskKind::kCausal>(a);
    }
    sm90::launch_prefill<kDType, kHeadDim, kPaged, false, MaskKind::kAny>(a);  // refuses any other tile
  }
}

// The launch of a key without a mask whose tile the plan picks by the problem (D = 128: the
// narrow tile where narrow_unmasked_pays): the wide kernel without masks, or the narrow one, which
// folds the masks away where it has such a kernel and otherwise reads them at run time (a
// problem without one has full tiles but kv_len's last).
template <DType kDType, int kHeadDim, bool kPaged>
void launch_unmasked_by_shape(const core::AttentionParams& a) {
  const sm90::PlanState& st = sm90::plan_state(a);
  constexpr sm90::TileShape wide = sm90::tile_shape_of<kHeadDim, true>();
  if (st.block_m == wide.block_m && st.block_n == wide.block_n)
    return sm90::launch_prefill<kDType, kHeadDim, kPaged, true, MaskKind::kKVLen>(a);
  constexpr MaskKind kNarrowMask = sm90::kNarrowFoldsMask<kHeadDim, kPaged> ? MaskKind::kKVLen : MaskKind::kAny;
  sm90::launch_prefill<kDType, kHeadDim, kPaged, false, kNarrowMask>(a);  // refuses any other tile
}

// One row per dtype / head dim / storage, with the kernels tile_config.h's rule needs: the
// narrow tile unless the wide one serves every key (no row today), the wide one
// without masks (*_wide.cu) and with them where kWideMasked (*_wide_masked.cu at D = 64, 128 and
// 256), the causal-only narrow and wide ones where kCausalKernel (*_causal.cu,
// *_wide_causal.cu), and the narrow one
// without masks where kNarrowFoldsMask (*_unmasked.cu). Only these are referenced, so a
// kernels/*.cu file missing for the rule fails the link.
template <DType T, int D, bool P>
constexpr Compiled row() {
  constexpr bool kWideTile = sm90::kHasWide<D> && (!P || sm90::kWidePaged<D>);
  constexpr bool kWideMasked = kWideTile && sm90::wide_takes_masked<D>(P);
  // Whether some problem of the row takes the narrow tile: the shortest one, on TMA pages
  // where paged (the rule never prefers the wide tile for them).
  constexpr bool kNarrowUnmaskedSome = !sm90::use_wide_tiles_of<D>(false, P, P, 0);
  constexpr bool kNarrow = kNarrowUnmaskedSome || !sm90::use_wide_tiles_of<D>(true, P, P, 0);
  constexpr bool kCausal = kNarrow && sm90::kCausalKernel<D, P, false>;
  constexpr bool kWideCausal = kWideMasked && sm90::kCausalKernel<D, P, true>;
  constexpr bool kNarrowUnmasked = kNarrow && kNarrowUnmaskedSome && sm90::kNarrowFoldsMask<D, P>;
  Compiled c{T, D, P ? kPaged : kContiguous, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr};
  if constexpr (kNarrow) c.launch = kLaunch<T, D, P>;
  if constexpr (kNarrowUnmasked) c.launch_unmasked = kLaunch<T, D, P, false, MaskKind::kKVLen>;
  if constexpr (kWideTile) c.launch_wide = kLaunch<T, D, P, true, MaskKind::kKVLen>;
  if constexpr (kWideCausal && !kNarrow)  // the wide tile alone: the plan picks one of its two masked kernels
    c.launch_wide_masked = launch_masked<T, D, P, false, true, false, true>;
  else if constexpr (kWideMasked)
    c.launch_wide_masked = kLaunch<T, D, P, true>;
  if constexpr (kNarrow && (kWideMasked || kCausal))
    c.launch_masked = launch_masked<T, D, P, true, kWideMasked, kCausal, kWideCausal>;
  if constexpr (kWideTile && kNarrow && sm90::wide_tiles_by_shape(D, false, P))
    c.launch_unmasked_by_shape = launch_unmasked_by_shape<T, D, P>;
  return c;
}

const Compiled kCompiled[] = {
    row<DType::kF16, 64, false>(),   row<DType::kF16, 64, true>(),   row<DType::kF16, 128, false>(),
    row<DType::kF16, 128, true>(),   row<DType::kF16, 256, false>(), row<DType::kF16, 256, true>(),
    row<DType::kBF16, 64, false>(),  row<DType::kBF16, 64, true>(),  row<DType::kBF16, 128, false>(),
    row<DType::kBF16, 128, true>(),  row<DType::kBF16, 256, false>(), row<DType::kBF16, 256, true>(),
};

}  // namespace

void register_sm90_kernels(Registry& r) {
  for (const Compiled& c : kCompiled) {
    for (bool needs_mask : {false, true}) {
      for (bool soft_cap : {false, true}) {
        VariantKey key;
        key.backend = Backend::kSM90;
        key.shape = KernelShape::kPrefill;
        key.storage = c.storage;
        key.dtype = c.dtype;
        key.head_dim = c.head_dim;
        key.needs_mask = needs_mask;
        key.soft_cap = soft_cap;
        const bool paged = c.storage == kPaged;
        // A soft cap takes the runtime-mask kernels, as a mask does (tile_config.h
        // compiles_soft_cap).
        const bool masked = sm90::takes_runtime_mask_kernels(needs_mask, soft_cap);
        // The kernel tile_config.h's rule picks for this key; a kernel the rule needs but the
        // row lacks is an internal error here, at registration, not a wrong launch later
        // (and make_kernel_params still checks the plan's tile against the kernel's).
        LaunchFn fn = c.launch;
        if (sm90::wide_tiles_by_shape(c.head_dim, masked, paged))
          fn = masked ? c.launch_masked : c.launch_unmasked_by_shape;
        else if (sm90::use_wide_tiles(c.head_dim, masked, paged, false, 0))
          fn = masked ? c.launch_wide_masked : c.launch_wide;
        else if (masked && c.launch_masked != nullptr)
          fn = c.launch_masked;  // the causal-only kernel where the plan picked it
        else if (!masked && c.launch_unmasked != nullptr)
          fn = c.launch_unmasked;
        if (fn == nullptr) throw Error(ErrorCode::kInternal, "sm90: no kernel compiled for " + key.to_string());
        r.add(key, fn);
      }
    }
  }
}

}  // namespace flashband::dispatch
