// The three batch plan/run objects. plan() takes host int32 index arrays (the Python layer
// copies device arrays to the host, as FlashInfer's plan does) and checks here what the
// C++ API cannot see from bare pointers: the lengths of the arrays.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <string>

#include "bind.h"
#include "convert.h"
#include "flashband/error.h"

namespace flashband::python {
namespace {

[[noreturn]] void invalid(const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument, message);
}

// Batch size from an indptr of batch + 1 entries.
int batch_of(const HostIndex& indptr, const char* what) {
  if (indptr.size < 1) invalid(std::string(what) + ": needs batch_size + 1 >= 1 entries; got 0");
  return static_cast<int>(indptr.size - 1);
}

void expect_size(const HostIndex& a, int64_t size, const char* what, const char* because) {
  if (a.size != size)
    invalid(std::string(what) + ": has " + std::to_string(a.size) + " entries; expected " +
            std::to_string(size) + " (" + because + ")");
}

BatchShape make_shape(int num_qo_heads, int num_kv_heads, int head_dim, const std::string& dtype,
                      const WorkspaceArg& w, const std::optional<std::string>& kv_dtype,
                      const std::optional<std::string>& o_dtype) {
  BatchShape s;
  s.num_qo_heads = num_qo_heads;
  s.num_kv_heads = num_kv_heads;
  s.head_dim = head_dim;
  s.dtype = parse_dtype(dtype, "q_data_type");
  if (kv_dtype) s.kv_dtype = parse_dtype(*kv_dtype, "kv_data_type");
  if (o_dtype) s.o_dtype = parse_dtype(*o_dtype, "o_data_type");
  s.device = w.device;  // the plan runs where its workspace lives, as in FlashInfer
  s.device_id = w.device_id;
  return s;
}

// The wrapper's float workspace (scratch, shareable) and, when given, its own buffer for the
// plan's arrays (Workspace::plan_data), on the same device.
WorkspaceArg workspaces_of(const OutArray& workspace, const OutArray& plan_workspace) {
  WorkspaceArg w = workspace_of(workspace, "float_workspace_buffer");
  if (!plan_workspace.is_valid()) return w;
  const WorkspaceArg p = workspace_of(plan_workspace, "int_workspace_buffer");
  if (p.device != w.device || p.device_id != w.device_id)
    invalid("int_workspace_buffer: must be on the device of float_workspace_buffer");
  const auto begin = [](const Workspace& ws) { return reinterpret_cast<std::uintptr_t>(ws.data); };
  if (begin(p.workspace) < begin(w.workspace) + w.workspace.bytes &&
      begin(w.workspace) < begin(p.workspace) + p.workspace.bytes)
    invalid("int_workspace_buffer: overlaps float_workspace_buffer; the plans' arrays need bytes of their own");
  w.workspace.plan_data = p.workspace.data;
  w.workspace.plan_bytes = p.workspace.bytes;
  return w;
}

// run()'s stream as the C++ API takes it (Python passes the caller's current stream, 0 for
// the legacy default stream and for host arrays).
void* as_stream(uintptr_t stream) { return reinterpret_cast<void*>(stream); }

void expect_entries(int64_t size, int64_t used, const std::string& name, const char* indptr_name) {
  if (used < 0 || used > size)
    invalid(name + ": has " + std::to_string(size) + " entries but " + indptr_name + "[-1] = " + std::to_string(used));
}

// The page-index array the runs read on the device (PagedIndex::device_indices): int32,
// 1-D, contiguous, on the workspace's CUDA device, long enough for the plan.
const int32_t* device_index(const InArray& a, const std::string& name, int64_t used, const char* indptr_name,
                            const WorkspaceArg& w) {
  if (a.device_type() != nb::device::cuda::value || w.device != Device::kCUDA ||
      a.device_id() != static_cast<int32_t>(w.device_id))
    invalid(name + ": must be on the CUDA device of the workspace");
  if (a.dtype() != nb::dtype<int32_t>()) invalid(name + ": dtype must be int32");
  if (a.ndim() != 1) invalid(name + ": must be 1-D; got " + std::to_string(a.ndim()) + " dims");
  if (a.shape(0) > 1 && a.stride(0) != 1) invalid(name + ": must be contiguous");
  expect_entries(static_cast<int64_t>(a.shape(0)), used, name, indptr_name);
  return static_cast<const int32_t*>(a.data());
}

// Page arrays of a paged plan; indptr[batch] must not run past the indices arrays, which
// the C++ API receives as bare pointers. Host indices may be absent when device ones are
// given (FlashInfer's fast decode plan: the page table lives in the caller's buffer).
PagedIndex make_pages(const HostIndex& indptr, const InArray& indices, const InArray& device_indices,
                      const HostIndex& last_page_len, int batch, int page_size, int num_pages,
                      const WorkspaceArg& w, const char* indptr_name, const char* indices_name,
                      const char* last_name) {
  expect_size(last_page_len, batch, last_name, "one per request");
  const int64_t used = indptr.data[batch];
  PagedIndex p;
  if (!indices.is_valid() && !device_indices.is_valid())
    invalid(std::string(indices_name) + ": is None; give the page indices");
  if (indices.is_valid()) {
    const HostIndex host = host_index(indices, indices_name);
    expect_entries(host.size, used, indices_name, indptr_name);
    p.indices = host.data;
  }
  if (device_indices.is_valid())
    p.device_indices = device_index(device_indices, std::string(indices_name) + " (device buffer)", used,
                                    indptr_name, w);
  p.indptr = indptr.data;
  p.last_page_len = last_page_len.data;
  p.page_size = page_size;
  p.num_pages = num_pages;
  return p;
}

PagedKVCache cache_of(const InArray& k, const InArray& v, const std::optional<std::string>& fp8) {
  return PagedKVCache{fp8_view_of(k, "paged_kv_cache[0] (k)", fp8), fp8_view_of(v, "paged_kv_cache[1] (v)", fp8)};
}

template <class Array>
const TensorView* optional_view(const Array& a, const char* what, TensorView& storage) {
  if (!a.is_valid()) return nullptr;
  storage = view_of(a, what);
  return &storage;
}

// run()'s RunArgs from the bindings' arguments; the views it points to live here.
struct RunArgsArg {
  ScalesArg scales;
  TensorView sinks_view, mask_view;
  RunArgs args;
  RunArgsArg(uintptr_t stream, double q_scale, double k_scale, double v_scale, const InArray& q_scale_tensor,
             const InArray& k_scale_tensor, const InArray& v_scale_tensor, const InArray& sinks,
             const InArray& custom_mask)
      : scales(q_scale, k_scale, v_scale, q_scale_tensor, k_scale_tensor, v_scale_tensor) {
    args.scales = scales.scales;
    args.sinks = optional_view(sinks, "sinks", sinks_view);
    args.custom_mask = optional_view(custom_mask, "custom_mask", mask_view);
    args.stream = as_stream(stream);
  }
  RunArgsArg(const RunArgsArg&) = delete;
};

// run() over a (k, v) pair and run_stacked() over one [P, 2, ...] cache, for both paged
// classes; fp8 caches come as uint8 bytes with kv_dtype naming the format (convert.h).
template <class Paged>
void bind_paged_runs(nb::class_<Paged>& c) {
  using nb::arg;
  c.def(
       "run",
       [](const Paged& self, const InArray& q, const InArray& k, const InArray& v, const OutArray& out,
          const OutArray& lse, uintptr_t stream, double k_scale, double v_scale, const InArray& k_scale_tensor,
          const InArray& v_scale_tensor, const std::optional<std::string>& kv_dtype, const InArray& sinks, const InArray& custom_mask,
          const std::optional<std::string>& q_dtype, double q_scale, const InArray& q_scale_tensor) {
         TensorView lse_view;
         const RunArgsArg r(stream, q_scale, k_scale, v_scale, q_scale_tensor, k_scale_tensor, v_scale_tensor, sinks,
                            custom_mask);
         return self.run(fp8_view_of(q, "q", q_dtype), cache_of(k, v, kv_dtype), view_of(out, "out"),
                         optional_view(lse, "lse", lse_view), r.args);
       },
       arg("q"), arg("k"), arg("v"), arg("out"), arg("lse").none(), arg("stream") = 0, arg("k_scale") = 1.0,
       arg("v_scale") = 1.0, arg("k_scale_tensor").none() = nb::none(), arg("v_scale_tensor").none() = nb::none(),
       arg("kv_dtype").none() = nb::none(), arg("sinks").none() = nb::none(), arg("custom_mask").none() = nb::none(), arg("q_dtype").none() = nb::none(), arg("q_scale") = 1.0,
       arg("q_scale_tensor").none() = nb::none(), nb::call_guard<nb::gil_scoped_release>())
      .def(
          "run_stacked",
          [](const Paged& self, const InArray& q, const InArray& kv, const OutArray& out, const OutArray& lse,
             uintptr_t stream, double k_scale, double v_scale, const InArray& k_scale_tensor,
             const InArray& v_scale_tensor, const std::optional<std::string>& kv_dtype,
             const InArray& sinks, const InArray& custom_mask, const std::optional<std::string>& q_dtype,
             double q_scale, const InArray& q_scale_tensor) {
            TensorView lse_view;
            const RunArgsArg r(stream, q_scale, k_scale, v_scale, q_scale_tensor, k_scale_tensor, v_scale_tensor,
                               sinks, custom_mask);
            return self.run(fp8_view_of(q, "q", q_dtype), PagedKVCache::from_stacked(fp8_view_of(kv, "paged_kv_cache", kv_dtype)),
                            view_of(out, "out"), optional_view(lse, "lse", lse_view), r.args);
          },
          arg("q"), arg("kv"), arg("out"), arg("lse").none(), arg("stream") = 0, arg("k_scale") = 1.0,
          arg("v_scale") = 1.0, arg("k_scale_tensor").none() = nb::none(), arg("v_scale_tensor").none() = nb::none(),
          arg("kv_dtype").none() = nb::none(), arg("sinks").none() = nb::none(), arg("custom_mask").none() = nb::none(), arg("q_dtype").none() = nb::none(), arg("q_scale") = 1.0,
       arg("q_scale_tensor").none() = nb::none(), nb::call_guard<nb::gil_scoped_release>());
}

}  // namespace

