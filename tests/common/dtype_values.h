// Host values in flashband's storage dtypes, read and written as double: what the tests use
// to build inputs and to read outputs back, independently of any backend.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "flashband/tensor.h"

namespace flashband::testing {

// The nearest value representable in `dtype` (round to nearest even; through float for the
// 16-bit types; directly from double for fp8, whose out-of-range values become NaN (e4m3fn)
// or infinity (e5m2)).
double round_to_dtype(DType dtype, double x);

// Element i of a host array of `dtype`.
double load_value(DType dtype, const void* base, int64_t i);
void store_value(DType dtype, void* base, int64_t i, double x);

// A contiguous host array of one dtype.
class HostArray {
 public:
  HostArray() = default;
  HostArray(DType dtype, int64_t numel);
  DType dtype() const { return dtype_; }
  int64_t numel() const { return numel_; }
  std::size_t bytes() const { return bytes_.size(); }
  void* data() { return bytes_.data(); }
  const void* data() const { return bytes_.data(); }
  double get(int64_t i) const { return load_value(dtype_, bytes_.data(), i); }
  void set(int64_t i, double x) { store_value(dtype_, bytes_.data(), i, x); }
  void fill(double x);
  void fill_nan();  // quiet NaN in every element, so an unwritten output fails the check

 private:
  DType dtype_ = DType::kF32;
  int64_t numel_ = 0;
  std::vector<unsigned char> bytes_;
};

}  // namespace flashband::testing
