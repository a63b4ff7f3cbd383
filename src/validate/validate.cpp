#include "validate/validate.h"

#include "core/mask.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace flashband::validate {

namespace {

[[noreturn]] void fail(const std::string& msg) { throw Error(ErrorCode::kInvalidArgument, msg); }

std::string str(int64_t v) { return std::to_string(v); }

// A float as it was given ("0.37", "nan", "-inf"), not std::to_string's fixed six decimals.
std::string real(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// Byte extent [lo, hi) a strided view can touch.
void extent(const TensorView& t, uintptr_t& lo, uintptr_t& hi) {
  const auto base = reinterpret_cast<uintptr_t>(t.data);
  int64_t min_off = 0, max_off = 0;
  for (int i = 0; i < t.ndim; ++i) {
    if (t.shape[i] == 0) {
      lo = hi = base;
      return;
    }
    const int64_t span = (t.shape[i] - 1) * t.strides[i];
    (span < 0 ? min_off : max_off) += span;
  }
  const int64_t es = static_cast<int64_t>(dtype_size(t.dtype));
  lo = base + min_off * es;
  hi = base + (max_off + 1) * es;
}

}  // namespace

void options(const Options& o) {
  if (o.window_left < -1)
    fail("window_left: got " + str(o.window_left) + ", allowed: -1 (no window) or >= 0");
  if (o.window_right < -1)
    fail("window_right: got " + str(o.window_right) + ", allowed: -1 (no right bound) or >= 0");
  if (core::right_bounds_conflict(o.causal, o.window_right))
    fail("window_right: got " + str(o.window_right) + " with causal=true, which already bounds the right side at "
         "window_right 0; allowed with causal=true: -1 or 0. For keys up to p(i) + " + str(o.window_right) +
         " pass causal=false");
  if (core::custom_mask_conflicts(o.causal, o.custom_mask))
    fail("causal: got true with a custom_mask; a custom mask states every visible key itself, so put the "
         "causal bits into the mask and pass causal=false (FlashInfer ignores causal there; flashband refuses it)");
  if (std::isnan(o.logits_soft_cap) || o.logits_soft_cap < 0.0f)
    fail("logits_soft_cap: got " + std::to_string(o.logits_soft_cap) + ", allowed: 0 (off) or a finite value > 0");
  if (std::isinf(o.logits_soft_cap))
    fail("logits_soft_cap: got inf, allowed: 0 (off) or a finite value > 0");
  if (o.sm_scale && !(std::isfinite(*o.sm_scale) && *o.sm_scale > 0.0f))
    fail("sm_scale: got " + std::to_string(*o.sm_scale) + ", allowed: a finite value > 0");
}

float float_param(const char* name, double value) {
  const float f = static_cast<float>(value);
  if (std::isfinite(value) && value != 0.0 && (f == 0.0f || std::isinf(f))) {
    char shown[32];
    std::snprintf(shown, sizeof shown, "%.17g", value);
    fail(std::string(name) + ": got " + shown + ", which is " + (f == 0.0f ? "0" : "infinite") +
         " in float32 (the precision the kernels use); allowed: a value whose float32 is finite and nonzero");
  }
  return f;
}

void count_at_least(const char* name, int64_t value, int64_t min) {
  if (value < min) fail(std::string(name) + ": got " + str(value) + ", allowed: >= " + str(min));
}

void heads(int hq, int hk, int d) {
  if (hq <= 0) fail("num_qo_heads: got " + str(hq) + ", allowed: > 0");
  if (hk <= 0) fail("num_kv_heads: got " + str(hk) + ", allowed: > 0");
  if (hq % hk != 0)
    fail("num_qo_heads: got " + str(hq) + ", must be a multiple of num_kv_heads " + str(hk) + " (GQA/MQA)");
  if (d <= 0) fail("head_dim: got " + str(d) + ", allowed: > 0");
}

void dims(const Arg& a, int ndim, const char* layout) {
  if (a.t.ndim != ndim)
    fail(std::string(a.name) + ": got " + str(a.t.ndim) + " dimensions " + a.t.shape_string() + ", expected " +
         str(ndim) + " " + layout);
}

void dim_equals(const Arg& a, int dim, int64_t want, const char* what) {
  if (a.t.shape[dim] != want)
    fail(std::string(a.name) + ": dimension " + str(dim) + " of shape " + a.t.shape_string() + " is " +
         str(a.t.shape[dim]) + ", expected " + str(want) + " (" + what + ")");
}

void fits_int32(const Arg& a, int dim, const char* what) {
  if (a.t.shape[dim] > INT32_MAX)
    fail(std::string(a.name) + ": " + what + " " + str(a.t.shape[dim]) + " (dimension " + str(dim) +
         ") exceeds 2^31 - 1");
}

void dtype(const Arg& a, DType want, const char* why) {
  if (a.t.dtype != want)
    fail(std::string(a.name) + ": dtype " + dtype_name(a.t.dtype) + ", expected " + dtype_name(want) + " (" + why + ")");
}

namespace {
// Why fp8 is refused where a 16-bit or 32-bit float is expected.
const char* kFp8QNote =
    " (q of fp8 attention is float8_e4m3fn only; an fp8 cache with 16-bit q goes in k/v with kv_data_type)";
}  // namespace

void float_dtype(const Arg& a) {
  if (a.t.dtype != DType::kF16 && a.t.dtype != DType::kBF16 && a.t.dtype != DType::kF32)
    fail(std::string(a.name) + ": dtype " + dtype_name(a.t.dtype) + ", allowed: float16, bfloat16, float32" +
         (is_fp8(a.t.dtype) ? kFp8QNote : ""));
}

void q_dtype(const Arg& a) {
  if (a.t.dtype != DType::kE4M3) float_dtype(a);
}

void kv_dtype(DType q, DType kv) {
  // fp8 attention: FlashInfer asserts q.dtype == k.dtype == v.dtype for fp8 q.
  if (q == DType::kE4M3 && kv != q)
    fail(std::string("kv_data_type: got ") + dtype_name(kv) +
         " with q_data_type float8_e4m3fn, allowed: float8_e4m3fn (fp8 attention reads e4m3 q, K and V)");
  if (kv == q) return;
  if (!is_fp8(kv))
    fail(std::string("kv_data_type: got ") + dtype_name(kv) + " with q_data_type " + dtype_name(q) +
         ", allowed: q's dtype, float8_e4m3fn, float8_e5m2");
  if (q != DType::kF16 && q != DType::kBF16)
    fail(std::string("kv_data_type: got ") + dtype_name(kv) + " with q_data_type " + dtype_name(q) +
         "; an fp8 cache is read with float16 or bfloat16 q");
}

DType o_dtype(DType q, std::optional<DType> o, const char* name) {
  if (q != DType::kE4M3) {
    if (o && *o != q)
      fail(std::string(name) + ": got " + dtype_name(*o) + " with q_data_type " + dtype_name(q) +
           ", allowed: q's dtype (another output dtype is fp8 attention's, with float8_e4m3fn q)");
    return q;
  }
  if (!o)
    fail(std::string(name) + ": not given, required with q_data_type float8_e4m3fn (fp8 attention writes "
                             "float16 or bfloat16; there is no fp8 output)");
  if (*o != DType::kF16 && *o != DType::kBF16)
    fail(std::string(name) + ": got " + dtype_name(*o) +
         " with q_data_type float8_e4m3fn, allowed: float16, bfloat16");
  return *o;
}

void kv_scale(const char* name, float value) {
  if (!(value > 0.0f) || !std::isfinite(value))
    fail(std::string(name) + ": got " + real(value) + ", allowed: finite and > 0");
}

void kv_scale_tensor(const char* name, const TensorView& t, Device device, int device_id) {
  const std::string n(name);
  if (t.numel() != 1) fail(n + ": shape " + t.shape_string() + ", allowed: one element");
  if (t.dtype != DType::kF32) fail(n + ": dtype " + dtype_name(t.dtype) + ", allowed: float32");
  if (t.device != device || (device == Device::kCUDA && t.device_id != device_id))
    fail(n + ": on " + (t.device == Device::kCUDA ? "cuda:" + str(t.device_id) : std::string("the host")) +
         ", allowed: the plan's device (" + (device == Device::kCUDA ? "cuda:" + str(device_id) : std::string("host")) +
         ")");
  if (!t.data) fail(n + ": data is null");
  if (reinterpret_cast<uintptr_t>(t.data) % alignof(float) != 0)
    fail(n + ": pointer " + str(reinterpret_cast<uintptr_t>(t.data)) + " is not 4-byte aligned");
  if (device == Device::kCPU) kv_scale(name, *static_cast<const float*>(t.data));
}

void last_dim_contiguous(const Arg& a) {
  if (a.t.ndim > 0 && a.t.shape[a.t.ndim - 1] > 1 && a.t.strides[a.t.ndim - 1] != 1)
    fail(std::string(a.name) + ": last dimension has stride " + str(a.t.strides[a.t.ndim - 1]) +
         ", it must be contiguous (stride 1)");
}

void placement(const Arg& a, Device device, int device_id, bool vector_rows, const char* where) {
  if (a.t.device != device)
    fail(std::string(a.name) + ": is in " + (a.t.device == Device::kCPU ? "host" : "CUDA") + " memory but " + where +
         " is in " + (device == Device::kCPU ? "host" : "CUDA") + " memory; all tensors must be on one device");
  if (device == Device::kCUDA && a.t.device_id != device_id)
    fail(std::string(a.name) + ": is on cuda:" + str(a.t.device_id) + " but " + where + " is on cuda:" + str(device_id));
  if (a.t.numel() > 0 && a.t.data == nullptr) fail(std::string(a.name) + ": data pointer is null");
  if (device != Device::kCUDA) return;
  if (reinterpret_cast<uintptr_t>(a.t.data) % 16 != 0)
    fail(std::string(a.name) + ": GPU pointer " + std::to_string(reinterpret_cast<uintptr_t>(a.t.data)) +
         " is not 16-byte aligned");
  if (!vector_rows) return;
  const int64_t per16 = 16 / static_cast<int64_t>(dtype_size(a.t.dtype));
  for (int i = 0; i + 1 < a.t.ndim; ++i) {
    if (a.t.shape[i] > 1 && a.t.strides[i] % per16 != 0)
      fail(std::string(a.name) + ": stride " + str(a.t.strides[i]) + " of dimension " + str(i) +
           " breaks 16-byte row alignment on GPU (must be a multiple of " + str(per16) + " elements)");
  }
}

// Every element at its own address: with the dimensions of more than one element ordered by
// stride, each stride passes the span of the dimensions inside it. Sufficient, not necessary
// (interleaved layouts that happen not to collide fail it too; no output needs one), and it
// catches what matters: a stride-0 (expanded) dimension, whose rows would race.
bool distinct_elements(const TensorView& t) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // |stride|, size
  for (int i = 0; i < t.ndim; ++i) {
    if (t.shape[i] == 0) return true;
    if (t.shape[i] > 1) dims.emplace_back(t.strides[i] < 0 ? -t.strides[i] : t.strides[i], t.shape[i]);
  }
  std::sort(dims.begin(), dims.end());
  int64_t span = 0;  // elements the inner dimensions reach past the first
  for (const auto& [stride, size] : dims) {
    if (stride <= span) return false;
    span += (size - 1) * stride;
  }
  return true;
}

