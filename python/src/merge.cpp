// merge_state / merge_states: combine partial attention results (base-2 LSE), on the
// caller's stream for GPU tensors.
#include "bind.h"
#include "convert.h"

namespace flashband::python {

void bind_merge(nb::module_& m) {
  using nb::arg;
  m.def(
      "merge_state",
      [](const InArray& v_a, const InArray& s_a, const InArray& v_b, const InArray& s_b,
         const OutArray& v_out, const OutArray& s_out, std::uintptr_t stream) {
        merge_state(view_of(v_a, "v_a"), view_of(s_a, "s_a"), view_of(v_b, "v_b"),
                    view_of(s_b, "s_b"), view_of(v_out, "v_out"), view_of(s_out, "s_out"),
                    stream_ptr(stream));
      },
      arg("v_a"), arg("s_a"), arg("v_b"), arg("s_b"), arg("v_out"), arg("s_out"),
      arg("stream") = 0, nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "merge_states",
      [](const InArray& v, const InArray& s, const OutArray& v_out, const OutArray& s_out,
         std::uintptr_t stream) {
        merge_states(view_of(v, "v"), view_of(s, "s"), view_of(v_out, "v_out"),
                     view_of(s_out, "s_out"), stream_ptr(stream));
      },
      arg("v"), arg("s"), arg("v_out"), arg("s_out"), arg("stream") = 0,
      nb::call_guard<nb::gil_scoped_release>());
}

}  // namespace flashband::python
