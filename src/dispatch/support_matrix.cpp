// The README support matrix, generated from the capability table (never edited by hand:
// tests/unit/readme_matrix_test.cpp fails when README.md and this output differ).
#include <algorithm>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "dispatch/cudnn_known_bad.h"
#include "core/mask.h"
#include "dispatch/auto_order.h"
#include "dispatch/capability_table.h"
#include "dispatch/select.h"

namespace flashband {

namespace {

std::string arch_range(const dispatch::CapabilityRow& r) {
  if (r.backend == Backend::kCPU) return "host";
  auto cc = [](int a) { return "sm_" + std::to_string(a); };
  return r.min_arch == r.max_arch ? cc(r.min_arch) : cc(r.min_arch) + "–" + cc(r.max_arch);
}

const char* short_dtype(DType d) {
  switch (d) {
    case DType::kF16: return "fp16";
    case DType::kBF16: return "bf16";
    case DType::kF32: return "fp32";
    case DType::kE4M3: return "e4m3";
    case DType::kE5M2: return "e5m2";
    default: return "?";
  }
}

std::string dtypes(const dispatch::Limits& l) {
  std::string s;
  for (size_t i = 0; i < l.dtypes.size(); ++i) s += std::string(i ? ", " : "") + short_dtype(l.dtypes[i]);
  return s;
}

// The K/V dtypes column: q's always, then the fp8 formats the row dequantizes.
std::string kv_dtypes(const dispatch::Limits& l) {
  std::string s = "as q";
  for (DType d : l.kv_dtypes) s += std::string(", ") + short_dtype(d);
  return s;
}

// "sm80 (why), cudnn (why)" for the backends with a supported row whose limits lack what
// `serves` asks (fp8 K/V, fp8 attention); `note` gives the row's reason.
template <class Serves, class Note>
std::string refusals_with_reasons(Serves serves, Note note_of) {
  std::string out;
  for (Backend b : {Backend::kCPU, Backend::kSM80, Backend::kSM90, Backend::kCUDNN}) {
    std::string archs;
    std::vector<std::pair<std::string, std::string>> notes;  // (arch range, reason), first seen
    bool some_serve = false;
    for (const auto& r : dispatch::capability_table()) {
      if (r.backend != b || r.status == dispatch::Status::kUnsupported) continue;
      if (serves(r.limits)) {
        some_serve = true;
      } else if (archs.find(arch_range(r)) == std::string::npos) {
        archs += (archs.empty() ? "" : ", ") + arch_range(r);
        notes.emplace_back(arch_range(r), note_of(r.limits));
      }
    }
    if (archs.empty()) continue;
    // One reason for all arches, or each arch with its own (cudnn's fp8 attention).
    std::string reasons = notes.front().second;
    for (const auto& n : notes) {
      if (n.second == notes.front().second) continue;
      reasons.clear();
      for (const auto& m : notes) reasons += (reasons.empty() ? "" : "; ") + m.first + ": " + m.second;
      break;
    }
    // Name the arches where only some of a backend's rows refuse (sm80's 99 KB parts).
    out += (out.empty() ? "" : "; ") + std::string(backend_name(b)) + (some_serve ? " on " + archs : "") + " (" +
           reasons + ")";
  }
  return out.empty() ? "none" : out;
}

std::string head_dims(const dispatch::Limits& l) {
  if (l.head_dims.empty()) return "1–" + std::to_string(l.max_head_dim);
  std::string s;
  for (size_t i = 0; i < l.head_dims.size(); ++i) s += (i ? ", " : "") + std::to_string(l.head_dims[i]);
  return s;
}

const char* yes(bool b) { return b ? "yes" : "no"; }

std::string windows(const dispatch::Limits& l) {
  if (l.window_with_causal && l.window_without_causal) return "causal and non-causal";
  if (l.window_with_causal) return "causal only";
  if (l.window_without_causal) return "non-causal only";
  return "no";
}

std::string layouts(const dispatch::Limits& l) {
  return l.nhd && l.hnd ? "NHD, HND" : l.nhd ? "NHD" : "HND";
}

std::string pages(const dispatch::CapabilityRow& r) {
  if (r.op != Op::kPagedPrefill && r.op != Op::kPagedDecode) return "–";
  const auto& l = r.limits;
  if (l.page_size_pow2) return "powers of 2";
  if (l.max_page_size >= (1 << 30)) return std::to_string(l.min_page_size) + "+";
  return std::to_string(l.min_page_size) + "–" + std::to_string(l.max_page_size);
}

// The backends with a supported row whose limits lack `allows`, as "a, b", or "none".
template <class Allows>
std::string refused_by(Allows allows) {
  std::string out;
  for (Backend b : {Backend::kCPU, Backend::kSM80, Backend::kSM90, Backend::kCUDNN}) {
    for (const auto& r : dispatch::capability_table()) {
      if (r.backend == b && r.status != dispatch::Status::kUnsupported && !allows(r.limits)) {
        out += (out.empty() ? "" : ", ") + std::string(backend_name(b));
        break;
      }
    }
  }
  return out.empty() ? "none" : out;
}

}  // namespace

std::string support_matrix_markdown() {
  std::ostringstream s;
  s << "| op | backend | arch | status | dtypes | K/V dtypes | head dims | causal | window | window_right | soft cap | "
       "sinks | custom mask | LSE | layouts | page sizes |\n";
  s << "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : dispatch::capability_table()) {
    s << "| " << op_name(r.op) << " | " << backend_name(r.backend) << " | " << arch_range(r) << " | "
      << dispatch::status_name(r.status);
    if (r.status == dispatch::Status::kUnsupported) {
      s << " | – | – | – | – | – | – | – | – | – | – | – | – |\n";
      continue;
    }
    const auto& l = r.limits;
    s << " | " << dtypes(l) << " | " << kv_dtypes(l) << " | " << head_dims(l) << " | " << yes(l.causal) << " | "
      << windows(l) << " | " << yes(l.window_right) << " | " << yes(l.soft_cap) << " | " << yes(l.sinks) << " | "
      << yes(l.custom_mask) << " | " << yes(l.lse) << " | " << layouts(l) << " | " << pages(r) << " |\n";
  }
  s << "\nfp8 K/V (float8_e4m3fn, float8_e5m2, with fp16 or bf16 q and per-tensor k_scale / v_scale) is "
       "refused by: "
    << refusals_with_reasons([](const dispatch::Limits& l) { return !l.kv_dtypes.empty(); },
                             [](const dispatch::Limits& l) { return l.kv_dtypes_note; })
    << ".\n";
  s << "\nfp8 attention (q, K and V float8_e4m3fn with per-tensor q_scale / k_scale / v_scale, P quantized "
       "to e4m3, fp16 or bf16 output; the e4m3 q dtype above) is refused by: "
    << refusals_with_reasons(
           [](const dispatch::Limits& l) {
             return std::find(l.dtypes.begin(), l.dtypes.end(), DType::kE4M3) != l.dtypes.end();
           },
           [](const dispatch::Limits& l) { return l.fp8_attention_note; })
    << ".\n";
  s << "\nA sliding window (window_left or window_right) with a request whose qo_len > kv_len is refused by: "
    << refused_by([](const dispatch::Limits& l) { return l.window_qo_longer_than_kv; }) << ".\n";
  s << "\nRows that see no key (causal with qo_len > kv_len, or kv_len 0) are refused by: "
    << refused_by([](const dispatch::Limits& l) { return l.empty_rows; }) << ".\n";
  s << "\n`disable_split_kv` (no split-KV) is refused by: "
    << refused_by([](const dispatch::Limits& l) { return l.split_kv_control; }) << ".\n";
  s << "\nPage indices read from a device array at every run (FlashInfer's CUDA-graph index "
       "buffers, `PagedIndex::device_indices`) are refused by: "
    << refused_by([](const dispatch::Limits& l) { return l.device_page_indices; }) << ".\n";
  s << "\nServed but not yet run by the GPU grid (declared, not validated, for problems that use "
       "them; auto prefers a backend validated for them):";
  std::string declared;
  for (Backend b : {Backend::kCPU, Backend::kSM80, Backend::kSM90, Backend::kCUDNN}) {
    unsigned bits = 0;
    for (const auto& r : dispatch::capability_table())
      if (r.backend == b && r.status == dispatch::Status::kValidated) bits |= r.unvalidated;
    if (bits) declared += std::string(declared.empty() ? " " : "; ") + backend_name(b) + ": " + dispatch::feature_names(bits);
  }
  s << (declared.empty() ? " none" : declared) << ".\n";
  s << "\n`auto` tries the backends in its first matching rule's order (src/dispatch/auto_order.cpp), "
       "validated rows before declared ones:\n\n| rule | device | ops | cuda_graph | order | measured |\n"
       "|---|---|---|---|---|---|\n";
  for (const auto& r : dispatch::auto_rules()) {
    std::string order;
    for (Backend b : r.order) order += (order.empty() ? "" : ", ") + std::string(backend_name(b));
    s << "| " << r.name << " | " << (r.device == Device::kCPU ? "host" : "CUDA") << " | "
      << (r.ops == dispatch::OpClass::kDecode ? "decode" : r.ops == dispatch::OpClass::kPrefill ? "prefill" : "all")
      << " | " << (r.graph == dispatch::GraphMatch::kEager ? "no" : r.graph == dispatch::GraphMatch::kGraph ? "yes" : "either")
      << " | " << order << " | " << r.why << " |\n";
  }
  s << "\ncuDNN versions refused at selection: older than "
    << cudnn_backend::kMinCudnnVersion;
  for (const auto& w : cudnn_backend::kKnownBadWindows)
    s << "; " << w.first << "–" << w.last << " (" << w.reason << ")";
  s << ".\n";
  return s.str();
}

