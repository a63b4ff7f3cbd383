// The instantiations of one (kernel shape, dtype, head dim) and their registry keys. Each
// kernels/*.cu file calls one of these, so the list of compiled kernels is the list of
// files in kernels/ (greppable) and the build compiles them in parallel.
#pragma once
#include "backends/cuda/numeric.cuh"
#include "backends/sm80/fp8_fragments.h"
#include "backends/sm80/launch.cuh"
#include "backends/sm80/tile_config.h"
#include "dispatch/registry.h"

namespace flashband::sm80 {

inline dispatch::VariantKey sm80_key(dispatch::KernelShape shape, bool paged, DType dtype, int head_dim,
                                     bool needs_mask, bool soft_cap, DType kv_dtype, bool custom_mask = false) {
  dispatch::VariantKey k;
  k.backend = Backend::kSM80;
  k.shape = shape;
  k.storage = paged ? core::KVStorage::kPaged : core::KVStorage::kContiguous;
  k.dtype = dtype;
  k.kv_dtype = kv_dtype;
  k.head_dim = head_dim;
  k.needs_mask = needs_mask;
  k.custom_mask = custom_mask;
  k.soft_cap = soft_cap;
  return k;
}

// Prefill: 8 kernels (mask x soft cap x paged).
template <class T, int D>
void register_prefill(dispatch::Registry& r) {
  using Cfg = PrefillTile<D>;
  constexpr DType dt = cuda::DTypeOf<T>::value;
  constexpr auto kPrefill = dispatch::KernelShape::kPrefill;
  r.add(sm80_key(kPrefill, false, dt, D, false, false, dt), &launch_attention<Cfg, T, T, false, false, false>);
  r.add(sm80_key(kPrefill, false, dt, D, false, true, dt), &launch_attention<Cfg, T, T, false, true, false>);
  r.add(sm80_key(kPrefill, false, dt, D, true, false, dt), &launch_attention<Cfg, T, T, true, false, false>);
  r.add(sm80_key(kPrefill, false, dt, D, true, true, dt), &launch_attention<Cfg, T, T, true, true, false>);
  r.add(sm80_key(kPrefill, true, dt, D, false, false, dt), &launch_attention<Cfg, T, T, false, false, true>);
  r.add(sm80_key(kPrefill, true, dt, D, false, true, dt), &launch_attention<Cfg, T, T, false, true, true>);
  r.add(sm80_key(kPrefill, true, dt, D, true, false, dt), &launch_attention<Cfg, T, T, true, false, true>);
  r.add(sm80_key(kPrefill, true, dt, D, true, true, dt), &launch_attention<Cfg, T, T, true, true, true>);
}

// Prefill with a packed custom mask: 4 kernels (soft cap x paged), the band mask on (the
// window combines with the bits), in files of their own (kernels/prefill_mask_*.cu) so the
// unmasked and band-masked files build as before. Keyed needs_mask + custom_mask only: a
// problem without mask bits never reaches them, one with bits reaches nothing else.
template <class T, int D>
void register_prefill_custom_mask(dispatch::Registry& r) {
  using Cfg = PrefillTile<D>;
  constexpr DType dt = cuda::DTypeOf<T>::value;
  constexpr auto kPrefill = dispatch::KernelShape::kPrefill;
  r.add(sm80_key(kPrefill, false, dt, D, true, false, dt, true), &launch_attention<Cfg, T, T, true, false, false, true>);
  r.add(sm80_key(kPrefill, false, dt, D, true, true, dt, true), &launch_attention<Cfg, T, T, true, true, false, true>);
  r.add(sm80_key(kPrefill, true, dt, D, true, false, dt, true), &launch_attention<Cfg, T, T, true, false, true, true>);
  r.add(sm80_key(kPrefill, true, dt, D, true, true, dt, true), &launch_attention<Cfg, T, T, true, true, true, true>);
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
    r.add(sm80_key(kDecode, false, dt, D, needs_mask, false, dt), &launch_attention<Cfg, T, T, true, false, false>);
    r.add(sm80_key(kDecode, false, dt, D, needs_mask, true, dt), &launch_attention<Cfg, T, T, true, true, false>);
    r.add(sm80_key(kDecode, true, dt, D, needs_mask, false, dt), &launch_attention<Cfg, T, T, true, false, true>);
    r.add(sm80_key(kDecode, true, dt, D, needs_mask, true, dt), &launch_attention<Cfg, T, T, true, true, true>);
  }
}

// fp8 K/V (KV = __nv_fp8_e4m3 or __nv_fp8_e5m2) with q of type T: 10 kernels. Prefill builds
// only the masked kernels (soft cap x paged, single and ragged prefill reaching the
// contiguous ones) and registers each for both mask keys, as decode does: a tile the mask
// does not cut runs with no mask arithmetic, so an unmasked build would double the
// instantiations for the per-tile classification alone. Decode: paged only, the one storage
// batch decode has. Prefill with a custom mask: 4 more (soft cap x paged).
template <class T, class KV, int D>
void register_fp8_kv(dispatch::Registry& r) {
  using Prefill = PrefillTileFp8<D>;
  using Decode = DecodeTileFp8<D>;
  constexpr DType dt = cuda::DTypeOf<T>::value;
  constexpr DType kvt = Fp8Format<KV>::kDType;
  constexpr auto kPrefill = dispatch::KernelShape::kPrefill;
  constexpr auto kDecode = dispatch::KernelShape::kDecode;
  for (bool m : {false, true}) {
    r.add(sm80_key(kPrefill, false, dt, D, m, false, kvt), &launch_attention<Prefill, T, KV, true, false, false>);
    r.add(sm80_key(kPrefill, false, dt, D, m, true, kvt), &launch_attention<Prefill, T, KV, true, true, false>);
    r.add(sm80_key(kPrefill, true, dt, D, m, false, kvt), &launch_attention<Prefill, T, KV, true, false, true>);
    r.add(sm80_key(kPrefill, true, dt, D, m, true, kvt), &launch_attention<Prefill, T, KV, true, true, true>);
    r.add(sm80_key(kDecode, true, dt, D, m, false, kvt), &launch_attention<Decode, T, KV, true, false, true>);
    r.add(sm80_key(kDecode, true, dt, D, m, true, kvt), &launch_attention<Decode, T, KV, true, true, true>);
  }
  r.add(sm80_key(kPrefill, false, dt, D, true, false, kvt, true), &launch_attention<Prefill, T, KV, true, false, false, true>);
  r.add(sm80_key(kPrefill, false, dt, D, true, true, kvt, true), &launch_attention<Prefill, T, KV, true, true, false, true>);
  r.add(sm80_key(kPrefill, true, dt, D, true, false, kvt, true), &launch_attention<Prefill, T, KV, true, false, true, true>);
  r.add(sm80_key(kPrefill, true, dt, D, true, true, kvt, true), &launch_attention<Prefill, T, KV, true, true, true, true>);
}

}  // namespace flashband::sm80