void bind_batch(nb::module_& m) {
  using nb::arg;
  const auto release = nb::call_guard<nb::gil_scoped_release>();

  nb::class_<BatchPrefillRagged>(m, "BatchPrefillRagged")
      .def(nb::init<>())
      .def(
          "plan",
          [](BatchPrefillRagged& self, const InArray& qo_indptr, const InArray& kv_indptr,
             int num_qo_heads, int num_kv_heads, int head_dim, const std::string& dtype,
             const Options& opts, const OutArray& workspace, const OutArray& plan_workspace,
             const std::optional<std::string>& kv_dtype, const std::optional<std::string>& o_dtype) {
            const HostIndex qo = host_index(qo_indptr, "qo_indptr");
            const HostIndex kv = host_index(kv_indptr, "kv_indptr");
            const int batch = batch_of(qo, "qo_indptr");
            expect_size(kv, qo.size, "kv_indptr", "same length as qo_indptr");
            const WorkspaceArg w = workspaces_of(workspace, plan_workspace);
            return self.plan(qo.data, kv.data, batch,
                             make_shape(num_qo_heads, num_kv_heads, head_dim, dtype, w, kv_dtype, o_dtype), opts,
                             w.workspace);
          },
          arg("qo_indptr"), arg("kv_indptr"), arg("num_qo_heads"), arg("num_kv_heads"),
          arg("head_dim"), arg("dtype"), arg("opts"), arg("workspace"),
          arg("plan_workspace").none() = nb::none(), arg("kv_dtype").none() = nb::none(), arg("o_dtype").none() = nb::none(), release)
      .def(
          "run",
          [](const BatchPrefillRagged& self, const InArray& q, const InArray& k, const InArray& v,
             const OutArray& out, const OutArray& lse, uintptr_t stream, double k_scale, double v_scale, const InArray& k_scale_tensor,
             const InArray& v_scale_tensor, const std::optional<std::string>& kv_dtype,
             const InArray& sinks, const InArray& custom_mask, const std::optional<std::string>& q_dtype,
             double q_scale, const InArray& q_scale_tensor) {
            TensorView lse_view;
            const RunArgsArg r(stream, q_scale, k_scale, v_scale, q_scale_tensor, k_scale_tensor, v_scale_tensor,
                               sinks, custom_mask);
            return self.run(fp8_view_of(q, "q", q_dtype), fp8_view_of(k, "k", kv_dtype), fp8_view_of(v, "v", kv_dtype),
                            view_of(out, "out"), optional_view(lse, "lse", lse_view), r.args);
          },
          arg("q"), arg("k"), arg("v"), arg("out"), arg("lse").none(), arg("stream") = 0, arg("k_scale") = 1.0, arg("v_scale") = 1.0,
          arg("k_scale_tensor").none() = nb::none(), arg("v_scale_tensor").none() = nb::none(),
          arg("kv_dtype").none() = nb::none(), arg("sinks").none() = nb::none(), arg("custom_mask").none() = nb::none(), arg("q_dtype").none() = nb::none(), arg("q_scale") = 1.0,
          arg("q_scale_tensor").none() = nb::none(), release);

  auto prefill_paged = nb::class_<BatchPrefillPaged>(m, "BatchPrefillPaged");
  prefill_paged
      .def(nb::init<>())
      .def(
          "plan",
          [](BatchPrefillPaged& self, const InArray& qo_indptr, const InArray& paged_kv_indptr,
             const InArray& paged_kv_indices, const InArray& paged_kv_last_page_len,
             int page_size, int num_pages, int num_qo_heads, int num_kv_heads, int head_dim,
             const std::string& dtype, const Options& opts, const OutArray& workspace,
             const OutArray& plan_workspace, const InArray& device_indices,
             const std::optional<std::string>& kv_dtype, const std::optional<std::string>& o_dtype) {
            const HostIndex qo = host_index(qo_indptr, "qo_indptr");
            const HostIndex indptr = host_index(paged_kv_indptr, "paged_kv_indptr");
            const HostIndex last = host_index(paged_kv_last_page_len, "paged_kv_last_page_len");
            const int batch = batch_of(qo, "qo_indptr");
            expect_size(indptr, qo.size, "paged_kv_indptr", "same length as qo_indptr");
            const WorkspaceArg w = workspaces_of(workspace, plan_workspace);
            const PagedIndex pages =
                make_pages(indptr, paged_kv_indices, device_indices, last, batch, page_size, num_pages, w,
                           "paged_kv_indptr", "paged_kv_indices", "paged_kv_last_page_len");
            return self.plan(qo.data, pages, batch,
                             make_shape(num_qo_heads, num_kv_heads, head_dim, dtype, w, kv_dtype, o_dtype), opts,
                             w.workspace);
          },
          arg("qo_indptr"), arg("paged_kv_indptr"), arg("paged_kv_indices").none(),
          arg("paged_kv_last_page_len"), arg("page_size"), arg("num_pages"), arg("num_qo_heads"),
          arg("num_kv_heads"), arg("head_dim"), arg("dtype"), arg("opts"), arg("workspace"),
          arg("plan_workspace").none() = nb::none(), arg("device_indices").none() = nb::none(),
          arg("kv_dtype").none() = nb::none(), arg("o_dtype").none() = nb::none(), release)
      .def("check", &BatchPrefillPaged::check, release);
  bind_paged_runs(prefill_paged);

  auto decode = nb::class_<BatchDecodePaged>(m, "BatchDecodePaged");
  decode
      .def(nb::init<>())
      .def(
          "plan",
          [](BatchDecodePaged& self, const InArray& indptr_arr, const InArray& indices_arr,
             const InArray& last_page_len_arr, int page_size, int num_pages, int num_qo_heads,
             int num_kv_heads, int head_dim, const std::string& dtype, const Options& opts,
             const OutArray& workspace, const OutArray& plan_workspace, const InArray& device_indices,
             const std::optional<std::string>& kv_dtype, const std::optional<std::string>& o_dtype) {
            const HostIndex indptr = host_index(indptr_arr, "indptr");
            const HostIndex last = host_index(last_page_len_arr, "last_page_len");
            const int batch = batch_of(indptr, "indptr");
            const WorkspaceArg w = workspaces_of(workspace, plan_workspace);
            const PagedIndex pages = make_pages(indptr, indices_arr, device_indices, last, batch, page_size,
                                                num_pages, w, "indptr", "indices", "last_page_len");
            return self.plan(pages, batch, make_shape(num_qo_heads, num_kv_heads, head_dim, dtype, w, kv_dtype, o_dtype),
                             opts, w.workspace);
          },
          arg("indptr"), arg("indices").none(), arg("last_page_len"), arg("page_size"), arg("num_pages"),
          arg("num_qo_heads"), arg("num_kv_heads"), arg("head_dim"), arg("dtype"), arg("opts"),
          arg("workspace"), arg("plan_workspace").none() = nb::none(), arg("device_indices").none() = nb::none(),
          arg("kv_dtype").none() = nb::none(), arg("o_dtype").none() = nb::none(), release)
      .def("check", &BatchDecodePaged::check, release);
  bind_paged_runs(decode);
}

}  // namespace flashband::python
