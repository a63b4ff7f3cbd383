#include "dtype_values.h"

#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/float_convert.h"

namespace flashband::testing {

double round_to_dtype(DType dtype, double x) {
  const float f = static_cast<float>(x);
  switch (dtype) {
    case DType::kF32: return f;
    case DType::kF16: return core::half_bits_to_float(core::float_to_half_bits(f));
    case DType::kBF16: return core::bf16_bits_to_float(core::float_to_bf16_bits(f));
    default: throw std::invalid_argument(std::string("round_to_dtype: ") + dtype_name(dtype));
  }
}

double load_value(DType dtype, const void* base, int64_t i) {
  switch (dtype) {
    case DType::kF32: return static_cast<const float*>(base)[i];
    case DType::kF16: return core::half_bits_to_float(static_cast<const uint16_t*>(base)[i]);
    case DType::kBF16: return core::bf16_bits_to_float(static_cast<const uint16_t*>(base)[i]);
    case DType::kI32: return static_cast<const int32_t*>(base)[i];
  }
  throw std::invalid_argument("load_value: unknown dtype");
}

void store_value(DType dtype, void* base, int64_t i, double x) {
  switch (dtype) {
    case DType::kF32: static_cast<float*>(base)[i] = static_cast<float>(x); return;
    case DType::kF16: static_cast<uint16_t*>(base)[i] = core::float_to_half_bits(static_cast<float>(x)); return;
    case DType::kBF16: static_cast<uint16_t*>(base)[i] = core::float_to_bf16_bits(static_cast<float>(x)); return;
    case DType::kI32: static_cast<int32_t*>(base)[i] = static_cast<int32_t>(x); return;
  }
  throw std::invalid_argument("store_value: unknown dtype");
}

HostArray::HostArray(DType dtype, int64_t numel)
    : dtype_(dtype), numel_(numel), bytes_(static_cast<std::size_t>(numel) * dtype_size(dtype)) {}

void HostArray::fill(double x) {
  for (int64_t i = 0; i < numel_; ++i) set(i, x);
}

void HostArray::fill_nan() { fill(std::numeric_limits<double>::quiet_NaN()); }

}  // namespace flashband::testing
