#include "plan/launch_signature.h"

#include <cstdint>
#include <cstring>
#include <sstream>

namespace flashband::detail {

namespace {

// A field added to AttentionParams must be added below too (or named as the run's): this
// fails to compile until then, unless the field fits into padding. 64-bit Linux layout.
static_assert(sizeof(core::AttentionParams) == 392, "launch_signature: list the new AttentionParams field");

class Fields {
 public:
  template <typename T>
  Fields& add(const char* name, const T& value) {
    out_ << name << '=' << value << ';';
    return *this;
  }
  Fields& add_ptr(const char* name, const void* p) {
    return add(name, reinterpret_cast<std::uintptr_t>(p));
  }
  Fields& add_float(const char* name, float f) {
    uint32_t bits = 0;
    std::memcpy(&bits, &f, sizeof(bits));
    return add(name, bits);
  }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
};

// The longest request's lengths size a launch only where no device array gives them: sm80
// without a work list (backends/sm80/request.h: one request spans them) and sm90 (a single
// request's tiles; kernel_args.cpp), and cudnn's single prefill (its output rows). A cudnn
// graph takes the rounded lengths of its key (state_signature) and each request's from the
// workspace, and an sm80 work list its items' from the workspace too, so plans that differ
// only in lengths launch alike there. Unlisted backends count them, to be safe.
bool launch_reads_max_lengths(const Plan& plan) {
  switch (plan.backend) {
    case Backend::kSM80: return plan.params.work == nullptr;
    case Backend::kCUDNN: return plan.params.op == Op::kSinglePrefill;
    default: return true;
  }
}

}  // namespace

std::string launch_signature(const Plan& plan) {
  const core::AttentionParams& a = plan.params;
  Fields f;
  f.add("backend", backend_name(plan.backend)).add("variant", plan.variant);
  f.add("plan.batch", plan.batch).add("plan.page_size", plan.page_size);
  f.add("plan.total_kv_tokens", plan.total_kv_tokens);
  // How run() binds the tensors: which dimension is tokens, and whether LSE is written.
  f.add("kv_layout", kv_layout_name(plan.opts.kv_layout)).add("return_lse", plan.opts.return_lse);
  // Not plan.num_pages (the cudnn key has it; the others take the cache's from run()) nor
  // plan.max_page_index (the capture guard checks it against the captured cache). The
  // tensors, their strides and page counts are run()'s, and the stream only says where a
  // capture was recorded.
  f.add("op", static_cast<int>(a.op)).add("dtype", static_cast<int>(a.dtype)).add("batch", a.batch);
  // A float scale is a kernel argument, so a capture keeps it; the scale pointers are run()'s
  // tensors, read at replay.
  f.add("kv_dtype", static_cast<int>(a.kv_dtype)).add_float("k_scale", a.k_scale).add_float("v_scale", a.v_scale);
  f.add("o_dtype", static_cast<int>(a.o_dtype)).add_float("q_scale", a.q_scale);
  f.add("num_qo_heads", a.num_qo_heads).add("num_kv_heads", a.num_kv_heads).add("head_dim", a.head_dim);
  f.add("kv_storage", static_cast<int>(a.kv_storage)).add("page_size", a.page_size);
  f.add_ptr("qo_indptr", a.qo_indptr).add_ptr("kv_indptr", a.kv_indptr).add_ptr("page_indices", a.page_indices);
  f.add_ptr("last_page_len", a.last_page_len).add_ptr("kv_lens", a.kv_lens).add_ptr("page_status", a.page_status);
  f.add("causal", a.causal).add("window_left", a.window_left).add("window_right", a.window_right);
  f.add_float("logits_soft_cap", a.logits_soft_cap).add_float("sm_scale", a.sm_scale);
  // Whether runs pass sinks is the plan's (Options::sinks); the sinks pointer is run()'s
  // tensor, like q, and its values are read at replay.
  f.add("sinks", plan.opts.sinks);
  // Likewise a custom mask: its bits are run()'s tensor, its byte offsets the plan's array.
  f.add("custom_mask", plan.opts.custom_mask).add_ptr("mask_indptr", a.mask_indptr);
  if (launch_reads_max_lengths(plan)) f.add("max_qo_len", a.max_qo_len).add("max_kv_len", a.max_kv_len);
  f.add("total_qo_tokens", a.total_qo_tokens);
  // work is a device work list (sm80) or the plan's own host state (sm90, cudnn), whose
  // address changes with every plan and whose values state_signature lists.
  if (a.work != nullptr && a.work == plan.backend_state.get()) {
    f.add("work", "backend_state");
  } else {
    f.add_ptr("work", a.work);
  }
  f.add("num_work_items", a.num_work_items).add("num_kv_splits", a.num_kv_splits);
  f.add_ptr("scratch", a.scratch).add("scratch_bytes", a.scratch_bytes);
  return f.str() + plan.state_signature;
}

std::string signature_difference(const std::string& a, const std::string& b) {
  if (a == b) return {};
  // Fields in order; both signatures list the same names unless the backend differs.
  std::size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    const std::size_t ei = a.find(';', i), ej = b.find(';', j);
    const std::string fa = a.substr(i, ei == std::string::npos ? std::string::npos : ei - i);
    const std::string fb = b.substr(j, ej == std::string::npos ? std::string::npos : ej - j);
    if (fa != fb) {
      // "name=value" on each side; a side whose fields ended has "(none)".
      auto split = [](const std::string& field, std::string& name, std::string& value) {
        const std::size_t eq = field.find('=');
        name = field.substr(0, eq);
        value = field.empty() ? "(none)" : eq == std::string::npos ? field : field.substr(eq + 1);
      };
      std::string na, va, nb, vb;
      split(fa, na, va);
      split(fb, nb, vb);
      if (na.empty() || na == nb) return (na.empty() ? nb : na) + ": " + va + " vs " + vb;
      return na + ": " + va + " vs (" + fb + ")";
    }
    if (ei == std::string::npos || ej == std::string::npos) break;
    i = ei + 1;
    j = ej + 1;
  }
  return "signature: " + a + " vs " + b;
}

}  // namespace flashband::detail