void no_alias(const Arg& out, std::initializer_list<Arg> inputs) {
  if (!distinct_elements(out.t))
    fail(std::string(out.name) + ": elements of " + out.t.shape_string() +
         " share memory (a stride-0 or overlapping dimension); an output needs its own memory per element");
  uintptr_t olo, ohi;
  extent(out.t, olo, ohi);
  if (olo == ohi) return;
  for (const Arg& in : inputs) {
    uintptr_t ilo, ihi;
    extent(in.t, ilo, ihi);
    if (ilo < ohi && olo < ihi)
      fail(std::string(out.name) + ": output memory overlaps input " + in.name + "; outputs must not alias inputs");
  }
}

int64_t indptr(const char* name, const int32_t* p, int batch) {
  if (batch < 0) fail("batch_size: got " + str(batch) + ", allowed: >= 0");
  if (!p) fail(std::string(name) + ": is null, expected " + str(int64_t{batch} + 1) + " int32 entries");
  if (p[0] != 0) fail(std::string(name) + ": starts at " + str(p[0]) + ", must start at 0");
  for (int b = 0; b < batch; ++b) {
    if (p[b + 1] < p[b])
      fail(std::string(name) + ": decreases at index " + str(b + 1) + " (" + str(p[b]) + " -> " + str(p[b + 1]) +
           "), must be non-decreasing");
  }
  return p[batch];
}

void stream_for_device(void* stream, Device device) {
  if (stream && device == Device::kCPU)
    fail("stream: a CUDA stream was given but the tensors are in host memory (cpu backend runs synchronously)");
}

}  // namespace flashband::validate
