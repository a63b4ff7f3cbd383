// register_sm90_kernels: the sm90 prefill kernels compiled in kernels/*.cu. Masking and the
// soft cap are runtime inside each kernel (full tiles skip the mask arithmetic either way),
// so one kernel serves all four (needs_mask, soft_cap) keys of its dtype / head dim /
// storage, except that the wide-tile kernel takes over where the head dim has one: D = 64
// (192 query rows; contiguous and paged K/V) and 128 (176 keys; contiguous) for keys without
// a mask, contiguous D = 256 (80 keys) for all four, with a kernel of its own for the keys
// without a mask and one for those with it (tile_config.h use_wide_tiles, the rule plan_sm90
// follows too; make_kernel_params refuses a plan whose tile is not the kernel's). Where the
// rule depends on the problem's shape (D = 64 with a mask: long requests only), the key's
// launch runs the kernel of the tile its plan chose. On the narrow tiles of D = 64 and 128
// (contiguous and paged) a masked key's launch runs a causal-only kernel where the plan
// chose it (causal problems without a window and with short requests: tile_config.h
// use_causal_kernel), the runtime-mask one otherwise. Paged D = 128 and 256 keys without a
// mask run a narrow kernel compiled without masks (tile_config.h kNarrowFoldsMask).
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
  LaunchFn launch_wide_masked;  // the wide tile with masks; nullptr where it has none
  LaunchFn launch_masked;       // launch_masked where a masked key's kernel depends on the problem
};

constexpr core::KVStorage kContiguous = core::KVStorage::kContiguous;
constexpr core::KVStorage kPaged = core::KVStorage::kPaged;

using sm90::MaskKind;

template <DType kDType, int kHeadDim, bool kPaged, bool kWide = false, MaskKind kMask = MaskKind::kAny>
constexpr LaunchFn kLaunch = sm90::launch_prefill<kDType, kHeadDim, kPaged, kWide, kMask>;

// The launch of a masked key whose kernel the plan picks by the problem: the tile it
// recorded (where the head dim has a masked wide tile) and, on the narrow tile, whether the
// causal-only kernel runs (make_kernel_params refuses a problem either kernel cannot serve).
template <DType kDType, int kHeadDim, bool kPaged, bool kWideMasked, bool kCausal>
void launch_masked(const core::AttentionParams& a) {
  const sm90::PlanState& st = sm90::plan_state(a);
  if constexpr (kWideMasked) {
    constexpr sm90::TileShape wide = sm90::tile_shape_of<kHeadDim, true>();
    if (st.block_m == wide.block_m && st.block_n == wide.block_n)
      return sm90::launch_prefill<kDType, kHeadDim, kPaged, true, MaskKind::kAny>(a);
  }
  if constexpr (kCausal) {
    if (st.causal_kernel) return sm90::launch_prefill<kDType, kHeadDim, kPaged, false, MaskKind::kCausal>(a);
  }
  sm90::launch_prefill<kDType, kHeadDim, kPaged, false, MaskKind::kAny>(a);  // refuses any other tile
}

// One row per dtype / head dim / storage, with the kernels tile_config.h's rule needs: the
// narrow tile unless the wide one serves every key (contiguous D = 256), the wide one
// without masks (*_wide.cu) and with them where kWideMasked (*_wide_masked.cu at D = 64 and
// 256), the causal-only narrow one where kCausalKernel (*_causal.cu), and the narrow one
// without masks where kNarrowFoldsMask (*_unmasked.cu). Only these are referenced, so a
// kernels/*.cu file missing for the rule fails the link.
template <DType T, int D, bool P>
constexpr Compiled row() {
  constexpr bool kWideTile = sm90::kHasWide<D> && (!P || sm90::kWidePaged<D>);
  constexpr bool kWideMasked = kWideTile && sm90::kWideMasked<D>;
  constexpr bool kNarrow = !(sm90::use_wide_tiles_of<D>(false, P, 0) && sm90::use_wide_tiles_of<D>(true, P, 0));
  constexpr bool kCausal = kNarrow && sm90::kCausalKernel<D, P, false>;
  constexpr bool kNarrowUnmasked =
      kNarrow && !sm90::use_wide_tiles_of<D>(false, P, 0) && sm90::kNarrowFoldsMask<D, P>;
  Compiled c{T, D, P ? kPaged : kContiguous, nullptr, nullptr, nullptr, nullptr, nullptr};
  if constexpr (kNarrow) c.launch = kLaunch<T, D, P>;
  if constexpr (kNarrowUnmasked) c.launch_unmasked = kLaunch<T, D, P, false, MaskKind::kKVLen>;
  if constexpr (kWideTile) c.launch_wide = kLaunch<T, D, P, true, MaskKind::kKVLen>;
  if constexpr (kWideMasked) c.launch_wide_masked = kLaunch<T, D, P, true>;
  if constexpr (kNarrow && (kWideMasked || kCausal))
    c.launch_masked = launch_masked<T, D, P, kWideMasked, kCausal>;
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
        // The kernel tile_config.h's rule picks for this key; a kernel the rule needs but the
        // row lacks is an internal error here, at registration, not a wrong launch later
        // (and make_kernel_params still checks the plan's tile against the kernel's).
        LaunchFn fn = c.launch;
        if (sm90::wide_tiles_by_shape(c.head_dim, needs_mask, paged))
          fn = c.launch_masked;
        else if (sm90::use_wide_tiles(c.head_dim, needs_mask, paged, 0))
          fn = needs_mask ? c.launch_wide_masked : c.launch_wide;
        else if (needs_mask && c.launch_masked != nullptr)
          fn = c.launch_masked;  // the causal-only kernel where the plan picked it
        else if (!needs_mask && c.launch_unmasked != nullptr)
          fn = c.launch_unmasked;
        if (fn == nullptr) throw Error(ErrorCode::kInternal, "sm90: no kernel compiled for " + key.to_string());
        r.add(key, fn);
      }
    }
  }
}

}  // namespace flashband::dispatch
