// VariantKey: which compiled kernel runs a problem. Its mask axis is needs_mask, never
// `causal` alone, so a windowed non-causal problem can only reach a masking kernel; a
// custom mask is a second axis (custom_mask implies needs_mask), since a band-masking
// kernel that does not read the bits would compute an unmasked result without a word.
#pragma once
#include <string>

#include "core/params.h"
#include "flashband/options.h"
#include "flashband/tensor.h"

namespace flashband::dispatch {

enum class KernelShape { kPrefill, kDecode };

struct VariantKey {
  Backend backend = Backend::kCPU;
  KernelShape shape = KernelShape::kPrefill;
  core::KVStorage storage = core::KVStorage::kContiguous;
  DType dtype = DType::kBF16;     // q's
  DType kv_dtype = DType::kBF16;  // K/V storage: dtype, or fp8 (a different binary)
  int head_dim = 0;
  bool needs_mask = false;
  bool custom_mask = false;  // reads packed custom-mask bits (AttentionParams::custom_mask)
  bool soft_cap = false;

  bool operator==(const VariantKey& o) const {
    return backend == o.backend && shape == o.shape && storage == o.storage && dtype == o.dtype &&
           kv_dtype == o.kv_dtype &&
           head_dim == o.head_dim && needs_mask == o.needs_mask && custom_mask == o.custom_mask &&
           soft_cap == o.soft_cap;
  }
  bool operator!=(const VariantKey& o) const { return !(*this == o); }
  // "sm80/prefill/paged/bf16/d128/mask/nocap"; a custom mask: ".../mask+custom/..."; fp8 KV adds it after q's: "bf16+kv_e4m3"
  std::string to_string() const;
};

}  // namespace flashband::dispatch
