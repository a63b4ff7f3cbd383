#include "dtype_values.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/float_convert.h"
#include "fp8_values.h"

namespace flashband::testing {

namespace {

// The fp8 code nearest to x, ties to the even code (an even mantissa): both formats'
// codes 0..max_code are their non-negative finite values in increasing order, so a binary
// search finds the neighbours. Past the largest finite value by half a step or more: NaN
// for e4m3fn (it has no infinity), infinity for e5m2, as torch converts.
uint8_t nearest_fp8(DType dtype, double x) {
  const uint8_t nan_code = dtype == DType::kE4M3 ? 0x7F : 0x7E;
  if (std::isnan(x)) return nan_code;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  const double a = std::fabs(x);
  const int max_code = dtype == DType::kE4M3 ? 0x7E : 0x7B;
  const double max = fp8_value(dtype, static_cast<uint8_t>(max_code));
  const double next_exp_step = max - fp8_value(dtype, static_cast<uint8_t>(max_code - 1));
  if (a >= max + next_exp_step / 2) return static_cast<uint8_t>(sign | (dtype == DType::kE4M3 ? 0x7F : 0x7C));
  int lo = 0, hi = max_code;  // fp8_value(lo) <= a < fp8_value(hi), or a >= max
  if (a >= max) return static_cast<uint8_t>(sign | max_code);
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    (fp8_value(dtype, static_cast<uint8_t>(mid)) <= a ? lo : hi) = mid;
  }
  const double below = a - fp8_value(dtype, static_cast<uint8_t>(lo));
  const double above = fp8_value(dtype, static_cast<uint8_t>(hi)) - a;
  const int code = below < above ? lo : above < below ? hi : (lo % 2 == 0 ? lo : hi);
  return static_cast<uint8_t>(sign | code);
}

}  // namespace

double round_to_dtype(DType dtype, double x) {
  const float f = static_cast<float>(x);
  switch (dtype) {
    case DType::kF32: return f;
    case DType::kF16: return core::half_bits_to_float(core::float_to_half_bits(f));
    case DType::kBF16: return core::bf16_bits_to_float(core::float_to_bf16_bits(f));
    case DType::kE4M3:
    case DType::kE5M2: return fp8_value(dtype, nearest_fp8(dtype, x));
    default: throw std::invalid_argument(std::string("round_to_dtype: ") + dtype_name(dtype));
  }
}

double load_value(DType dtype, const void* base, int64_t i) {
  switch (dtype) {
    case DType::kF32: return static_cast<const float*>(base)[i];
    case DType::kF16: return core::half_bits_to_float(static_cast<const uint16_t*>(base)[i]);
    case DType::kBF16: return core::bf16_bits_to_float(static_cast<const uint16_t*>(base)[i]);
    case DType::kI32: return static_cast<const int32_t*>(base)[i];
    case DType::kU8: return static_cast<const uint8_t*>(base)[i];
    case DType::kE4M3:
    case DType::kE5M2: return fp8_value(dtype, static_cast<const uint8_t*>(base)[i]);
  }
  throw std::invalid_argument("load_value: unknown dtype");
}

void store_value(DType dtype, void* base, int64_t i, double x) {
  switch (dtype) {
    case DType::kF32: static_cast<float*>(base)[i] = static_cast<float>(x); return;
    case DType::kF16: static_cast<uint16_t*>(base)[i] = core::float_to_half_bits(static_cast<float>(x)); return;
    case DType::kBF16: static_cast<uint16_t*>(base)[i] = core::float_to_bf16_bits(static_cast<float>(x)); return;
    case DType::kI32: static_cast<int32_t*>(base)[i] = static_cast<int32_t>(x); return;
    case DType::kU8: static_cast<uint8_t*>(base)[i] = static_cast<uint8_t>(x); return;
    case DType::kE4M3:
    case DType::kE5M2: static_cast<uint8_t*>(base)[i] = nearest_fp8(dtype, x); return;
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
