#include "dispatch/variant.h"

namespace flashband::dispatch {

std::string VariantKey::to_string() const {
  std::string s = backend_name(backend);
  s += shape == KernelShape::kDecode ? "/decode" : "/prefill";
  s += storage == core::KVStorage::kPaged ? "/paged/" : "/ragged/";
  s += dtype == DType::kF16 ? "f16" : dtype == DType::kBF16 ? "bf16" : dtype == DType::kF32 ? "f32" : "i32";
  if (kv_dtype == DType::kE4M3) s += "+kv_e4m3";
  if (kv_dtype == DType::kE5M2) s += "+kv_e5m2";
  s += head_dim == 0 ? "/d*" : "/d" + std::to_string(head_dim);
  s += needs_mask ? "/mask" : "/nomask";
  if (custom_mask) s += "+custom";
  s += soft_cap ? "/softcap" : "/nocap";
  return s;
}

}  // namespace flashband::dispatch
