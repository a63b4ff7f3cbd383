// `flashband run`: one problem from flags, on random data, optionally checked and timed.
#include <cstdio>
#include <optional>
#include <string>

#include "validate/validate.h"
#include "cli/case_checks.h"
#include "cli/commands.h"
#include "dispatch/select.h"

namespace flashband::cli {

Device device_for(Backend backend) {
  if (backend == Backend::kCPU) return Device::kCPU;
  const bool have_gpu = dispatch::machine_info(Device::kCUDA, 0).cuda_devices > 0;
  if (backend == Backend::kAuto) return have_gpu ? Device::kCUDA : Device::kCPU;
  if (!have_gpu)
    throw Error(ErrorCode::kUnsupported, std::string("--backend ") + backend_name(backend) +
                                             ": needs a CUDA device and none was found (use --backend cpu or auto)");
  return Device::kCUDA;
}

namespace {

testing::EntryPoint parse_entry(const std::string& s) {
  if (s == "single") return testing::EntryPoint::kSingle;
  if (s == "ragged") return testing::EntryPoint::kRagged;
  if (s == "paged") return testing::EntryPoint::kPaged;
  if (s == "decode") return testing::EntryPoint::kDecode;
  throw Error(ErrorCode::kInvalidArgument, "--entry: got '" + s + "', allowed: single, ragged, paged, decode");
}

// --dtype, --o-dtype; --q-dtype also takes e4m3 (fp8 attention, SPEC.md): each flag's values.
DType parse_dtype(const std::string& s, const char* flag = "dtype", bool e4m3 = false) {
  if (s == "fp16" || s == "f16" || s == "float16") return DType::kF16;
  if (s == "bf16" || s == "bfloat16") return DType::kBF16;
  if (s == "fp32" || s == "f32" || s == "float32") return DType::kF32;
  if (e4m3 && (s == "e4m3" || s == "fp8_e4m3" || s == "float8_e4m3fn")) return DType::kE4M3;
  throw Error(ErrorCode::kInvalidArgument,
              std::string("--") + flag + ": got '" + s + "', allowed: fp16, bf16, fp32" + (e4m3 ? ", e4m3" : ""));
}

// --kv-dtype: the K/V storage; "as-q" (the default) stores them in q's dtype.
std::optional<DType> parse_kv_dtype(const std::string& s) {
  if (s == "as-q") return std::nullopt;
  if (s == "e4m3" || s == "fp8_e4m3" || s == "float8_e4m3fn") return DType::kE4M3;
  if (s == "e5m2" || s == "fp8_e5m2" || s == "float8_e5m2") return DType::kE5M2;
  throw Error(ErrorCode::kInvalidArgument, "--kv-dtype: got '" + s + "', allowed: as-q, e4m3, e5m2");
}

KVLayout parse_layout(const std::string& s) {
  if (s == "NHD" || s == "nhd") return KVLayout::kNHD;
  if (s == "HND" || s == "hnd") return KVLayout::kHND;
  throw Error(ErrorCode::kInvalidArgument, "--layout: got '" + s + "', allowed: NHD, HND");
}

[[noreturn]] void bad_flag(const std::string& flag, const std::string& rest) {
  throw Error(ErrorCode::kInvalidArgument, "--" + flag + ": " + rest);
}

// Lengths come from --X-len (one for every request) or --X-lens (a list).
void check_lengths(const Args& a, const char* one, const char* list, const std::vector<int>& lens) {
  const char* flag = a.given(list) ? list : one;
  for (std::size_t i = 0; i < lens.size(); ++i)
    if (lens[i] < 0)
      bad_flag(flag, "got " + std::to_string(lens[i]) + (a.given(list) ? " at entry " + std::to_string(i) : "") +
                         ", allowed: >= 0");
}

// A float flag as the float32 the library takes, refused under the flag's name when it
// rounds to 0 or infinity there.
float float_flag(Args& a, const char* flag, const char* library_name) {
  try {
    return validate::float_param(library_name, a.real(flag, 0.0));
  } catch (const Error& e) {
    throw Error(e.code(), in_flag_names(e.what()));
  }
}

}  // namespace

void print_result_header() {
  std::printf("%-44s %-7s %-40s %10s %9s %10s %10s %s\n", "case", "backend", "variant", "time_ms", "TFLOP/s",
              "max_err", "lse_err", "check");
}

void print_result(const testing::Case& c, const testing::CaseResult& r, bool json, bool checked, const char* label) {
  const double flops = 4.0 * c.head_dim * static_cast<double>(r.visible_pairs);
  const double tflops = r.median_ms > 0 ? flops / (r.median_ms * 1e-3) / 1e12 : 0.0;
  const char* check = !checked ? "-" : (r.passed ? "passed" : "FAILED");
  if (json) {
    std::printf(
        "{\"case\": \"%s\", \"backend\": \"%s\", \"variant\": \"%s\", \"num_kv_splits\": %d, \"time_ms\": %.6f, "
        "\"tflops\": %.3f, \"visible_pairs\": %lld, \"max_abs_err\": %.3g, \"frob_rel_err\": %.3g, "
        "\"lse_max_err\": %.3g, \"checked\": %s, \"passed\": %s, \"failure\": \"%s\"}\n",
        c.name().c_str(), backend_name(r.info.backend), r.info.variant.c_str(), r.info.num_kv_splits, r.median_ms,
        tflops, static_cast<long long>(r.visible_pairs), r.max_abs_err, r.frob_rel_err, r.lse_max_err,
        checked ? "true" : "false", checked && r.passed ? "true" : "false", r.failure.c_str());
    return;
  }
  std::printf("%-44s %-7s %-40s %10.4f %9.2f %10.3g %10.3g %s\n", label ? label : c.name().substr(0, 44).c_str(),
              backend_name(r.info.backend), r.info.variant.c_str(), r.median_ms, tflops, r.max_abs_err, r.lse_max_err,
              check);
  if (checked && !r.passed && !r.failure.empty()) std::printf("  failure: %s\n", r.failure.c_str());
}

int cmd_run(Args& a) {
  testing::Case c;
  c.entry = parse_entry(a.str("entry", "single"));
  const bool decode = c.entry == testing::EntryPoint::kDecode;
  const bool paged = decode || c.entry == testing::EntryPoint::kPaged;
  auto conflict = [](const char* x, const char* y) {
    throw Error(ErrorCode::kInvalidArgument, std::string("--") + x + " and --" + y + ": give one, not both");
  };
  if (a.given("qo-lens") && (a.given("batch") || a.given("qo-len"))) conflict("qo-lens", a.given("batch") ? "batch" : "qo-len");
  if (a.given("kv-lens") && (a.given("batch") || a.given("kv-len"))) conflict("kv-lens", a.given("batch") ? "batch" : "kv-len");
  if (decode && (a.given("qo-len") || a.given("qo-lens")))
    throw Error(ErrorCode::kInvalidArgument, "--qo-len/--qo-lens: decode has one query per request");
  if (!paged && (a.given("page-size") || a.given("stacked")))
    throw Error(ErrorCode::kInvalidArgument, "--page-size/--stacked: only for --entry paged or decode");
  const int batch = a.integer("batch", 1);
  if (batch < 1) bad_flag("batch", "got " + std::to_string(batch) + ", allowed: >= 1");
  if (c.entry == testing::EntryPoint::kSingle && batch != 1)
    bad_flag("batch", "got " + std::to_string(batch) + "; --entry single runs one request (use --entry ragged)");
  std::vector<int> qo = a.int_list("qo-lens"), kv = a.int_list("kv-lens");
  const int qo_len = a.integer("qo-len", 1024), kv_len = a.integer("kv-len", qo_len);
  if (qo.empty()) qo.assign(kv.empty() ? batch : kv.size(), decode ? 1 : qo_len);
  if (kv.empty()) kv = a.given("kv-len") || !a.given("qo-lens") ? std::vector<int>(qo.size(), kv_len) : qo;
  if (qo.size() != kv.size())
    throw Error(ErrorCode::kInvalidArgument, "--qo-lens and --kv-lens: lists of different lengths");
  if (c.entry == testing::EntryPoint::kSingle && qo.size() != 1)
    bad_flag(a.given("qo-lens") ? "qo-lens" : "kv-lens", "got " + std::to_string(qo.size()) +
                                                           " lengths; --entry single runs one request");
  if (!decode) check_lengths(a, "qo-len", "qo-lens", qo);
  check_lengths(a, a.given("kv-len") || !a.given("qo-lens") ? "kv-len" : "qo-lens", "kv-lens", kv);
  c.qo_lens = qo;
  c.kv_lens = kv;
  c.num_qo_heads = a.integer("heads", 32);
  c.num_kv_heads = a.integer("kv-heads", c.num_qo_heads);
  c.head_dim = a.integer("head-dim", 128);
  // q's dtype: --dtype, or --q-dtype, which also takes fp8 attention's e4m3.
  if (a.given("dtype") && a.given("q-dtype")) conflict("dtype", "q-dtype");
  const char* q_flag = a.given("q-dtype") ? "--q-dtype" : "--dtype";
  c.dtype = a.given("q-dtype") ? parse_dtype(a.str("q-dtype", ""), "q-dtype", true) : parse_dtype(a.str("dtype", "bf16"));
  c.kv_dtype = parse_kv_dtype(a.str("kv-dtype", "as-q"));
  if (a.given("o-dtype")) c.o_dtype = parse_dtype(a.str("o-dtype", ""), "o-dtype");
  if (a.given("q-scale")) c.q_scale = float_flag(a, "q-scale", "q_scale");
  if (a.given("k-scale")) c.k_scale = float_flag(a, "k-scale", "k_scale");
  if (a.given("v-scale")) c.v_scale = float_flag(a, "v-scale", "v_scale");
  c.scale_tensors = a.flag("scale-tensors");
  c.causal = a.flag("causal");
  c.window_left = a.integer("window", -1);
  c.window_right = a.integer("window-right", -1);
  c.logits_soft_cap = float_flag(a, "soft-cap", "logits_soft_cap");
  c.sinks = a.real_list("sinks");  // one per query head; flashband names a wrong count
  // A random custom mask from --seed: a mask has no short text form, its density does.
  if (a.given("mask-density")) {
    const double p = a.real("mask-density", 0.5);
    if (!(p >= 0.0 && p <= 1.0)) bad_flag("mask-density", "got " + std::to_string(p) + ", allowed: [0, 1]");
    c.mask_density = p;
  }
  // Speculative decoding's verify step: the last qo_len keys are a random draft tree over a
  // prefix every row sees (testing::Case::mask_tree), to time against --causal.
  if (a.flag("mask-tree")) {
    if (c.mask_density) conflict("mask-tree", "mask-density");
    c.mask_density = 1.0;
    c.mask_tree = true;
  }
  if (a.given("sm-scale")) c.sm_scale = float_flag(a, "sm-scale", "sm_scale");
  c.return_lse = !a.flag("no-lse");
  c.layout = parse_layout(a.str("layout", "NHD"));
  c.page_size = a.integer("page-size", 16);
  c.stacked_kv = a.flag("stacked");
  c.backend = parse_backend(a.str("backend", "auto").c_str());
  c.device = device_for(c.backend);
  c.seed = static_cast<uint64_t>(a.integer("seed", 1));
  testing::RunConfig cfg;
  cfg.check = a.flag("check");
  cfg.timed_iters = a.integer("iters", 10);
  const int warmup = a.integer("warmup", 3);
  cfg.warmup_iters = cfg.timed_iters > 0 ? warmup : 0;
  if (cfg.timed_iters < 0 || warmup < 0) throw Error(ErrorCode::kInvalidArgument, "--iters/--warmup: must be >= 0");
  const bool json = a.flag("json");
  a.finish();
  check_case(c, q_flag);  // before run_case allocates anything

  const auto r = testing::run_case(c, cfg);
  if (!json) print_result_header();
  print_result(c, r, json, cfg.check);
  return (cfg.check && !r.passed) ? 1 : 0;
}

}  // namespace flashband::cli
