#include "convert.h"

#include <dlpack/dlpack.h>

#include "flashband/dlpack.h"
#include "validate/validate.h"
#include "flashband/error.h"

namespace flashband::python {
namespace {

// nanobind keeps its own copy of the DLPack structs; rebuild a DLTensor so that the library's
// from_dlpack stays the one place that decides which dtypes and devices flashband accepts.
template <typename Array>
DLTensor as_dltensor(const Array& a) {
  DLTensor t{};
  t.data = const_cast<void*>(static_cast<const void*>(a.data()));  // data() includes byte_offset
  t.device.device_type = static_cast<DLDeviceType>(a.device_type());
  t.device.device_id = a.device_id();
  t.ndim = static_cast<int32_t>(a.ndim());
  t.dtype.code = a.dtype().code;
  t.dtype.bits = a.dtype().bits;
  t.dtype.lanes = a.dtype().lanes;
  t.shape = const_cast<int64_t*>(a.shape_ptr());
  t.strides = const_cast<int64_t*>(a.stride_ptr());
  t.byte_offset = 0;
  return t;
}

[[noreturn]] void invalid(const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument, message);
}

}  // namespace

TensorView view_of(const InArray& a, const char* what) { return from_dlpack(as_dltensor(a), what); }
TensorView view_of(const OutArray& a, const char* what) { return from_dlpack(as_dltensor(a), what); }

TensorView fp8_view_of(const InArray& a, const char* what, const std::optional<std::string>& fp8) {
  if (!fp8) return view_of(a, what);
  const DType dtype = parse_dtype(*fp8, what);
  DLTensor t = as_dltensor(a);
  if (!is_fp8(dtype) || t.dtype.code != kDLUInt || t.dtype.bits != 8 || t.dtype.lanes != 1)
    invalid(std::string(what) + ": an fp8 array is passed as its uint8 bytes with an fp8 format naming it");
  t.dtype = to_dlpack_dtype(dtype);
  return from_dlpack(t, what);
}

namespace {
// One scale: narrowed by name (a scale float32 holds only as 0 or inf is refused, not run),
// and its tensor, if given, viewed into `storage`.
float scale_arg(const char* name, double value, const InArray& tensor, TensorView& storage,
                const TensorView*& slot) {
  if (tensor.is_valid()) {
    storage = view_of(tensor, name);
    slot = &storage;
  }
  return validate::float_param(name, value);
}
}  // namespace

ScalesArg::ScalesArg(double q_scale, double k_scale, double v_scale, const InArray& q_scale_tensor,
                     const InArray& k_scale_tensor, const InArray& v_scale_tensor) {
  scales.q_scale = scale_arg("q_scale", q_scale, q_scale_tensor, q_tensor, scales.q_scale_tensor);
  scales.k_scale = scale_arg("k_scale", k_scale, k_scale_tensor, k_tensor, scales.k_scale_tensor);
  scales.v_scale = scale_arg("v_scale", v_scale, v_scale_tensor, v_tensor, scales.v_scale_tensor);
}

HostIndex host_index(const InArray& a, const char* what) {
  const std::string name(what);
  if (a.device_type() != nb::device::cpu::value)
    invalid(name + ": must be in host memory (plan() reads it on the host); got device type " +
            std::to_string(a.device_type()));
  if (a.dtype() != nb::dtype<int32_t>())
    invalid(name + ": dtype must be int32");
  if (a.ndim() != 1) invalid(name + ": must be 1-D; got " + std::to_string(a.ndim()) + " dims");
  if (a.shape(0) > 1 && a.stride(0) != 1) invalid(name + ": must be contiguous");
  return HostIndex{static_cast<const int32_t*>(a.data()), static_cast<int64_t>(a.shape(0))};
}

WorkspaceArg workspace_of(const OutArray& a, const char* what) {
  const std::string name(what);
  WorkspaceArg w;
  switch (a.device_type()) {
    case nb::device::cpu::value: w.device = Device::kCPU; break;
    case nb::device::cuda::value: w.device = Device::kCUDA; break;
    default:
      invalid(name + ": must live on the CPU or a CUDA device; got DLPack device type " +
              std::to_string(a.device_type()));
  }
  w.device_id = a.device_id();
  // A contiguous buffer is all plan() needs; its element type does not matter.
  int64_t expected = 1;
  for (size_t i = a.ndim(); i-- > 0;) {
    if (a.shape(i) > 1 && a.stride(i) != expected) invalid(name + ": must be contiguous");
    expected *= static_cast<int64_t>(a.shape(i));
  }
  w.workspace.data = a.data();
  w.workspace.bytes = a.nbytes();
  return w;
}

Device parse_device(const std::string& name) {
  if (name == "cpu") return Device::kCPU;
  if (name == "cuda") return Device::kCUDA;
  invalid("device: '" + name + "' is not one of 'cpu', 'cuda'");
}

DType parse_dtype(const std::string& name, const char* what) {
  if (name == "float16") return DType::kF16;
  if (name == "bfloat16") return DType::kBF16;
  if (name == "float32") return DType::kF32;
  if (name == "float8_e4m3fn") return DType::kE4M3;
  if (name == "float8_e5m2") return DType::kE5M2;
  invalid(std::string(what) + ": '" + name +
          "' is not one of 'float16', 'bfloat16', 'float32', 'float8_e4m3fn', 'float8_e5m2'");
}

KVLayout parse_kv_layout(const std::string& name) {
  if (name == "NHD") return KVLayout::kNHD;
  if (name == "HND") return KVLayout::kHND;
  invalid("kv_layout: '" + name + "' is not one of 'NHD', 'HND'");
}

Op parse_op(const std::string& name) {
  struct Named { const char* python; Op op; };
  static const Named kOps[] = {{"single_prefill", Op::kSinglePrefill},
                               {"ragged_prefill", Op::kRaggedPrefill},
                               {"paged_prefill", Op::kPagedPrefill},
                               {"paged_decode", Op::kPagedDecode}};
  for (const Named& n : kOps)
    if (name == n.python || name == op_name(n.op)) return n.op;
  invalid("op: '" + name +
          "' is not one of 'single_prefill', 'ragged_prefill', 'paged_prefill', 'paged_decode'");
}

void* stream_ptr(std::uintptr_t stream) { return reinterpret_cast<void*>(stream); }

}  // namespace flashband::python
