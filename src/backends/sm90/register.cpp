// register_sm90_kernels: the sm90 prefill kernels compiled in kernels/*.cu. Masking and the
// soft cap are runtime inside each kernel (full tiles skip the mask arithmetic either way),
// so one kernel serves all four (needs_mask, soft_cap) keys of its dtype / head dim /
// storage, except that the wide-tile kernel takes over where the head dim has one: D = 64
// (192 query rows; contiguous and paged K/V) and 128 (176 keys; contiguous) for keys without
// a mask, contiguous D = 256 for all four (tile_config.h use_wide_tiles, the rule plan_sm90
// follows too; make_kernel_params refuses a plan whose tile is not the kernel's).
// Decode is not registered: the sm80 backend's decode kernel serves it.
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
  LaunchFn launch;       // nullptr where use_wide_tiles is always true (contiguous D = 256)
  LaunchFn launch_wide;  // nullptr where use_wide_tiles is never true
};

constexpr core::KVStorage kContiguous = core::KVStorage::kContiguous;
constexpr core::KVStorage kPaged = core::KVStorage::kPaged;

template <DType kDType, int kHeadDim, bool kPaged, bool kWide = false>
constexpr LaunchFn kLaunch = sm90::launch_prefill<kDType, kHeadDim, kPaged, kWide>;

// The kernel list: one row per kernels/*.cu file, plus its *_wide.cu file where it has one.
// Contiguous D = 256 compiles only the wide kernel, which serves every key (kWideMasked).
static_assert(sm90::kWideMasked<256>, "contiguous D = 256 would need its narrow kernel again");
const Compiled kCompiled[] = {
    {DType::kF16, 64, kContiguous, kLaunch<DType::kF16, 64, false>, kLaunch<DType::kF16, 64, false, true>},
    {DType::kF16, 64, kPaged, kLaunch<DType::kF16, 64, true>, kLaunch<DType::kF16, 64, true, true>},
    {DType::kF16, 128, kContiguous, kLaunch<DType::kF16, 128, false>, kLaunch<DType::kF16, 128, false, true>},
    {DType::kF16, 128, kPaged, kLaunch<DType::kF16, 128, true>, nullptr},
    {DType::kF16, 256, kContiguous, nullptr, kLaunch<DType::kF16, 256, false, true>},
    {DType::kF16, 256, kPaged, kLaunch<DType::kF16, 256, true>, nullptr},
    {DType::kBF16, 64, kContiguous, kLaunch<DType::kBF16, 64, false>, kLaunch<DType::kBF16, 64, false, true>},
    {DType::kBF16, 64, kPaged, kLaunch<DType::kBF16, 64, true>, kLaunch<DType::kBF16, 64, true, true>},
    {DType::kBF16, 128, kContiguous, kLaunch<DType::kBF16, 128, false>, kLaunch<DType::kBF16, 128, false, true>},
    {DType::kBF16, 128, kPaged, kLaunch<DType::kBF16, 128, true>, nullptr},
    {DType::kBF16, 256, kContiguous, nullptr, kLaunch<DType::kBF16, 256, false, true>},
    {DType::kBF16, 256, kPaged, kLaunch<DType::kBF16, 256, true>, nullptr},
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
        const bool wide = sm90::use_wide_tiles(c.head_dim, needs_mask, c.storage == kPaged);
        // A missing wide kernel leaves the narrow one, which refuses the plan's larger tiles
        // (make_kernel_params checks both tile sides).
        const LaunchFn fn = wide && c.launch_wide ? c.launch_wide : c.launch;
        if (fn == nullptr) throw Error(ErrorCode::kInternal, "sm90: no kernel compiled for " + key.to_string());
        r.add(key, fn);
      }
    }
  }
}

}  // namespace flashband::dispatch
