// Conversions between Python objects (DLPack arrays of any framework, strings, ints) and
// flashband's C++ types. Nothing here copies tensor data: a TensorView aims at the caller's
// memory, which the caller's ndarray keeps alive for the duration of the call.
#pragma once
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <optional>
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

// An input that may be fp8 (K, V, or fp8 attention's q): an fp8 array arrives as its bytes
// (a uint8 view: NumPy cannot export fp8 through DLPack, and not every torch can), with
// `fp8` naming its format ("float8_e4m3fn", "float8_e5m2"); without `fp8` it is view_of.
TensorView fp8_view_of(const InArray& a, const char* what, const std::optional<std::string>& fp8);

// run()'s fp8 scales (q_scale: fp8 attention's; k_scale, v_scale: an fp8 cache's): floats,
// or one-element arrays read when the kernel runs (the tensor wins). `scales` points into
// this object: keep it where it was filled.
struct ScalesArg {
  KVScales scales;
  TensorView q_tensor, k_tensor, v_tensor;
  ScalesArg(double q_scale, double k_scale, double v_scale, const InArray& q_scale_tensor,
            const InArray& k_scale_tensor, const InArray& v_scale_tensor);
  ScalesArg(const ScalesArg&) = delete;
};

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
// "float16", "bfloat16", "float32", "float8_e4m3fn", "float8_e5m2"
DType parse_dtype(const std::string& name, const char* what);
KVLayout parse_kv_layout(const std::string& name);  // "NHD", "HND"
Op parse_op(const std::string& name);               // "single_prefill", ... or op_name()
void* stream_ptr(std::uintptr_t stream);

}  // namespace flashband::python
