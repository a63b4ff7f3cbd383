// merge_state / merge_states: validate, then run the one merge routine of the tensors' device.
#include <string>

#include "validate/validate.h"
#include "dispatch/backend.h"

namespace flashband {

namespace {

using validate::Arg;

void check_value(const Arg& v, const Arg& s, int ndim_v, const char* v_layout, const char* s_layout) {
  validate::dims(v, ndim_v, v_layout);
  validate::float_dtype(v);
  validate::last_dim_contiguous(v);
  validate::dims(s, ndim_v - 1, s_layout);
  for (int d = 1; d < ndim_v; ++d)
    if (v.t.shape[d] < 1)
      throw Error(ErrorCode::kInvalidArgument, std::string(v.name) + ": dimension " + std::to_string(d) + " of " +
                                                   v.t.shape_string() + " is 0; heads, states and head_dim must be >= 1");
  validate::dtype(s, DType::kF32, "LSE is float32");
  for (int d = 0; d < ndim_v - 1; ++d) validate::dim_equals(s, d, v.t.shape[d], "must match the value tensor");
}

void check_placement(std::initializer_list<Arg> args) {
  const Arg& first = *args.begin();
  for (const Arg& a : args) validate::placement(a, first.t.device, first.t.device_id, false, first.name);
}

const dispatch::BackendOps* merger(Device d, const char* op) {
  if (const dispatch::BackendOps* ops = dispatch::merge_ops(d)) return ops;
  throw Error(ErrorCode::kNotBuilt, std::string(op) + ": CUDA tensors given but this build has no GPU backends");
}

}  // namespace

void merge_state(const TensorView& v_a, const TensorView& s_a, const TensorView& v_b, const TensorView& s_b,
                 const TensorView& v_out, const TensorView& s_out, void* stream) {
  const Arg va{"v_a", v_a}, sa{"s_a", s_a}, vb{"v_b", v_b}, sb{"s_b", s_b}, vo{"v_out", v_out}, so{"s_out", s_out};
  check_value(va, sa, 3, "[tokens, num_heads, head_dim]", "[tokens, num_heads]");
  check_value(vb, sb, 3, "[tokens, num_heads, head_dim]", "[tokens, num_heads]");
  check_value(vo, so, 3, "[tokens, num_heads, head_dim]", "[tokens, num_heads]");
  for (int d = 0; d < 3; ++d) {
    validate::dim_equals(vb, d, v_a.shape[d], "must match v_a");
    validate::dim_equals(vo, d, v_a.shape[d], "must match v_a");
  }
  validate::dtype(vb, v_a.dtype, "must match v_a");
  validate::dtype(vo, v_a.dtype, "must match v_a");
  check_placement({va, sa, vb, sb, vo, so});
  validate::no_alias(vo, {va, sa, vb, sb});
  validate::no_alias(so, {va, sa, vb, sb, vo});
  validate::stream_for_device(stream, v_a.device);
  if (v_a.shape[0] == 0) return;  // no rows: nothing to read or write (the views may be null)
  merger(v_a.device, "merge_state")->merge_state(v_a, s_a, v_b, s_b, v_out, s_out, stream);
}

void merge_states(const TensorView& v, const TensorView& s, const TensorView& v_out, const TensorView& s_out,
                  void* stream) {
  const Arg av{"v", v}, as{"s", s}, vo{"v_out", v_out}, so{"s_out", s_out};
  check_value(av, as, 4, "[tokens, num_states, num_heads, head_dim]", "[tokens, num_states, num_heads]");
  check_value(vo, so, 3, "[tokens, num_heads, head_dim]", "[tokens, num_heads]");
  validate::dim_equals(vo, 0, v.shape[0], "tokens of v");
  validate::dim_equals(vo, 1, v.shape[2], "num_heads of v");
  validate::dim_equals(vo, 2, v.shape[3], "head_dim of v");
  validate::dtype(vo, v.dtype, "must match v");
  check_placement({av, as, vo, so});
  validate::no_alias(vo, {av, as});
  validate::no_alias(so, {av, as, vo});
  validate::stream_for_device(stream, v.device);
  if (v.shape[0] == 0) return;  // no rows: nothing to read or write (the views may be null)
  merger(v.device, "merge_states")->merge_states(v, s, v_out, s_out, stream);
}

}  // namespace flashband
