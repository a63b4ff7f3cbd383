// Support queries (the same table every run consults), workspace sizing and what this build
// contains. ProblemDesc takes strings for its enums, like Options.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <vector>

#include "bind.h"
#include "convert.h"
#include "flashband/config.h"

namespace flashband::python {

void bind_capability(nb::module_& m) {
  using nb::arg;
  nb::class_<ProblemDesc>(m, "ProblemDesc")
      .def(
          "__init__",
          [](ProblemDesc* self, const std::string& op, const std::string& dtype,
             const std::string& device, int head_dim, int num_qo_heads, int num_kv_heads,
             bool causal, int window_left, int window_right, bool soft_cap, bool return_lse,
             const std::string& kv_layout, int page_size, int device_id, bool has_empty_rows,
             bool cuda_graph, bool disable_split_kv, const std::optional<std::string>& kv_dtype, bool sinks,
             bool custom_mask) {
            ProblemDesc p;
            p.op = parse_op(op);
            p.dtype = parse_dtype(dtype, "dtype");
            if (kv_dtype) p.kv_dtype = parse_dtype(*kv_dtype, "kv_dtype");
            p.device = parse_device(device);
            p.head_dim = head_dim;
            p.num_qo_heads = num_qo_heads;
            p.num_kv_heads = num_kv_heads;
            p.causal = causal;
            p.window_left = window_left;
            p.window_right = window_right;
            p.soft_cap = soft_cap;
            p.return_lse = return_lse;
            p.kv_layout = parse_kv_layout(kv_layout);
            p.page_size = page_size;
            p.device_id = device_id;
            p.has_empty_rows = has_empty_rows;
            p.cuda_graph = cuda_graph;
            p.disable_split_kv = disable_split_kv;
            p.sinks = sinks;
            p.custom_mask = custom_mask;
            new (self) ProblemDesc(p);
          },
          nb::kw_only(), arg("op") = "single_prefill", arg("dtype") = "bfloat16",
          arg("device") = "cuda", arg("head_dim") = 128, arg("num_qo_heads") = 1,
          arg("num_kv_heads") = 1, arg("causal") = false, arg("window_left") = -1,
          arg("window_right") = -1, arg("soft_cap") = false, arg("return_lse") = false, arg("kv_layout") = "NHD",
          arg("page_size") = 0, arg("device_id") = 0, arg("has_empty_rows") = false,
          arg("cuda_graph") = false, arg("disable_split_kv") = false, arg("kv_dtype").none() = nb::none(),
          arg("sinks") = false, arg("custom_mask") = false)
      .def("__repr__", [](const ProblemDesc& p) {
        return std::string("ProblemDesc(op='") + op_name(p.op) + "', dtype='" +
               dtype_name(p.dtype) + "', device='" + (p.device == Device::kCPU ? "cpu" : "cuda") +
               "', head_dim=" + std::to_string(p.head_dim) + ", num_qo_heads=" +
               std::to_string(p.num_qo_heads) + ", num_kv_heads=" +
               std::to_string(p.num_kv_heads) + ", causal=" + (p.causal ? "True" : "False") +
               ", window_left=" + std::to_string(p.window_left) + ", window_right=" +
               std::to_string(p.window_right) + ", soft_cap=" +
               (p.soft_cap ? "True" : "False") + ", return_lse=" +
               (p.return_lse ? "True" : "False") + ", kv_layout='" + kv_layout_name(p.kv_layout) +
               "', page_size=" + std::to_string(p.page_size) + ", device_id=" +
               std::to_string(p.device_id) + ", has_empty_rows=" +
               (p.has_empty_rows ? "True" : "False") + ", cuda_graph=" + (p.cuda_graph ? "True" : "False") +
               ", disable_split_kv=" + (p.disable_split_kv ? "True" : "False") + ", sinks=" + (p.sinks ? "True" : "False") +
               ", custom_mask=" + (p.custom_mask ? "True" : "False") + ")";
      });

  nb::class_<SupportAnswer>(m, "SupportAnswer")
      .def_ro("supported", &SupportAnswer::supported)
      .def_ro("reason", &SupportAnswer::reason)
      .def("__bool__", [](const SupportAnswer& a) { return a.supported; })
      .def("__repr__", [](const SupportAnswer& a) {
        return std::string("SupportAnswer(supported=") + (a.supported ? "True" : "False") +
               ", reason='" + a.reason + "')";
      });

  m.def("supports",
        [](const ProblemDesc& p, const std::string& backend) {
          return supports(p, parse_backend(backend.c_str()));
        },
        arg("problem"), arg("backend"));
  m.def("select_backend",
        [](const ProblemDesc& p) { return std::string(backend_name(select_backend(p))); },
        arg("problem"));
  m.def("support_matrix_markdown", &support_matrix_markdown);
  m.def("batch_workspace_bytes",
        [](int max_batch, int64_t max_qo_tokens, int num_qo_heads, int head_dim,
           const std::string& device, int64_t max_page_indices) {
          return batch_workspace_bytes(max_batch, max_qo_tokens, num_qo_heads, head_dim,
                                       parse_device(device), max_page_indices);
        },
        arg("max_batch"), arg("max_qo_tokens"), arg("num_qo_heads"), arg("head_dim"),
        arg("device"), arg("max_page_indices") = 0);
  m.def("batch_plan_bytes",
        [](int max_batch, int64_t max_qo_tokens, int num_qo_heads, int head_dim,
           const std::string& device, int64_t max_page_indices, int64_t max_request_pages) {
          return batch_plan_bytes(max_batch, max_qo_tokens, num_qo_heads, head_dim,
                                  parse_device(device), max_page_indices, max_request_pages);
        },
        arg("max_batch"), arg("max_qo_tokens"), arg("num_qo_heads"), arg("head_dim"),
        arg("device"), arg("max_page_indices") = 0, arg("max_request_pages") = -1);

  // What this build contains (flashband/config.h); supports() adds the machine's GPU.
  std::vector<std::string> built = {"cpu"};
  if (FLASHBAND_WITH_SM80) built.push_back("sm80");
  if (FLASHBAND_WITH_SM90) built.push_back("sm90");
  if (FLASHBAND_WITH_CUDNN) built.push_back("cudnn");
  m.attr("built_backends") = nb::cast(built);
  m.attr("__version__") = FLASHBAND_VERSION;
  m.attr("cuda_archs") = FLASHBAND_CUDA_ARCHS;
  // The toolkit and cuDNN this build compiled against ("" where not built with them).
  m.attr("cuda_version") = FLASHBAND_CUDA_VERSION;
  m.attr("cudnn_version") = FLASHBAND_CUDNN_VERSION;
}

}  // namespace flashband::python
