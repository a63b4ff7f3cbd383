#include "run/bind.h"

#include <string>

#include "validate/validate.h"

namespace flashband::bind {

namespace {

using validate::Arg;

void common(const Arg& a, const detail::Plan& plan) {
  validate::placement(a, plan.shape.device, plan.shape.device_id, /*vector_rows=*/true, "the plan's device");
  validate::last_dim_contiguous(a);
}

// K and V have the plan's K/V dtype: q's, or the fp8 format plan() was given.
void kv_dtype(const Arg& a, const detail::Plan& plan) {
  const DType kv = plan.params.kv_dtype;
  validate::dtype(a, kv, kv == plan.shape.dtype ? "must match q" : "the kv_data_type given to plan()");
}

// One scale: the tensor's address (read by the kernel), or null for the float.
const float* scale_of(const char* name, float value, const TensorView* tensor, const detail::Plan& plan) {
  validate::kv_scale(name, value);
  const DType kv = plan.params.kv_dtype;
  if (!is_fp8(kv) && (value != 1.0f || tensor))
    throw Error(ErrorCode::kInvalidArgument,
                std::string(name) + ": got " + (tensor ? std::string("a tensor") : std::to_string(value)) +
                    ", allowed: 1.0 for K/V of dtype " + dtype_name(kv) +
                    " (scales dequantize an fp8 cache: plan with kv_data_type float8_e4m3fn or float8_e5m2)");
  if (!tensor) return nullptr;
  validate::kv_scale_tensor(name, *tensor, plan.shape.device, plan.shape.device_id);
  return static_cast<const float*>(tensor->data);
}

}  // namespace

void q_out(core::AttentionParams& a, const detail::Plan& plan, const TensorView& q, const TensorView& out,
           const TensorView* lse, const TensorView& k, const TensorView& v) {
  const auto& s = plan.shape;
  const Arg aq{"q", q}, ao{"out", out};
  validate::dims(aq, 3, "[tokens, num_qo_heads, head_dim]");
  validate::q_dtype(aq);
  validate::dtype(aq, s.dtype, "the dtype given to plan()");
  validate::dim_equals(aq, 1, s.num_qo_heads, "num_qo_heads");
  validate::dim_equals(aq, 2, s.head_dim, "head_dim");
  const int64_t tokens = plan.qo_indptr[plan.batch];
  // Rows past the last request would be left unwritten; FlashInfer refuses them too.
  if (q.shape[0] != tokens)
    throw Error(ErrorCode::kInvalidArgument,
                "q: " + std::to_string(q.shape[0]) + " tokens, but " +
                    (plan.problem.op == Op::kPagedDecode ? "the plan's batch size is "
                                                         : "the plan's qo_indptr ends at ") +
                    std::to_string(tokens));
  common(aq, plan);
  validate::dims(ao, 3, "[tokens, num_qo_heads, head_dim] like q");
  validate::dtype(ao, plan.params.o_dtype, plan.params.o_dtype == q.dtype ? "must match q" : "the o_data_type given to plan()");
  for (int d = 0; d < 3; ++d) validate::dim_equals(ao, d, q.shape[d], "must match q");
  common(ao, plan);
  validate::no_alias(ao, {aq, Arg{"k", k}, Arg{"v", v}});

  if (plan.opts.return_lse && !lse)
    throw Error(ErrorCode::kInvalidArgument, "lse: return_lse is true but no lse output was given");
  if (!plan.opts.return_lse && lse)
    throw Error(ErrorCode::kInvalidArgument, "lse: an lse output was given but return_lse is false");
  if (lse) {
    const Arg al{"lse", *lse};
    validate::dims(al, 2, "[tokens, num_qo_heads]");
    validate::dtype(al, DType::kF32, "LSE is float32");
    validate::dim_equals(al, 0, q.shape[0], "tokens of q");
    validate::dim_equals(al, 1, s.num_qo_heads, "num_qo_heads");
    validate::placement(al, plan.shape.device, plan.shape.device_id, false, "the plan's device");
    validate::no_alias(al, {aq, ao, Arg{"k", k}, Arg{"v", v}});
    a.lse = static_cast<float*>(lse->data);
    a.lse_stride_n = lse->strides[0];
    a.lse_stride_h = lse->strides[1];
  } else {
    a.lse = nullptr;
  }
  a.q = q.data;
  a.q_stride_n = q.strides[0];
  a.q_stride_h = q.strides[1];
  a.o = out.data;
  a.o_stride_n = out.strides[0];
  a.o_stride_h = out.strides[1];
}

void kv_contiguous(core::AttentionParams& a, const detail::Plan& plan, const TensorView& k, const TensorView& v) {
  const auto& s = plan.shape;
  const bool nhd = plan.opts.kv_layout == KVLayout::kNHD;
  const int tok = nhd ? 0 : 1, head = nhd ? 1 : 0;
  const char* layout = nhd ? "[tokens, num_kv_heads, head_dim] (NHD)" : "[num_kv_heads, tokens, head_dim] (HND)";
  for (const Arg& t : {Arg{"k", k}, Arg{"v", v}}) {
    validate::dims(t, 3, layout);
    kv_dtype(t, plan);
    validate::dim_equals(t, head, s.num_kv_heads, "num_kv_heads");
    validate::dim_equals(t, 2, s.head_dim, "head_dim");
    if (t.t.shape[tok] < plan.kv_indptr[plan.batch])
      throw Error(ErrorCode::kInvalidArgument, "kv_indptr: ends at " + std::to_string(plan.kv_indptr[plan.batch]) +
                                                   ", past " + t.name + "'s " + std::to_string(t.t.shape[tok]) + " tokens");
    common(t, plan);
  }
  a.k = k.data;
  a.v = v.data;
  a.k_stride_page = a.v_stride_page = 0;
  a.k_stride_n = k.strides[tok];
  a.k_stride_h = k.strides[head];
  a.v_stride_n = v.strides[tok];
  a.v_stride_h = v.strides[head];
}

void kv_paged(core::AttentionParams& a, const detail::Plan& plan, const PagedKVCache& kv) {
  const auto& s = plan.shape;
  const bool nhd = plan.opts.kv_layout == KVLayout::kNHD;
  const int slot = nhd ? 1 : 2, head = nhd ? 2 : 1;
  const char* layout = nhd ? "[num_pages, page_size, num_kv_heads, head_dim] (NHD)"
                           : "[num_pages, num_kv_heads, page_size, head_dim] (HND)";
  for (const Arg& t : {Arg{"paged_k_cache", kv.k}, Arg{"paged_v_cache", kv.v}}) {
    validate::dims(t, 4, layout);
    kv_dtype(t, plan);
    validate::dim_equals(t, head, s.num_kv_heads, "num_kv_heads");
    validate::dim_equals(t, 3, s.head_dim, "head_dim");
    validate::dim_equals(t, slot, plan.page_size, "page_size given to plan()");
    if (t.t.shape[0] <= plan.max_page_index)
      throw Error(ErrorCode::kInvalidArgument, std::string(t.name) + ": has " + std::to_string(t.t.shape[0]) +
                                                   " pages but paged_kv_indices uses page " +
                                                   std::to_string(plan.max_page_index));
    common(t, plan);
  }
  a.k = kv.k.data;
  a.v = kv.v.data;
  a.k_num_pages = kv.k.shape[0];
  a.v_num_pages = kv.v.shape[0];
  a.k_stride_page = kv.k.strides[0];
  a.k_stride_n = kv.k.strides[slot];
  a.k_stride_h = kv.k.strides[head];
  a.v_stride_page = kv.v.strides[0];
  a.v_stride_n = kv.v.strides[slot];
  a.v_stride_h = kv.v.strides[head];
}

void kv_scales(core::AttentionParams& a, const detail::Plan& plan, const KVScales& scales) {
  validate::kv_scale("q_scale", scales.q_scale);
  if (plan.params.dtype != DType::kE4M3 && (scales.q_scale != 1.0f || scales.q_scale_tensor))
    throw Error(ErrorCode::kInvalidArgument,
                "q_scale: got " + (scales.q_scale_tensor ? std::string("a tensor") : std::to_string(scales.q_scale)) +
                    ", allowed: 1.0 for q of dtype " + dtype_name(plan.params.dtype) +
                    " (q_scale dequantizes fp8 attention's float8_e4m3fn q)");
  if (scales.q_scale_tensor)
    validate::kv_scale_tensor("q_scale", *scales.q_scale_tensor, plan.shape.device, plan.shape.device_id);
  a.q_scale_ptr = scales.q_scale_tensor ? static_cast<const float*>(scales.q_scale_tensor->data) : nullptr;
  a.q_scale = scales.q_scale;
  a.k_scale_ptr = scale_of("k_scale", scales.k_scale, scales.k_scale_tensor, plan);
  a.v_scale_ptr = scale_of("v_scale", scales.v_scale, scales.v_scale_tensor, plan);
  a.k_scale = scales.k_scale;
  a.v_scale = scales.v_scale;
}

namespace {

// What a run()-time vector must be: given iff the plan declared it (Options::<name>), then
// 1-D of `dtype` with `length` elements (`length_what` says where that comes from),
// contiguous and on the plan's device. Returns its data, or null when not declared.
struct DeclaredVector {
  const char* name;
  bool declared;
  DType dtype;
  const char* why_dtype;
  int64_t length;
  const char* length_what;
};

const void* declared_vector(const DeclaredVector& d, const TensorView* t, const detail::Plan& plan) {
  const std::string name = d.name;
  if (d.declared && !t)
    throw Error(ErrorCode::kInvalidArgument,
                name + ": the plan was made with " + name + " (Options::" + name + ") but run() got none");
  if (!d.declared && t)
    throw Error(ErrorCode::kInvalidArgument, name + ": run() got a " + name + " tensor but the plan was made without " +
                                                 name + "; plan with Options::" + name + " = true");
  if (!t) return nullptr;
  const Arg as{d.name, *t};
  validate::dims(as, 1, ("[" + std::string(d.length_what) + "]").c_str());
  validate::dtype(as, d.dtype, d.why_dtype);
  validate::dim_equals(as, 0, d.length, d.length_what);
  if (t->shape[0] > 1 && t->strides[0] != 1)
    throw Error(ErrorCode::kInvalidArgument,
                name + ": stride " + std::to_string(t->strides[0]) + ", allowed: 1 (contiguous)");
  validate::placement(as, plan.shape.device, plan.shape.device_id, false, "the plan's device");
  return t->data;
}

}  // namespace

void sinks(core::AttentionParams& a, const detail::Plan& plan, const TensorView* sinks) {
  const DeclaredVector d{"sinks", plan.opts.sinks, DType::kF32, "sinks are float32", plan.shape.num_qo_heads,
                         "num_qo_heads"};
  a.sinks = static_cast<const float*>(declared_vector(d, sinks, plan));
}

void custom_mask(core::AttentionParams& a, const detail::Plan& plan, const TensorView* mask) {
  const int64_t bytes = plan.mask_indptr.empty() ? 0 : plan.mask_indptr.back();
  const DeclaredVector d{"custom_mask", plan.opts.custom_mask, DType::kU8,
                         "the bits are packed 8 to a byte (segment_packbits, bitorder='little')", bytes,
                         "packed bytes: sum over requests of ceil(qo_len * kv_len / 8)"};
  a.custom_mask = static_cast<const uint8_t*>(declared_vector(d, mask, plan));
}

void stream(core::AttentionParams& a, const detail::Plan& plan, void* stream) {
  validate::stream_for_device(stream, plan.shape.device);
  a.stream = stream;
}

}  // namespace flashband::bind
