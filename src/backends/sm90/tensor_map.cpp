#include "backends/sm90/tensor_map.h"

#include <cuda_runtime_api.h>
#include <cudaTypedefs.h>

#include <mutex>
#include <string>

#include "flashband/error.h"

namespace flashband::sm90 {

namespace {

PFN_cuTensorMapEncodeTiled_v12000 encode_fn() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult status{};
    const cudaError_t err =
        cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &status);
    if (err == cudaSuccess && status == cudaDriverEntryPointSuccess) fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  });
  if (!fn)
    throw Error(ErrorCode::kCudaError,
                "sm90: the CUDA driver does not provide cuTensorMapEncodeTiled (needs a CUDA 12+ driver)");
  return fn;
}

[[noreturn]] void bad_stride(const char* name, const char* what, int64_t stride) {
  throw Error(ErrorCode::kUnsupported,
              std::string(name) + ": " + what + " stride is " + std::to_string(stride) +
                  " elements; the sm90 backend loads with TMA, which needs strides that are a multiple of "
                  "16 bytes (8 elements), as the sm80 backend's 16-byte copies do; the cpu backend takes any "
                  "stride");
}

// TMA wants every stride to be a positive multiple of 16 bytes; a dimension of extent 1 is
// never stepped along, so its stride is irrelevant and replaced by a legal one.
uint64_t stride_bytes(int64_t stride, int64_t extent, const char* name, const char* what) {
  if (extent <= 1) return 16;
  const int64_t bytes = stride * 2;
  if (stride <= 0 || bytes % 16 != 0 || bytes >= (int64_t{1} << 40)) bad_stride(name, what, stride);
  return static_cast<uint64_t>(bytes);
}

CUtensorMapDataType element_type(DType dtype, const char* name) {
  if (dtype != DType::kF16 && dtype != DType::kBF16)
    throw Error(ErrorCode::kInternal, std::string("sm90: tensor map for ") + name + " of dtype " + dtype_name(dtype));
  return dtype == DType::kF16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
}

CUtensorMap encode(int rank, CUtensorMapDataType type, const void* data, const cuuint64_t* dims,
                   const cuuint64_t* strides, const cuuint32_t* box, const char* name, const std::string& shape) {
  if (reinterpret_cast<uintptr_t>(data) % 16 != 0)
    throw Error(ErrorCode::kInvalidArgument, std::string(name) + ": data pointer is not 16-byte aligned");
  const cuuint32_t elem_strides[4] = {1, 1, 1, 1};
  CUtensorMap map{};
  const CUresult r = encode_fn()(&map, type, rank, const_cast<void*>(data), dims, strides, box, elem_strides,
                                 CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                 CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw Error(ErrorCode::kCudaError, std::string("sm90: cuTensorMapEncodeTiled failed for ") + name + " (CUresult " +
                                           std::to_string(static_cast<int>(r)) + ", " + shape + ")");
  return map;
}

}  // namespace

CUtensorMap make_paged_map(const PagedPool& t, int box_rows, const char* name) {
  const CUtensorMapDataType type = element_type(t.dtype, name);
  const cuuint64_t dims[4] = {static_cast<cuuint64_t>(t.head_dim), static_cast<cuuint64_t>(t.page_size),
                              static_cast<cuuint64_t>(t.heads), static_cast<cuuint64_t>(t.pages)};
  const cuuint64_t strides[3] = {stride_bytes(t.stride_n, t.page_size, name, "token"),
                                 stride_bytes(t.stride_h, t.heads, name, "head"),
                                 stride_bytes(t.stride_page, t.pages, name, "page")};
  const cuuint32_t box[4] = {static_cast<cuuint32_t>(kBoxCols), static_cast<cuuint32_t>(box_rows), 1, 1};
  return encode(4, type, t.data, dims, strides, box, name,
                "pages " + std::to_string(t.pages) + ", page_size " + std::to_string(t.page_size));
}

CUtensorMap make_token_major_map(const TokenMajorTensor& t, int box_rows, const char* name) {
  const CUtensorMapDataType type = element_type(t.dtype, name);
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(t.head_dim), static_cast<cuuint64_t>(t.tokens),
                              static_cast<cuuint64_t>(t.heads)};
  const cuuint64_t strides[2] = {stride_bytes(t.stride_n, t.tokens, name, "token"),
                                 stride_bytes(t.stride_h, t.heads, name, "head")};
  const cuuint32_t box[3] = {static_cast<cuuint32_t>(kBoxCols), static_cast<cuuint32_t>(box_rows), 1};
  return encode(3, type, t.data, dims, strides, box, name,
                "tokens " + std::to_string(t.tokens) + ", heads " + std::to_string(t.heads));
}

}  // namespace flashband::sm90
