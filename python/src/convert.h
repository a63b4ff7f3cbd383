// Conversions between Python objects (DLPack arrays of any framework, strings, ints) and
// flashband's C++ types. Nothing here copies tensor data: a TensorView aims at the caller's
// memory, which the caller's ndarray keeps alive for the duration of the call.
#pragma once
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <string>

#include "flashband/attention.h"
#include "flashband/capability.h"
#include "flashband/options.h"
#include "flashband/tensor.h"

namespace flashband::python {

namespace nb = nanobind;

// Inputs are imported read-only (read-only NumPy arrays are accepted), outputs writable.
using InArray = nb::ndarray<nb::ro>;
using OutArray = nb::ndarray<>;

// Zero-copy views; throw flashband::Error naming `what` when the dtype or device has no
// flashband equivalent (flashband::from_dlpack decides).
TensorView view_of(const InArray& a, const char* what);
TensorView view_of(const OutArray& a, const char* what);

// A host int32 1-D contiguous array (plan's index arrays); throws naming `what` otherwise.
struct HostIndex {
  const int32_t* data = nullptr;
  int64_t size = 0;
};
HostIndex host_index(const InArray& a, const char* what);

// The caller's workspace buffer: any dtype, contiguous, on the device the plan runs on.
struct WorkspaceArg {
  Workspace workspace;
  Device device = Device::kCPU;
  int device_id = 0;
};
WorkspaceArg workspace_of(const OutArray& a, const char* what);

Device parse_device(const std::string& name);      // "cpu", "cuda"
DType parse_dtype(const std::string& name, const char* what);  // "float16", "bfloat16", "float32"
KVLayout parse_kv_layout(const std::string& name);  // "NHD", "HND"
Op parse_op(const std::string& name);               // "single_prefill", ... or op_name()
void* stream_ptr(std::uintptr_t stream);

}  // namespace flashband::python
