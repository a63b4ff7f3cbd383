// DLTensor <-> TensorView. Compiled only where <dlpack/dlpack.h> is available
// (scripts/bootstrap.sh installs it into deps/dlpack).
#if __has_include(<dlpack/dlpack.h>)
#include "flashband/dlpack.h"

#include <string>

#include "flashband/error.h"

namespace flashband {

namespace {
// DLPack 1.1's fp8 type codes (DLDataTypeCode kDLFloat8_e4m3fn, kDLFloat8_e5m2), which
// torch uses for float8_e4m3fn / float8_e5m2; spelled out because the pinned header
// (DLPack 0.6) predates them.
constexpr uint8_t kCodeFloat8E4M3FN = 10;
constexpr uint8_t kCodeFloat8E5M2 = 12;
}  // namespace

TensorView from_dlpack(const DLTensor& t, const char* what) {
  TensorView v;
  if (t.ndim < 0 || t.ndim > TensorView::kMaxDims)
    throw Error(ErrorCode::kInvalidArgument, std::string(what) + ": ndim " + std::to_string(t.ndim) +
                                                 " is not in [0, " + std::to_string(TensorView::kMaxDims) + "]");
  const auto& d = t.dtype;
  if (d.lanes != 1)
    throw Error(ErrorCode::kInvalidArgument, std::string(what) + ": vector dtypes (lanes " +
                                                 std::to_string(d.lanes) + ") are not supported");
  if (d.code == kDLFloat && d.bits == 16) v.dtype = DType::kF16;
  else if (d.code == kDLBfloat && d.bits == 16) v.dtype = DType::kBF16;
  else if (d.code == kDLFloat && d.bits == 32) v.dtype = DType::kF32;
  else if (d.code == kDLInt && d.bits == 32) v.dtype = DType::kI32;
  else if (d.code == kDLUInt && d.bits == 8) v.dtype = DType::kU8;
  else if (d.code == kCodeFloat8E4M3FN && d.bits == 8) v.dtype = DType::kE4M3;
  else if (d.code == kCodeFloat8E5M2 && d.bits == 8) v.dtype = DType::kE5M2;
  else
    throw Error(ErrorCode::kInvalidArgument,
                std::string(what) + ": DLPack dtype code " + std::to_string(d.code) + " bits " +
                    std::to_string(d.bits) +  " is not one of float16, bfloat16, float32, int32, uint8, float8_e4m3fn, float8_e5m2");
  switch (t.device.device_type) {
    case kDLCPU:
    case kDLCUDAHost: v.device = Device::kCPU; break;
    case kDLCUDA: v.device = Device::kCUDA; break;
    default:
      throw Error(ErrorCode::kInvalidArgument, std::string(what) + ": DLPack device type " +
                                                   std::to_string(t.device.device_type) +
                                                   " is not CPU or CUDA");
  }
  v.device_id = t.device.device_id;
  v.data = static_cast<char*>(t.data) + t.byte_offset;
  v.ndim = t.ndim;
  int64_t stride = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {
    v.shape[i] = t.shape[i];
    v.strides[i] = t.strides ? t.strides[i] : stride;
    stride *= t.shape[i];
  }
  return v;
}

DLDataType to_dlpack_dtype(DType dtype) {
  DLDataType d{};
  d.lanes = 1;
  d.bits = static_cast<uint8_t>(dtype_size(dtype) * 8);
  switch (dtype) {
    case DType::kBF16: d.code = kDLBfloat; break;
    case DType::kI32: d.code = kDLInt; break;
    case DType::kU8: d.code = kDLUInt; break;
    case DType::kE4M3: d.code = kCodeFloat8E4M3FN; break;
    case DType::kE5M2: d.code = kCodeFloat8E5M2; break;
    default: d.code = kDLFloat; break;
  }
  return d;
}

DLTensor to_dlpack(const TensorView& t) {
  DLTensor d{};
  d.data = t.data;
  d.device.device_type = t.device == Device::kCUDA ? kDLCUDA : kDLCPU;
  d.device.device_id = t.device_id;
  d.ndim = t.ndim;
  d.dtype = to_dlpack_dtype(t.dtype);
  // DLTensor does not own shape/strides: they point into the view, which must outlive it.
  d.shape = const_cast<int64_t*>(t.shape);
  d.strides = const_cast<int64_t*>(t.strides);
  d.byte_offset = 0;
  return d;
}

}  // namespace flashband
#endif