namespace {

// What plan() refuses for every backend, so that no backend says yes to it.
std::string invalid_semantics(const ProblemDesc& p) {
  if (core::right_bounds_conflict(p.causal, p.window_right))
    return "window_right: got " + std::to_string(p.window_right) +
           " with causal=true, which plan() refuses (allowed with causal=true: -1 or 0)";
  if (core::custom_mask_conflicts(p.causal, p.custom_mask))
    return "causal: got true with a custom_mask, which plan() refuses (put the causal bits into the mask)";
  return {};
}

}  // namespace

SupportAnswer supports(const ProblemDesc& problem, Backend backend) {
  const auto m = dispatch::machine_info(problem.device, problem.device_id);
  SupportAnswer a;
  a.reason = invalid_semantics(problem);
  if (!a.reason.empty()) return a;
  if (backend == Backend::kAuto) {
    try {
      dispatch::select(problem, backend, m, dispatch::registry());
      a.supported = true;
    } catch (const Error& e) {
      a.reason = e.what();
    }
    return a;
  }
  auto v = dispatch::check_backend(problem, backend, m, dispatch::registry());
  a.supported = v.ok;
  a.reason = v.reason;
  return a;
}

Backend select_backend(const ProblemDesc& problem) {
  const std::string invalid = invalid_semantics(problem);
  if (!invalid.empty()) throw Error(ErrorCode::kInvalidArgument, invalid);
  const auto m = dispatch::machine_info(problem.device, problem.device_id);
  return dispatch::select(problem, Backend::kAuto, m, dispatch::registry()).backend;
}

}  // namespace flashband
