// fp8 attention (SPEC.md "fp8 attention") on the cpu backend: the grid at the stated bound
// (Frobenius <= 3e-2 against the exact fp64 oracle, max error <= 2x the fp8-emulating
// reference's + the output dtype's atol), that the cpu quantizes P as specified (it sits far
// closer to the emulating reference than to the exact one), and that the bound catches a
// wrong q_scale and an ignored mask.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "case.h"
#include "case_steps.h"
#include "compare.h"
#include "fp8_grid.h"

namespace flashband::testing {
namespace {

struct Scales {
  float q, k, v;
};

Case fp8_case(EntryPoint e, bool causal, int window, DType out, int i) {
  static const Scales kScales[] = {{1.0f, 1.0f, 1.0f}, {0.37f, 3.1f, 0.5f}, {2.0f, 0.25f, 4.0f}};
  static const int kHeads[][2] = {{4, 4}, {4, 2}, {8, 1}};
  Case c;
  c.entry = e;
  c.dtype = DType::kE4M3;
  c.o_dtype = out;
  const Scales& s = kScales[i % 3];
  c.q_scale = s.q;
  c.k_scale = s.k;
  c.v_scale = s.v;
  c.scale_tensors = i % 4 == 3;
  c.outliers = i % 2 == 1;
  c.num_qo_heads = kHeads[i % 3][0];
  c.num_kv_heads = kHeads[i % 3][1];
  c.head_dim = i % 2 ? 128 : 64;
  c.causal = causal;
  c.window_left = window;
  c.layout = i % 5 == 2 ? KVLayout::kHND : KVLayout::kNHD;
  c.page_size = i % 3 == 0 ? 1 : 16;
  if (e == EntryPoint::kSingle) {
    c.qo_lens = {70};
    c.kv_lens = {150};
  } else {
    c.qo_lens = {37, 1, 60};
    c.kv_lens = {120, 0, 150};
  }
  c.seed = 60 + i;
  return c;
}

std::vector<Case> grid() {
  std::vector<Case> cases;
  int i = 0;
  for (EntryPoint e : {EntryPoint::kSingle, EntryPoint::kRagged, EntryPoint::kPaged, EntryPoint::kDecode})
    for (bool causal : {false, true})
      for (int window : {-1, 31})
        for (DType out : {DType::kF16, DType::kBF16}) cases.push_back(fp8_case(e, causal, window, out, i++));
  // What composes beside the window and causal axes: soft cap, a two-sided band, sinks and a
  // custom mask, each once on a prefill entry point.
  Case cap = fp8_case(EntryPoint::kRagged, false, -1, DType::kBF16, i++);
  cap.logits_soft_cap = 2.0f;
  Case band = fp8_case(EntryPoint::kPaged, false, 20, DType::kF16, i++);
  band.window_right = 5;
  Case sinks = fp8_case(EntryPoint::kSingle, true, -1, DType::kBF16, i++);
  sinks.sinks = std::vector<float>(static_cast<std::size_t>(sinks.num_qo_heads), 5.0f);
  Case mask = fp8_case(EntryPoint::kRagged, false, -1, DType::kF16, i++);
  mask.mask_density = 0.5;
  for (const Case& c : {cap, band, sinks, mask}) cases.push_back(c);
  return cases;
}

class CpuFp8AttentionGrid : public ::testing::TestWithParam<Case> {};

TEST_P(CpuFp8AttentionGrid, WithinTheFp8Bound) {
  const Case& c = GetParam();
  const CaseResult r = run_case(c);
  EXPECT_TRUE(r.passed) << r.failure << "\n  max_abs_err " << r.max_abs_err << ", frob " << r.frob_rel_err
                        << ", lse " << r.lse_max_err;
  EXPECT_LE(r.frob_rel_err, kFp8AttentionFrob);
  RecordProperty("frob_rel_err", std::to_string(r.frob_rel_err));
  EXPECT_EQ(r.info.backend, Backend::kCPU);
  EXPECT_NE(r.info.variant.find("e4m3"), std::string::npos) << r.info.variant;
}

INSTANTIATE_TEST_SUITE_P(Cases, CpuFp8AttentionGrid, ::testing::ValuesIn(grid()),
                         [](const ::testing::TestParamInfo<Case>& p) { return p.param.name(); });

// The cpu backend is the reference for the GPU kernels: it must quantize P as SPEC.md says,
// so its output is far nearer the fp8-emulating oracle than the exact one (the bound alone
// would also pass an unquantized P).
TEST(CpuFp8Attention, QuantizesPAsSpecified) {
  for (bool outliers : {false, true}) {
    Case c = fp8_case(EntryPoint::kRagged, true, -1, DType::kBF16, 1);
    c.outliers = outliers;
    c.o_dtype = DType::kF16;  // the finer output, so the output's rounding hides less
    const std::vector<RequestData> data = make_case_data(c);
    const ApiOutputs api = run_api(c, data);
    const Window w{c.window_left, c.window_right};
    const Reference exact = make_reference(c, data, w), emulated = make_reference(c, data, w, true);
    const double quantization = max_abs_diff(emulated.out, exact.out);
    const double to_emulated = max_abs_diff(api.out, emulated.out);
    EXPECT_GT(quantization, 1e-3) << "P's quantization must be visible for this test to mean anything";
    EXPECT_LT(to_emulated, 0.25 * quantization) << "outliers " << outliers << ": cpu " << to_emulated
                                                << " from the emulating reference, which is " << quantization
                                                << " from the exact one";
  }
}

// The bound would catch a kernel that reads q_scale wrong or ignores a mask.
TEST(CpuFp8Attention, BoundCatchesAWrongQScale) {
  Case c = fp8_case(EntryPoint::kPaged, false, -1, DType::kBF16, 1);
  Case judged = c;
  judged.q_scale = c.q_scale * 1.25f;
  const ScaleJudgement j = judge_as(c, judged);
  EXPECT_TRUE(j.passes_own) << j.own_failure;
  EXPECT_FALSE(j.passes_judged) << "q_scale x1.25 passed the fp8 bound";
}

TEST(CpuFp8Attention, BoundCatchesAnIgnoredMask) {
  for (int window : {-1, 31}) {
    Case c = fp8_case(EntryPoint::kRagged, /*causal=*/window < 0, window, DType::kBF16, 2);
    Case judged = c;
    judged.causal = false;
    judged.window_left = -1;
    const ScaleJudgement j = judge_as(c, judged);
    EXPECT_TRUE(j.passes_own) << j.own_failure;
    EXPECT_FALSE(j.passes_judged) << "a reference without the mask passed (window " << window << ")";
  }
}

}  // namespace
}  // namespace flashband::testing
