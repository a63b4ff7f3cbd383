// The pure selection function and its checks, in the order a user would want to hear them:
// op, device, arch, status, then each feature limit, and finally whether the build has it.
#include "dispatch/select.h"

#include <algorithm>
#include <sstream>

#include "dispatch/auto_order.h"
#include "dispatch/cudnn_known_bad.h"
#include "core/mask.h"

namespace flashband::dispatch {

VariantKey variant_for(const ProblemDesc& p, Backend backend) {
  VariantKey k;
  k.backend = backend;
  k.shape = p.op == Op::kPagedDecode ? KernelShape::kDecode : KernelShape::kPrefill;
  k.storage = (p.op == Op::kPagedPrefill || p.op == Op::kPagedDecode) ? core::KVStorage::kPaged
                                                                       : core::KVStorage::kContiguous;
  k.dtype = p.dtype;
  k.kv_dtype = p.kv_dtype.value_or(p.dtype);
  k.head_dim = p.head_dim;
  k.needs_mask = core::needs_mask(p.causal, p.window_left, p.window_right) || p.custom_mask;
  k.custom_mask = p.custom_mask;
  k.soft_cap = p.soft_cap;
  return k;
}

namespace {

bool is_paged(Op op) { return op == Op::kPagedPrefill || op == Op::kPagedDecode; }

std::string list_head_dims(const Limits& l) {
  if (l.head_dims.empty()) return "1.." + std::to_string(l.max_head_dim);
  std::string s;
  for (size_t i = 0; i < l.head_dims.size(); ++i) s += (i ? ", " : "") + std::to_string(l.head_dims[i]);
  return s;
}

std::string list_dtypes(const Limits& l) {
  std::string s;
  for (size_t i = 0; i < l.dtypes.size(); ++i) s += std::string(i ? ", " : "") + dtype_name(l.dtypes[i]);
  return s;
}

// "q's dtype, float8_e4m3fn", or "q's dtype only: <why>" for a row without fp8 K/V.
std::string list_kv_dtypes(const Limits& l) {
  std::string s = "q's dtype";
  for (DType d : l.kv_dtypes) s += std::string(", ") + dtype_name(d);
  if (l.kv_dtypes.empty() && *l.kv_dtypes_note) s += std::string(" only: ") + l.kv_dtypes_note;
  return s;
}

std::string prefix(Backend b) { return std::string("backend '") + backend_name(b) + "' "; }

// Empty when the limits cover the problem, else the reason naming the parameter.
std::string check_limits(const ProblemDesc& p, Backend b, const Limits& l) {
  if (p.dtype == DType::kE4M3 && std::find(l.dtypes.begin(), l.dtypes.end(), p.dtype) == l.dtypes.end())
    return prefix(b) + "does not support fp8 attention (q float8_e4m3fn): " + l.fp8_attention_note;
  if (std::find(l.dtypes.begin(), l.dtypes.end(), p.dtype) == l.dtypes.end())
    return prefix(b) + "does not support dtype " + dtype_name(p.dtype) + " (supports " + list_dtypes(l) + ")";
  const DType kv = p.kv_dtype.value_or(p.dtype);
  if (kv != p.dtype && std::find(l.kv_dtypes.begin(), l.kv_dtypes.end(), kv) == l.kv_dtypes.end())
    return prefix(b) + "does not support kv_dtype " + dtype_name(kv) + " (supports " + list_kv_dtypes(l) + ")";
  const bool dim_ok = l.head_dims.empty()
                          ? (p.head_dim >= 1 && p.head_dim <= l.max_head_dim)
                          : std::find(l.head_dims.begin(), l.head_dims.end(), p.head_dim) != l.head_dims.end();
  if (!dim_ok)
    return prefix(b) + "does not support head_dim " + std::to_string(p.head_dim) + " (supports " +
           list_head_dims(l) + ")";
  if (p.causal && !l.causal) return prefix(b) + "does not support causal=true";
  if (p.window_left >= 0 && p.causal && !l.window_with_causal)
    return prefix(b) + "does not support window_left " + std::to_string(p.window_left) + " with causal=true";
  if (p.window_left >= 0 && !p.causal && !l.window_without_causal)
    return prefix(b) + "does not support window_left " + std::to_string(p.window_left) + " with causal=false";
  if (p.window_right >= 0 && !l.window_right)
    return prefix(b) + "does not support window_right " + std::to_string(p.window_right) + " (a two-sided window)";
  if (p.soft_cap && !l.soft_cap) return prefix(b) + "does not support logits_soft_cap > 0";
  if (p.sinks && !l.sinks) return prefix(b) + "does not support sinks (attention sinks)" + (l.note_sinks ? l.note_sinks : "");
  if (p.custom_mask && !l.custom_mask)
    return prefix(b) + "does not support custom_mask" + (l.note_custom_mask ? l.note_custom_mask : "");
  if (p.return_lse && !l.lse) return prefix(b) + "does not support return_lse=true";
  if (p.window_left >= 0 && p.qo_longer_than_kv && !l.window_qo_longer_than_kv)
    return prefix(b) + "does not support window_left " + std::to_string(p.window_left) +
           " when a request has qo_len > kv_len";
  if (p.window_right >= 0 && p.qo_longer_than_kv && !l.window_qo_longer_than_kv)
    return prefix(b) + "does not support window_right " + std::to_string(p.window_right) +
           " when a request has qo_len > kv_len";
  if (p.disable_split_kv && !l.split_kv_control)
    return prefix(b) + "does not support disable_split_kv=true (it cannot promise that no engine splits the keys)";
  if (p.device_page_indices && !l.device_page_indices)
    return prefix(b) + "does not read paged_kv_indices from a device array at run time (it copies them at "
                       "plan time); give host page indices";
  if (p.has_empty_rows && !l.empty_rows)
    return prefix(b) + "does not support query rows that see no key (causal with qo_len > kv_len, or kv_len 0)";
  if (is_paged(p.op) || p.op == Op::kSinglePrefill || p.op == Op::kRaggedPrefill) {
    if (p.kv_layout == KVLayout::kNHD && !l.nhd) return prefix(b) + "does not support kv_layout NHD";
    if (p.kv_layout == KVLayout::kHND && !l.hnd) return prefix(b) + "does not support kv_layout HND";
  }
  if (is_paged(p.op) && l.page_size_pow2 && (p.page_size & (p.page_size - 1)) != 0)
    return prefix(b) + "does not support page_size " + std::to_string(p.page_size) + " (supports powers of two)";
  if (is_paged(p.op) && (p.page_size < l.min_page_size || p.page_size > l.max_page_size))
    return prefix(b) + "does not support page_size " + std::to_string(p.page_size) + " (supports " +
           std::to_string(l.min_page_size) + ".." + std::to_string(l.max_page_size) + ")";
  return {};
}

// The runtime cuDNN against dispatch/cudnn_known_bad.h. The graph's exact s_kv is not known
// before plan, so max_kv_len stands in for it (plan_cudnn re-checks with the exact value).
std::string cudnn_version_problem(const ProblemDesc& p, const MachineInfo& m) {
  using namespace cudnn_backend;
  if (m.cudnn_version < kMinCudnnVersion)
    return "needs cuDNN " + std::to_string(kMinCudnnVersion) + " or newer; the loaded version is " +
           std::to_string(m.cudnn_version);
  BadWindowProblem facts;
  facts.version = m.cudnn_version;
  facts.sm = m.arch;
  facts.causal = p.causal;
  facts.window_left = p.window_left;
  facts.s_kv = p.max_kv_len;
  facts.ragged = p.op == Op::kRaggedPrefill || p.op == Op::kPagedPrefill;
  facts.sinks = p.sinks;
  if (const KnownBadWindow* w = find_known_bad(facts)) return std::string("is known-bad here: ") + w->reason;
  return {};
}

std::string build_option_for(Backend b) {
  switch (b) {
    case Backend::kSM80: return "configure with nvcc available and FLASHBAND_CUDA_ARCHS containing 80 or 90a";
    case Backend::kSM90: return "configure with FLASHBAND_CUDA_ARCHS containing 90a and deps/cutlass present (scripts/bootstrap.sh)";
    case Backend::kCUDNN: return "configure with FLASHBAND_WITH_CUDNN=ON (needs libcudnn and deps/cudnn_frontend)";
    default: return "rebuild flashband";
  }
}

}  // namespace

Verdict check_backend(const ProblemDesc& p, Backend b, const MachineInfo& m, const Registry& registry,
                      const std::vector<CapabilityRow>& table) {
  Verdict v;
  bool op_known = false;
  const CapabilityRow* row = nullptr;
  const bool host_backend = b == Backend::kCPU;
  for (const auto& r : table) {
    if (r.op != p.op || r.backend != b) continue;
    op_known = true;
    if (host_backend || (m.arch >= r.min_arch && m.arch <= r.max_arch)) row = &r;
  }
  if (!op_known) {
    v.reason = prefix(b) + "does not implement " + op_name(p.op);
    return v;
  }
  if (host_backend != (p.device == Device::kCPU)) {
    v.code = ErrorCode::kInvalidArgument;
    v.reason = prefix(b) + (host_backend ? "needs host tensors, got CUDA tensors"
                                         : "needs CUDA tensors, got host tensors");
    return v;
  }
  if (!host_backend && m.cuda_devices == 0) {
    v.reason = prefix(b) + "needs a CUDA device; none was found";
    return v;
  }
  if (!row) {
    v.reason = prefix(b) + "does not run " + op_name(p.op) + " on compute capability " +
               std::to_string(m.arch / 10) + "." + std::to_string(m.arch % 10);
    return v;
  }
  v.row = row;
  if (row->status == Status::kUnsupported) {
    v.reason = prefix(b) + "does not implement " + op_name(p.op) + " (" + row->note + ")";
    return v;
  }
  if (row->status == Status::kKnownBad) {
    v.reason = prefix(b) + "is known to give wrong results for " + op_name(p.op) + " on this arch (" + row->note + ")";
    return v;
  }
  if (row->limits.cudnn_versions) {
    std::string why = cudnn_version_problem(p, m);
    if (!why.empty()) {
      v.reason = prefix(b) + why;
      return v;
    }
  }
  std::string why = check_limits(p, b, row->limits);
  if (!why.empty()) {
    v.reason = why;
    return v;
  }
  const VariantKey key = variant_for(p, b);
  v.kernel = registry.find(key);
  if (!v.kernel) {
    v.code = ErrorCode::kNotBuilt;
    v.reason = prefix(b) + "has no kernel " + key.to_string() + " in this build; " + build_option_for(b);
    return v;
  }
  v.ok = true;
  return v;
}

Selection select(const ProblemDesc& p, Backend requested, const MachineInfo& m, const Registry& registry,
                 const std::vector<CapabilityRow>& table) {
  if (requested != Backend::kAuto) {
    Verdict v = check_backend(p, requested, m, registry, table);
    if (v.ok) return {requested, v.kernel, status_for(*v.row, p)};
    // Name the backends that could run exactly this call.
    std::vector<std::string> others;
    for (Backend b : {Backend::kCPU, Backend::kSM80, Backend::kSM90, Backend::kCUDNN}) {
      if (b != requested && check_backend(p, b, m, registry, table).ok) others.push_back(backend_name(b));
    }
    std::ostringstream msg;
    msg << v.reason << "; ";
    if (others.empty()) {
      msg << "no other backend can run it here";
    } else {
      for (size_t i = 0; i < others.size(); ++i)
        msg << (i == 0 ? "" : (i + 1 == others.size() ? " and " : ", ")) << "'" << others[i] << "'";
      msg << (others.size() == 1 ? " does" : " do");
    }
    throw Error(v.code, msg.str());
  }
  return candidates(p, requested, m, registry, table).front();
}

std::vector<Selection> candidates(const ProblemDesc& p, Backend requested, const MachineInfo& m,
                                  const Registry& registry, const std::vector<CapabilityRow>& table,
                                  std::string* passed_over) {
  if (requested != Backend::kAuto) {
    Verdict v = check_backend(p, requested, m, registry, table);
    if (v.ok) return {{requested, v.kernel, status_for(*v.row, p)}};
    return {select(p, requested, m, registry, table)};  // throws, naming the alternatives
  }
  // auto: validated backends first, in its rule's order (auto_order.cpp), then declared ones.
  std::vector<Selection> out;
  std::string reasons;
  for (Status wanted : {Status::kValidated, Status::kDeclared}) {
    for (Backend b : auto_rule(p, m.arch).order) {
      Verdict v = check_backend(p, b, m, registry, table);
      if (v.ok && status_for(*v.row, p) == wanted) out.push_back({b, v.kernel, wanted});
      if (wanted == Status::kValidated && !v.ok) reasons += "\n  " + v.reason;
    }
  }
  if (out.empty())
    throw Error(ErrorCode::kUnsupported, std::string("backend 'auto': no backend can run ") + op_name(p.op) +
                                             " with these parameters:" + reasons);
  if (passed_over) *passed_over = reasons;
  return out;
}

}  // namespace flashband::dispatch
