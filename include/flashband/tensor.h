// TensorView: a non-owning view of a strided tensor, laid out like DLPack's DLTensor
// (strides counted in elements) so conversion is zero-copy. flashband/dlpack.h converts.
#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

namespace flashband {

// kE4M3 / kE5M2: torch.float8_e4m3fn / float8_e5m2, for a KV cache read with per-tensor scales.
// kU8: uint8, the packed bits of a custom mask (SPEC.md "Custom masks").
enum class DType { kF16, kBF16, kF32, kI32, kE4M3, kE5M2, kU8 };
enum class Device { kCPU, kCUDA };

const char* dtype_name(DType dtype);
inline bool is_fp8(DType dtype) { return dtype == DType::kE4M3 || dtype == DType::kE5M2; }
std::size_t dtype_size(DType dtype);

struct TensorView {
  static constexpr int kMaxDims = 6;

  void* data = nullptr;
  DType dtype = DType::kF32;
  Device device = Device::kCPU;
  int device_id = 0;
  int ndim = 0;
  int64_t shape[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};  // in elements, like DLPack

  int64_t size(int dim) const { return shape[dim < 0 ? dim + ndim : dim]; }
  int64_t stride(int dim) const { return strides[dim < 0 ? dim + ndim : dim]; }
  int64_t numel() const;
  bool is_contiguous() const;
  std::string shape_string() const;  // "[4, 32, 128]"

  // A contiguous (row-major) view of `data` with the given shape.
  static TensorView contiguous(void* data, DType dtype, std::initializer_list<int64_t> shape,
                               Device device = Device::kCPU, int device_id = 0);
};

}  // namespace flashband
