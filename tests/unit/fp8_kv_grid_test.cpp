// fp8 K/V on the cpu backend, judged by the fp64 oracle (which dequantizes exactly): the
// grid of tests/common/fp8_grid.h, and tests that each scale is applied, not ignored.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>

#include "case.h"
#include "fp8_grid.h"

namespace flashband::testing {
namespace {

std::vector<Case> cpu_fp8_cases() { return fp8_grid_cases({64, 128}); }

class CpuFp8Grid : public ::testing::TestWithParam<Case> {};

TEST_P(CpuFp8Grid, MatchesOracle) {
  const Case& c = GetParam();
  const CaseResult r = run_case(c);
  EXPECT_TRUE(r.passed) << r.failure << "\n  max_abs_err " << r.max_abs_err << ", frob " << r.frob_rel_err
                        << ", lse " << r.lse_max_err;
  EXPECT_EQ(r.info.backend, Backend::kCPU);
  EXPECT_NE(r.info.variant.find(c.kv_dtype == DType::kE4M3 ? "+kv_e4m3" : "+kv_e5m2"), std::string::npos)
      << r.info.variant;
}

INSTANTIATE_TEST_SUITE_P(Cases, CpuFp8Grid, ::testing::ValuesIn(cpu_fp8_cases()),
                         [](const ::testing::TestParamInfo<Case>& p) { return p.param.name(); });

TEST(CpuFp8GridCoverage, EveryAxisValue) {
  std::set<std::string> have;
  for (const Case& c : cpu_fp8_cases()) {
    const bool paged = c.entry == EntryPoint::kPaged || c.entry == EntryPoint::kDecode;
    const std::string e = entry_point_name(c.entry);
    have.insert(e + " " + dtype_name(*c.kv_dtype) + " q " + dtype_name(c.dtype) + (c.causal ? " causal " : " full ") +
                std::to_string(c.window_left) + (c.logits_soft_cap > 0 ? " cap" : " nocap"));
    if (paged) have.insert(e + " page " + std::to_string(c.page_size));
    for (float s : {c.k_scale, c.v_scale}) have.insert(e + " scale " + std::to_string(s));
    if (c.scale_tensors) have.insert(e + " scale tensors");
    have.insert(std::string("layout ") + kv_layout_name(c.layout));
  }
  std::vector<std::string> want = {"layout NHD", "layout HND"};
  for (const char* e : {"single", "ragged", "paged", "decode"}) {
    for (const char* kv : {"float8_e4m3fn", "float8_e5m2"})
      for (const char* q : {"float16", "bfloat16"})
        for (const char* m : {" causal ", " full "})
          for (int w : {-1, 0, 31, 127})
            for (const char* cap : {" cap", " nocap"})
              want.push_back(e + std::string(" ") + kv + " q " + q + m + std::to_string(w) + cap);
    for (float s : {1.0f, 0.37f, 3.1f}) want.push_back(e + std::string(" scale ") + std::to_string(s));
    want.push_back(e + std::string(" scale tensors"));
  }
  for (const char* e : {"paged", "decode"})
    for (int ps : {1, 5, 16, 128}) want.push_back(e + std::string(" page ") + std::to_string(ps));
  for (const std::string& s : want) EXPECT_TRUE(have.count(s)) << "grid lacks " << s;
}

TEST(CpuFp8Scales, EachScaleIsApplied) {
  for (EntryPoint e : {EntryPoint::kSingle, EntryPoint::kRagged, EntryPoint::kPaged, EntryPoint::kDecode})
    for (DType kv : {DType::kE4M3, DType::kE5M2})
      for (bool tensors : {false, true}) {
        const Case c = fp8_scaled_case(e, kv, tensors);
        // Judged as if k_scale, or v_scale, were ignored, or the two swapped.
        for (auto [k, v] : {std::pair{1.0f, c.v_scale}, std::pair{c.k_scale, 1.0f}, std::pair{c.v_scale, c.k_scale}}) {
          const ScaleJudgement j = judge_with_scales(c, k, v);
          EXPECT_TRUE(j.passes_own) << c.name() << ": " << j.own_failure;
          EXPECT_FALSE(j.passes_judged) << c.name() << " also passes judged with k_scale " << k << ", v_scale " << v;
        }
      }
}

}  // namespace
}  // namespace flashband::testing
