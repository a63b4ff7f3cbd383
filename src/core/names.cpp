// Printable names of the public enums, and parse_backend.
#include <cstring>
#include <string>

#include "flashband/attention.h"
#include "flashband/capability.h"

namespace flashband {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid_argument";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kNotBuilt: return "not_built";
    case ErrorCode::kCudaError: return "cuda_error";
    case ErrorCode::kInternal: return "internal";
  }
  return "?";
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF16: return "float16";
    case DType::kBF16: return "bfloat16";
    case DType::kF32: return "float32";
    case DType::kI32: return "int32";
    case DType::kE4M3: return "float8_e4m3fn";
    case DType::kE5M2: return "float8_e5m2";
    case DType::kU8: return "uint8";
  }
  return "?";
}

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kE4M3:
    case DType::kE5M2:
    case DType::kU8: return 1;
    case DType::kF16:
    case DType::kBF16: return 2;
    case DType::kF32:
    case DType::kI32: return 4;
  }
  return 0;
}

const char* kv_layout_name(KVLayout layout) { return layout == KVLayout::kNHD ? "NHD" : "HND"; }

const char* backend_name(Backend backend) {
  switch (backend) {
    case Backend::kAuto: return "auto";
    case Backend::kCPU: return "cpu";
    case Backend::kSM80: return "sm80";
    case Backend::kSM90: return "sm90";
    case Backend::kCUDNN: return "cudnn";
  }
  return "?";
}

Backend parse_backend(const char* name) {
  for (Backend b : {Backend::kAuto, Backend::kCPU, Backend::kSM80, Backend::kSM90, Backend::kCUDNN})
    if (name && std::strcmp(name, backend_name(b)) == 0) return b;
  throw Error(ErrorCode::kInvalidArgument,
              std::string("backend: got '") + (name ? name : "(null)") +
                  "', allowed: auto, cpu, sm80, sm90, cudnn");
}

const char* op_name(Op op) {
  switch (op) {
    case Op::kSinglePrefill: return "single_prefill";
    case Op::kRaggedPrefill: return "batch_prefill_ragged";
    case Op::kPagedPrefill: return "batch_prefill_paged";
    case Op::kPagedDecode: return "batch_decode_paged";
  }
  return "?";
}

}  // namespace flashband
