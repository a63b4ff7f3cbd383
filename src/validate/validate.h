// Input validation shared by every entry point (SPEC.md "Bad input"). Each check throws
// flashband::Error(kInvalidArgument) naming the argument, the value and what is allowed,
// and runs before anything is launched or written.
#pragma once
#include <optional>
#include <initializer_list>
#include <string>
#include <vector>

#include "flashband/attention.h"

namespace flashband::validate {

// A tensor argument with its name, for messages.
struct Arg {
  const char* name;
  const TensorView& t;
};

void options(const Options& opts);
// A float parameter (logits_soft_cap, sm_scale) given in double, as the float the kernels
// take: a nonzero finite value that rounds to 0 or to infinity there is refused by name (a
// cap of 1e-50 would otherwise turn the cap off). NaN, 0, negatives and infinities pass
// through unchanged for options() to judge.
float float_param(const char* name, double value);
// A size count of the workspace helpers: refused by name when below `min`.
void count_at_least(const char* name, int64_t value, int64_t min);
void heads(int num_qo_heads, int num_kv_heads, int head_dim);
void dims(const Arg& a, int ndim, const char* layout);                 // "[tokens, Hq, D]"
void dim_equals(const Arg& a, int dim, int64_t want, const char* what);  // what: "head_dim (from q)"
void dtype(const Arg& a, DType want, const char* why);
// Dimension `dim` is at most 2^31 - 1 (lengths and head counts are int32 inside).
void fits_int32(const Arg& a, int dim, const char* what);
void float_dtype(const Arg& a);                                          // f16, bf16, f32
// q of a call: float_dtype, or e4m3 (fp8 attention).
void q_dtype(const Arg& a);
// The K/V dtype a plan is given beside q's: q's own, or an fp8 format with fp16/bf16 q.
void kv_dtype(DType q_dtype, DType kv_dtype);
// The output dtype of a plan (SPEC.md "fp8 attention"): q's when q is not fp8 (a given one
// must equal it); with e4m3 q it must be given, fp16 or bf16. `name` is the argument.
DType o_dtype(DType q_dtype, std::optional<DType> o_dtype, const char* name);
// An fp8 dequantization scale (KVScales): finite and > 0.
void kv_scale(const char* name, float value);
// A scale tensor: one float32 element on `device` (4-byte aligned); a host one's value is
// checked like a float (a device one is read only by the kernel).
void kv_scale_tensor(const char* name, const TensorView& t, Device device, int device_id);
void last_dim_contiguous(const Arg& a);
// Every tensor on `device` (and device id); on CUDA a 16-byte aligned base pointer and, for
// tensors whose rows kernels read as 16-byte vectors (q, k, v, out), 16-byte aligned rows.
// `where` names what fixed the device ("q", "the plan", "v_a").
void placement(const Arg& a, Device device, int device_id, bool vector_rows = false, const char* where = "q");
// Outputs must not overlap any input, nor themselves (a stride-0 dimension).
void no_alias(const Arg& out, std::initializer_list<Arg> inputs);
// CSR arrays: start at 0, never decrease; returns the last entry.
int64_t indptr(const char* name, const int32_t* p, int batch);
void stream_for_device(void* stream, Device device);

}  // namespace flashband::validate
