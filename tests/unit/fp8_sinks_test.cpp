// fp8 K/V with attention sinks on the cpu backend, against the fp64 oracle: the two compose
// (SPEC.md): the sink is compared with the scaled logits (sm_scale * k_scale * q.k8), and
// v_scale scales the values only (a sink adds no value). Checks that dropping k_scale,
// v_scale or the sinks, or comparing the sink with unscaled logits, fails.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "case.h"
#include "fp8_grid.h"
#include "sink_grid.h"

namespace flashband::testing {
namespace {

// The sink grid with fp8 caches: e4m3 / e5m2 alternating, scales 0.37 and 3.1 as floats or
// as one-element tensors.
std::vector<Case> fp8_sink_cases() {
  std::vector<Case> cases = sink_cases({DType::kF16, DType::kBF16});
  for (std::size_t i = 0; i < cases.size(); ++i) {
    Case& c = cases[i];
    c.kv_dtype = i % 2 ? DType::kE5M2 : DType::kE4M3;
    c.k_scale = 0.37f;
    c.v_scale = 3.1f;
    c.scale_tensors = (i / 2) % 2 == 1;
  }
  return cases;
}

class CpuFp8Sinks : public ::testing::TestWithParam<Case> {};

TEST_P(CpuFp8Sinks, MatchesOracle) {
  const CaseResult r = run_case(GetParam());
  EXPECT_TRUE(r.passed) << r.failure << " (max_abs_err " << r.max_abs_err << ", lse " << r.lse_max_err << ")";
  EXPECT_TRUE(r.sink_guard_ok);
}

INSTANTIATE_TEST_SUITE_P(Grid, CpuFp8Sinks, ::testing::ValuesIn(fp8_sink_cases()),
                         [](const ::testing::TestParamInfo<Case>& p) { return p.param.name(); });

// Each of the four inputs matters: a result that also passes as the one without it (or with
// the sink taken in the unscaled-logit domain) would hide a backend that dropped it.
TEST(CpuFp8Sinks, NeitherIsDropped) {
  for (EntryPoint e : {EntryPoint::kSingle, EntryPoint::kRagged, EntryPoint::kPaged, EntryPoint::kDecode})
    for (DType kv : {DType::kE4M3, DType::kE5M2})
      for (bool tensors : {false, true}) {
        Case c = fp8_scaled_case(e, kv, tensors);
        c.sinks = sink_values(c.num_qo_heads, 1);
        std::vector<std::pair<std::string, Case>> judged;
        for (auto [what, k, v] : {std::tuple{"k_scale", 1.0f, c.v_scale}, std::tuple{"v_scale", c.k_scale, 1.0f}}) {
          Case j = c;
          j.k_scale = k;
          j.v_scale = v;
          judged.emplace_back(std::string("without ") + what, j);
        }
        Case no_sinks = c;
        no_sinks.sinks.clear();
        judged.emplace_back("without sinks", no_sinks);
        Case unscaled = c;  // the sink beside unscaled logits: exp(sink) against exp(s / k_scale)
        for (float& s : unscaled.sinks) s = static_cast<float>(s * c.k_scale);
        judged.emplace_back("sinks in the unscaled-logit domain", unscaled);
        Case v_on_sink = c;  // v_scale also dividing the sink's weight
        for (float& s : v_on_sink.sinks) s = static_cast<float>(s - std::log(c.v_scale));
        judged.emplace_back("v_scale on the sink", v_on_sink);
        for (const auto& [what, j] : judged) {
          const ScaleJudgement r = judge_as(c, j);
          EXPECT_TRUE(r.passes_own) << c.name() << ": " << r.own_failure;
          EXPECT_FALSE(r.passes_judged) << c.name() << " also passes judged " << what;
        }
      }
}

}  // namespace
}  // namespace flashband::testing
