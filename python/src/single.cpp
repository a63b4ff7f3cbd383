// Options and RunInfo as Python classes, and single_prefill. Enum-valued options are strings
// on the Python side ("NHD", "sm90") and parsed here, so a bad value raises an error that
// names the option.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include "validate/validate.h"
#include "bind.h"
#include "convert.h"

namespace flashband::python {

void bind_options(nb::module_& m) {
  nb::class_<Options>(m, "Options")
      .def(
          "__init__",
          [](Options* self, bool causal, int window_left, int window_right, std::optional<double> logits_soft_cap,
             std::optional<double> sm_scale, bool return_lse, const std::string& kv_layout,
             const std::string& backend, std::uintptr_t stream, bool cuda_graph, bool disable_split_kv, bool sinks,
             bool custom_mask) {
            Options o;
            o.causal = causal;
            o.window_left = window_left;
            o.window_right = window_right;
            // Taken in double and narrowed here, so that a value float32 cannot hold is
            // refused by name instead of silently becoming 0 (off) or inf.
            o.logits_soft_cap = validate::float_param("logits_soft_cap", logits_soft_cap.value_or(0.0));  // None: off
            if (sm_scale) o.sm_scale = validate::float_param("sm_scale", *sm_scale);
            o.return_lse = return_lse;
            o.kv_layout = parse_kv_layout(kv_layout);
            o.backend = parse_backend(backend.c_str());
            o.stream = stream_ptr(stream);
            o.cuda_graph = cuda_graph;
            o.disable_split_kv = disable_split_kv;
            o.sinks = sinks;
            o.custom_mask = custom_mask;
            new (self) Options(o);
          },
          nb::kw_only(), nb::arg("causal") = false, nb::arg("window_left") = -1, nb::arg("window_right") = -1,
          nb::arg("logits_soft_cap").none() = nb::none(), nb::arg("sm_scale").none() = nb::none(),
          nb::arg("return_lse") = false, nb::arg("kv_layout") = "NHD",
          nb::arg("backend") = "auto", nb::arg("stream") = 0, nb::arg("cuda_graph") = false,
          nb::arg("disable_split_kv") = false, nb::arg("sinks") = false,
          nb::arg("custom_mask") = false)
      .def_rw("causal", &Options::causal)
      .def_rw("window_left", &Options::window_left)
      .def_rw("window_right", &Options::window_right)
      .def_prop_rw(
          "logits_soft_cap", [](const Options& o) { return o.logits_soft_cap; },
          [](Options& o, double v) { o.logits_soft_cap = validate::float_param("logits_soft_cap", v); })
      .def_prop_rw(
          "sm_scale", [](const Options& o) { return o.sm_scale; },
          [](Options& o, std::optional<double> v) {
            o.sm_scale = v ? std::optional<float>(validate::float_param("sm_scale", *v)) : std::nullopt;
          })
      .def_rw("return_lse", &Options::return_lse)
      .def_rw("cuda_graph", &Options::cuda_graph)
      .def_rw("disable_split_kv", &Options::disable_split_kv)
      .def_rw("sinks", &Options::sinks)
      .def_rw("custom_mask", &Options::custom_mask)
      .def_prop_rw(
          "kv_layout", [](const Options& o) { return std::string(kv_layout_name(o.kv_layout)); },
          [](Options& o, const std::string& s) { o.kv_layout = parse_kv_layout(s); })
      .def_prop_rw(
          "backend", [](const Options& o) { return std::string(backend_name(o.backend)); },
          [](Options& o, const std::string& s) { o.backend = parse_backend(s.c_str()); })
      .def_prop_rw(
          "stream", [](const Options& o) { return reinterpret_cast<std::uintptr_t>(o.stream); },
          [](Options& o, std::uintptr_t s) { o.stream = stream_ptr(s); });

  nb::class_<RunInfo>(m, "RunInfo")
      .def_prop_ro("backend", [](const RunInfo& r) { return std::string(backend_name(r.backend)); })
      .def_ro("variant", &RunInfo::variant)
      .def_ro("num_kv_splits", &RunInfo::num_kv_splits)
      .def_ro("selection", &RunInfo::selection)
      .def("__repr__", [](const RunInfo& r) {
        return std::string("RunInfo(backend='") + backend_name(r.backend) + "', variant='" +
               r.variant + "', num_kv_splits=" + std::to_string(r.num_kv_splits) + ")";
      });
}

void bind_single(nb::module_& m) {
  m.def(
      "single_prefill",
      [](const InArray& q, const InArray& k, const InArray& v, const OutArray& out,
         const OutArray& lse, const Options& opts, const OutArray& workspace, double k_scale, double v_scale,
         const InArray& k_scale_tensor, const InArray& v_scale_tensor, const std::optional<std::string>& kv_dtype,
         const InArray& sinks, const InArray& custom_mask, const std::optional<std::string>& q_dtype, double q_scale,
         const InArray& q_scale_tensor) {
        const TensorView lse_view = lse.is_valid() ? view_of(lse, "lse") : TensorView{};
        const TensorView sinks_view = sinks.is_valid() ? view_of(sinks, "sinks") : TensorView{};
        const TensorView mask_view = custom_mask.is_valid() ? view_of(custom_mask, "custom_mask") : TensorView{};
        Workspace ws;
        if (workspace.is_valid()) ws = workspace_of(workspace, "workspace").workspace;
        const ScalesArg s(q_scale, k_scale, v_scale, q_scale_tensor, k_scale_tensor, v_scale_tensor);
        return single_prefill(fp8_view_of(q, "q", q_dtype), fp8_view_of(k, "k", kv_dtype), fp8_view_of(v, "v", kv_dtype),
                              view_of(out, "out"), lse.is_valid() ? &lse_view : nullptr, opts, ws, s.scales,
                              sinks.is_valid() ? &sinks_view : nullptr, custom_mask.is_valid() ? &mask_view : nullptr);
      },
      nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("out"), nb::arg("lse").none(),
      nb::arg("opts"), nb::arg("workspace").none() = nb::none(), nb::arg("k_scale") = 1.0, nb::arg("v_scale") = 1.0,
      nb::arg("k_scale_tensor").none() = nb::none(), nb::arg("v_scale_tensor").none() = nb::none(),
      nb::arg("kv_dtype").none() = nb::none(), nb::arg("sinks").none() = nb::none(),
      nb::arg("custom_mask").none() = nb::none(), nb::arg("q_dtype").none() = nb::none(), nb::arg("q_scale") = 1.0,
      nb::arg("q_scale_tensor").none() = nb::none(), nb::call_guard<nb::gil_scoped_release>(),
      "q [qo_len, Hq, D]; k, v [kv_len, Hk, D] (NHD) or [Hk, kv_len, D] (HND), fp8 ones as uint8 bytes with "
      "kv_dtype (k, v) or q_dtype (q, fp8 attention) naming the format; out's dtype is the output's; writes out "
      "and lse.");
}

}  // namespace flashband::python
