// Row conversion between the storage dtypes and float for the cpu backend. Rows are short
// (head_dim elements); the dtype switch sits outside the element loop.
#pragma once
#include <cstdint>

#include "core/float_convert.h"
#include "flashband/error.h"
#include "flashband/tensor.h"

namespace flashband::cpu {

// out[i] = element (offset + i) of `base`, as float, for i in [0, n).
inline void load_row(DType dtype, const void* base, int64_t offset, int n, float* out) {
  switch (dtype) {
    case DType::kF32: {
      const float* src = static_cast<const float*>(base) + offset;
      for (int i = 0; i < n; ++i) out[i] = src[i];
      return;
    }
    case DType::kF16: {
      const uint16_t* src = static_cast<const uint16_t*>(base) + offset;
      for (int i = 0; i < n; ++i) out[i] = core::half_bits_to_float(src[i]);
      return;
    }
    case DType::kBF16: {
      const uint16_t* src = static_cast<const uint16_t*>(base) + offset;
      for (int i = 0; i < n; ++i) out[i] = core::bf16_bits_to_float(src[i]);
      return;
    }
    // fp8 K/V: each element decoded as it is read (no dequantized copy of the cache); the
    // scales are applied by the caller, folded into q's scale and the output's.
    case DType::kE4M3: {
      const uint8_t* src = static_cast<const uint8_t*>(base) + offset;
      for (int i = 0; i < n; ++i) out[i] = core::e4m3_bits_to_float(src[i]);
      return;
    }
    case DType::kE5M2: {
      const uint8_t* src = static_cast<const uint8_t*>(base) + offset;
      for (int i = 0; i < n; ++i) out[i] = core::e5m2_bits_to_float(src[i]);
      return;
    }
    default:
      throw Error(ErrorCode::kInternal,
                  std::string("cpu backend: cannot load dtype ") + dtype_name(dtype));
  }
}

// Element (offset + i) of `base` = in[i] * scale, rounded to `dtype` (nearest even).
inline void store_row(DType dtype, void* base, int64_t offset, int n, const float* in,
                      float scale) {
  switch (dtype) {
    case DType::kF32: {
      float* dst = static_cast<float*>(base) + offset;
      for (int i = 0; i < n; ++i) dst[i] = in[i] * scale;
      return;
    }
    case DType::kF16: {
      uint16_t* dst = static_cast<uint16_t*>(base) + offset;
      for (int i = 0; i < n; ++i) dst[i] = core::float_to_half_bits(in[i] * scale);
      return;
    }
    case DType::kBF16: {
      uint16_t* dst = static_cast<uint16_t*>(base) + offset;
      for (int i = 0; i < n; ++i) dst[i] = core::float_to_bf16_bits(in[i] * scale);
      return;
    }
    default:
      throw Error(ErrorCode::kInternal,
                  std::string("cpu backend: cannot store dtype ") + dtype_name(dtype));
  }
}

}  // namespace flashband::cpu
