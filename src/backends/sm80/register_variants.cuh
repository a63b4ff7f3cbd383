// The instantiations of one (kernel shape, dtype, head dim) and their registry keys. Each
// kernels/*.cu file calls one of these, so the list of compiled kernels is the list of
// files in kernels/ (greppable) and the build compiles them in parallel.
#pragma once
#include "backends/cuda/numeric.cuh"
#include "backends/sm80/launch.cuh"
#include "backends/sm80/tile_config.h"
#include "dispatch/registry.h"

namespace flashband::sm80 {

inline dispatch::VariantKey sm80_key(dispatch::KernelShape shape, bool paged, DType dtype, int head_dim,
                                     bool needs_mask, bool soft_cap) {
  dispatch::VariantKey k;
  k.backend = Backend::kSM80;
  k.shape = shape;
  k.storage = paged ? core::KVStorage::kPaged : core::KVStorage::kContiguous;
  k.dtype = dtype;
  k.kv_dtype = dtype;
  k.head_dim = head_dim;
  k.needs_mask = needs_mask;
  k.soft_cap = soft_cap;
  return k;
}

// Prefill: 8 kernels (mask x soft cap x paged).
template <class T, int D>
void register_prefill(dispatch::Registry& r) {
  using Cfg = PrefillTile<D>;
  constexpr DType dt = cuda::DTypeOf<T>::value;
  constexpr auto kPrefill = dispatch::KernelShape::kPrefill;
  r.add(sm80_key(kPrefill, false, dt, D, false, false), &launch_attention<Cfg, T, false, false, false>);
  r.add(sm80_key(kPrefill, false, dt, D, false, true), &launch_attention<Cfg, T, false, true, false>);
  r.add(sm80_key(kPrefill, false, dt, D, true, false), &launch_attention<Cfg, T, true, false, false>);
  r.add(sm80_key(kPrefill, false, dt, D, true, true), &launch_attention<Cfg, T, true, true, false>);
  r.add(sm80_key(kPrefill, true, dt, D, false, false), &launch_attention<Cfg, T, false, false, true>);
  r.add(sm80_key(kPrefill, true, dt, D, false, true), &launch_attention<Cfg, T, false, true, true>);
  r.add(sm80_key(kPrefill, true, dt, D, true, false), &launch_attention<Cfg, T, true, false, true>);
  r.add(sm80_key(kPrefill, true, dt, D, true, true), &launch_attention<Cfg, T, true, true, true>);
}

// Decode: 4 kernels (soft cap x paged), each registered for both mask keys. A decode row
// sees one contiguous key range (a window only moves its start), so the masked kernel's
// full-tile branch already does no mask arithmetic; a separate unmasked build would buy
// nothing but build time.
template <class T, int D>
void register_decode(dispatch::Registry& r) {
  using Cfg = DecodeTile<D>;
  constexpr DType dt = cuda::DTypeOf<T>::value;
  constexpr auto kDecode = dispatch::KernelShape::kDecode;
  for (bool needs_mask : {false, true}) {
    r.add(sm80_key(kDecode, false, dt, D, needs_mask, false), &launch_attention<Cfg, T, true, false, false>);
    r.add(sm80_key(kDecode, false, dt, D, needs_mask, true), &launch_attention<Cfg, T, true, true, false>);
    r.add(sm80_key(kDecode, true, dt, D, needs_mask, false), &launch_attention<Cfg, T, true, false, true>);
    r.add(sm80_key(kDecode, true, dt, D, needs_mask, true), &launch_attention<Cfg, T, true, true, true>);
  }
}

}  // namespace flashband::sm80
