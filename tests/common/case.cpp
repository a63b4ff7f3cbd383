// run_case (case.h): build, run through the public API, judge against the fp64 oracle.
#include "case.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>

#include "case_steps.h"
#include "compare.h"
#include "oracle.h"

namespace flashband::testing {

const char* entry_point_name(EntryPoint e) {
  switch (e) {
    case EntryPoint::kSingle: return "single";
    case EntryPoint::kRagged: return "ragged";
    case EntryPoint::kPaged: return "paged";
    case EntryPoint::kDecode: return "decode";
  }
  return "unknown";
}

namespace {
// A float as a name fragment: 0.125 -> "0p125" (test names allow [A-Za-z0-9_] only).
std::string number_token(float x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", static_cast<double>(x));
  std::string s(buf);
  for (char& ch : s) {
    if (ch == '.') ch = 'p';
    if (ch == '-') ch = 'm';
    if (ch == '+') ch = 'x';
  }
  return s;
}

std::string lens_token(const std::vector<int>& lens) {
  // Long batches are named by count, sum and maximum, which keeps test names readable.
  if (lens.size() > 8) {
    long long sum = 0;
    int max = 0;
    for (int l : lens) {
      sum += l;
      max = std::max(max, l);
    }
    return std::to_string(lens.size()) + "req_sum" + std::to_string(sum) + "_max" + std::to_string(max);
  }
  std::string s;
  for (std::size_t i = 0; i < lens.size(); ++i) s += (i ? "_" : "") + std::to_string(lens[i]);
  return s.empty() ? "none" : s;
}
}  // namespace

std::string Case::name() const {
  std::ostringstream s;
  s << entry_point_name(entry) << '_' << dtype_name(dtype) << "_d" << head_dim << "_h" << num_qo_heads << 'x'
    << num_kv_heads;
  if (kv_dtype) s << "_kv" << dtype_name(*kv_dtype);
  if (o_dtype) s << "_o" << dtype_name(*o_dtype);
  if (q_scale != 1.0f) s << "_qs" << number_token(q_scale);
  if (outliers) s << "_outliers";
  if (k_scale != 1.0f) s << "_ks" << number_token(k_scale);
  if (v_scale != 1.0f) s << "_vs" << number_token(v_scale);
  if (scale_tensors) s << "_scaletensor";
  if (entry != EntryPoint::kDecode) s << "_q" << lens_token(qo_lens);
  s << "_k" << lens_token(kv_lens);
  s << (causal ? "_causal" : "_full");
  if (window_left >= 0) s << "_w" << window_left;
  if (window_right >= 0) s << "_wr" << window_right;
  if (logits_soft_cap > 0.0f) s << "_cap" << number_token(logits_soft_cap);
  if (sm_scale) s << "_scale" << number_token(*sm_scale);
  if (!sinks.empty()) s << "_sinks" << number_token(*std::max_element(sinks.begin(), sinks.end()));
  if (mask_density) s << "_mask" << (mask_tree ? std::string("tree") : number_token(static_cast<float>(*mask_density)));
  if (!return_lse) s << "_nolse";
  if (out_token_pad) s << "_opad" << out_token_pad;
  if (far_kv) s << "_far";
  s << '_' << kv_layout_name(layout);
  if (entry == EntryPoint::kPaged || entry == EntryPoint::kDecode) {
    s << "_ps" << page_size;
    if (stacked_kv) s << "_stacked";
  }
  s << '_' << backend_name(backend);
  if (device != Device::kCPU) s << "_gpu";
  if (seed != 1) s << "_seed" << seed;
  std::string out = s.str();
  for (char& ch : out)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return out;
}

namespace {

// Whether the reference differs from the one computed without `feature` by more than 0.1 in
// an output or an LSE; if not, says so in *failure (when still empty): such a case could not
// show that a backend applies the feature.
bool differs_without(const Reference& ref, const Reference& without, const char* feature, std::string* failure) {
  double diff = max_abs_diff(ref.out, without.out);
  for (std::size_t i = 0; i < ref.lse.size(); ++i)  // rows that see nothing in both: -inf both
    if (ref.lse[i] != without.lse[i]) diff = std::max(diff, std::fabs(ref.lse[i] - without.lse[i]));
  if (diff > 0.1) return true;
  if (failure->empty())
    *failure = std::string("guard: the references with and without ") + feature + " differ by at most " +
               std::to_string(diff) + " (<= 0.1), so this case cannot show that it is applied";
  return false;
}

}  // namespace

CaseResult run_case(const Case& c, const RunConfig& cfg) {
  const std::vector<RequestData> data = make_case_data(c);
  const ApiOutputs api = run_api(c, data, cfg);
  CaseResult r;
  r.info = api.info;
  r.median_ms = api.median_ms;
  if (!cfg.check) {
    const std::vector<int> qo = case_qo_lens(c);
    for (std::size_t b = 0; b < data.size(); ++b)
      r.visible_pairs +=
          oracle_visible_pairs(qo[b], c.kv_lens[b], c.causal, c.window_left, c.window_right) * c.num_qo_heads;
    return r;
  }

  const Window window{c.window_left, c.window_right};
  const Reference ref = make_reference(c, data, window);
  r.visible_pairs = ref.visible_pairs;
  const Comparison cmp = judge_case(c, c, data, api);
  r.max_abs_err = cmp.max_abs_err;
  r.frob_rel_err = cmp.frob_rel_err;
  r.lse_max_err = cmp.lse_max_err;
  r.failure = cmp.failure;
  if (!api.padding_untouched) {
    r.failure = "the backend wrote into the output's padding between tokens (out_token_pad)";
    r.passed = false;
    return r;
  }

  // SPEC.md: a window test must first show that its window matters, or a backend that
  // ignores the window would pass it; each side separately, the other kept.
  const struct {
    const char* side;
    Window without;
  } guards[] = {{"window_left", {-1, c.window_right}}, {"window_right", {c.window_left, -1}}};
  for (const auto& g : guards) {
    if (!window_changes_visibility(c, window, g.without)) continue;
    const Reference unwindowed = make_reference(c, data, g.without);
    const double diff = max_abs_diff(ref.out, unwindowed.out);
    if (diff > 0.1) continue;
    r.window_guard_ok = false;
    if (r.failure.empty()) {
      std::ostringstream s;
      s << "window guard: the references with and without " << g.side << " differ by at most " << diff
        << " (<= 0.1), so this case cannot show that " << g.side << " is applied";
      r.failure = s.str();
    }
  }
  // Likewise sinks: where one can matter (a sink above 0), the references with and without
  // them must differ, so a backend that ignores sinks cannot pass.
  if (!c.sinks.empty() && *std::max_element(c.sinks.begin(), c.sinks.end()) > 0.0f) {
    Case plain = c;
    plain.sinks.clear();
    r.sink_guard_ok = differs_without(ref, make_reference(plain, data, window), "sinks", &r.failure);
  }
  // And a custom mask: a backend that ignores it must fail.
  if (c.mask_density) {
    std::vector<RequestData> unmasked = data;
    for (RequestData& d : unmasked) d.mask.clear();
    r.mask_guard_ok = differs_without(ref, make_reference(c, unmasked, window), "the custom mask", &r.failure);
  }
  r.passed = cmp.passed && r.window_guard_ok && r.sink_guard_ok && r.mask_guard_ok;
  return r;
}

}  // namespace flashband::testing
