#include "cli/case_checks.h"

#include <unistd.h>

#include <cctype>
#include <cstdint>

#include "validate/validate.h"
#include "case_steps.h"
#include "flashband/capability.h"

namespace flashband::cli {

namespace {

struct FlagName {
  const char* library;
  const char* flag;
};
constexpr FlagName kFlags[] = {
    {"num_qo_heads", "--heads"},        {"num_kv_heads", "--kv-heads"},   {"head_dim", "--head-dim"},
    {"window_left", "--window"},        {"window_right", "--window-right"}, {"logits_soft_cap", "--soft-cap"},
    {"sm_scale", "--sm-scale"},         {"sinks", "--sinks"},              {"custom_mask", "--mask-density"},
    {"page_size", "--page-size"},       {"kv_layout", "--layout"},         {"dtype", "--dtype"},
    {"q_data_type", "--dtype"},         {"kv_data_type", "--kv-dtype"},    {"kv_dtype", "--kv-dtype"},
    {"k_scale", "--k-scale"},           {"v_scale", "--v-scale"},          {"q_scale", "--q-scale"},
    {"o_data_type", "--o-dtype"},
};

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'; }

[[noreturn]] void refuse_in_flags(ErrorCode code, const std::string& message, const char* q_flag) {
  throw Error(code, in_flag_names(message, q_flag));
}

// Elements of q, k, v and out over every request; false when the count overflows int64.
bool input_elements(const testing::Case& c, int64_t& total) {
  const std::vector<int> qo = testing::case_qo_lens(c);
  const bool paged = c.entry == testing::EntryPoint::kPaged || c.entry == testing::EntryPoint::kDecode;
  total = 0;
  for (std::size_t b = 0; b < c.kv_lens.size(); ++b) {
    int64_t kv = c.kv_lens[b];
    if (paged && c.page_size > 0) kv = (kv + c.page_size - 1) / c.page_size * c.page_size;
    int64_t q_el = 0, kv_el = 0;
    if (__builtin_mul_overflow(int64_t{qo[b]}, int64_t{c.num_qo_heads}, &q_el) ||
        __builtin_mul_overflow(q_el, int64_t{c.head_dim} * 2, &q_el) ||  // q and out
        __builtin_mul_overflow(kv, int64_t{c.num_kv_heads}, &kv_el) ||
        __builtin_mul_overflow(kv_el, int64_t{c.head_dim} * 2, &kv_el) ||  // k and v
        __builtin_add_overflow(total, q_el, &total) || __builtin_add_overflow(total, kv_el, &total))
      return false;
  }
  return true;
}

}  // namespace

std::string in_flag_names(const std::string& message, const char* q_flag) {
  std::string out = message;
  for (const FlagName& f : kFlags) {
    const std::string from = f.library, to = std::string(f.flag) == "--dtype" ? q_flag : f.flag;
    for (std::size_t pos = out.find(from); pos != std::string::npos; pos = out.find(from, pos)) {
      const bool whole = (pos == 0 || !word_char(out[pos - 1])) &&
                         (pos + from.size() == out.size() || !word_char(out[pos + from.size()]));
      if (whole) {
        out.replace(pos, from.size(), to);
        pos += to.size();
      } else {
        pos += from.size();
      }
    }
  }
  return out;
}

void check_case(const testing::Case& c, const char* q_flag) {
  auto refuse = [q_flag](ErrorCode code, const std::string& message) { refuse_in_flags(code, message, q_flag); };
  // fp8 attention's flags with 16-bit q, said here in flag names (the library's words would
  // read "dtype" as --dtype).
  const std::string q16 = std::string(q_flag) + " " + dtype_name(c.dtype);
  if (c.dtype != DType::kE4M3 && c.q_scale != 1.0f)
    throw Error(ErrorCode::kInvalidArgument, "--q-scale: given with " + q16 + "; it dequantizes fp8 attention's q (--q-dtype e4m3)");
  if (c.dtype != DType::kE4M3 && c.o_dtype && *c.o_dtype != c.dtype)
    throw Error(ErrorCode::kInvalidArgument, std::string("--o-dtype: got ") + dtype_name(*c.o_dtype) + " with " + q16 +
                                                 "; the output is q's, except with --q-dtype e4m3 (fp8 attention)");
  try {
    validate::options(testing::case_options(c));
    validate::heads(c.num_qo_heads, c.num_kv_heads, c.head_dim);
    // fp8 K/V, fp8 attention's output and the scales, as plan() and run() judge them.
    const DType kv = c.kv_dtype.value_or(c.dtype);
    validate::kv_dtype(c.dtype, kv);
    validate::o_dtype(c.dtype, c.o_dtype, "o_data_type");
    validate::kv_scale("q_scale", c.q_scale);
    validate::kv_scale("k_scale", c.k_scale);
    validate::kv_scale("v_scale", c.v_scale);
    if (!is_fp8(kv) && (c.k_scale != 1.0f || c.v_scale != 1.0f || c.scale_tensors))
      throw Error(ErrorCode::kInvalidArgument, std::string(c.scale_tensors ? "--scale-tensors" : "k_scale/v_scale") +
                                                   ": given with K/V stored as " + dtype_name(kv) +
                                                   "; scales dequantize an fp8 cache (--kv-dtype e4m3 or e5m2)");
  } catch (const Error& e) {
    refuse(e.code(), e.what());
  }
  const bool paged = c.entry == testing::EntryPoint::kPaged || c.entry == testing::EntryPoint::kDecode;
  if (paged && c.page_size < 1) refuse(ErrorCode::kInvalidArgument, "page_size: got " + std::to_string(c.page_size) + ", allowed: >= 1");
  if (!c.sinks.empty() && static_cast<int64_t>(c.sinks.size()) != c.num_qo_heads)
    refuse(ErrorCode::kInvalidArgument, "sinks: got " + std::to_string(c.sinks.size()) +
                                            " values, allowed: one per query head (num_qo_heads " +
                                            std::to_string(c.num_qo_heads) + ")");

  const ProblemDesc d = testing::problem_of(c);  // what plan() asks the capability table
  if (c.backend == Backend::kAuto) {
    try {
      select_backend(d);
    } catch (const Error& e) {
      refuse(e.code(), e.what());
    }
  } else {
    const SupportAnswer answer = supports(d, c.backend);
    if (!answer.supported) refuse(ErrorCode::kUnsupported, answer.reason);
  }

  // The random inputs (generated in double, then copied in the case's dtype) must fit here.
  int64_t elements = 0;
  const long pages = sysconf(_SC_PHYS_PAGES), page_bytes = sysconf(_SC_PAGE_SIZE);
  const double memory = pages > 0 && page_bytes > 0 ? static_cast<double>(pages) * page_bytes : 0.0;
  constexpr double kBytesPerElement = 8 + 4 + 4;  // double, host copy, device copy
  const bool fits = input_elements(c, elements);
  if (!fits || (memory > 0 && elements * kBytesPerElement > memory))
    refuse(ErrorCode::kInvalidArgument,
           "--head-dim " + std::to_string(c.head_dim) + ", --heads " + std::to_string(c.num_qo_heads) + ", --kv-heads " +
               std::to_string(c.num_kv_heads) + " and the lengths (--qo-len/--kv-len/--qo-lens/--kv-lens): " +
               (fits ? "the inputs need about " + std::to_string(static_cast<int64_t>(elements * kBytesPerElement)) +
                           " bytes, more than this machine's " + std::to_string(static_cast<int64_t>(memory)) + " bytes of memory"
                     : std::string("the input sizes overflow a 64-bit element count")));
}

}  // namespace flashband::cli
