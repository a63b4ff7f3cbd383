// Attention sinks on the cpu backend (SPEC.md "Attention sinks"): the sink grid against the
// fp64 oracle on every entry point, rows that see no key, extreme sinks, the rule that folds
// a sink into merged partial states once, a check that ignoring sinks fails, and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "case.h"
#include "case_steps.h"
#include "compare.h"
#include "core/state.h"
#include "dispatch/select.h"
#include "flashband/error.h"
#include "sink_grid.h"

namespace flashband::testing {
namespace {

std::string param_name(const ::testing::TestParamInfo<Case>& info) { return info.param.name(); }

class SinkGrid : public ::testing::TestWithParam<Case> {};

TEST_P(SinkGrid, MatchesOracle) {
  const CaseResult r = run_case(GetParam());
  EXPECT_TRUE(r.passed) << r.failure << " (max_abs_err " << r.max_abs_err << ", lse " << r.lse_max_err << ")";
  EXPECT_TRUE(r.sink_guard_ok);
}

std::vector<Case> all_cpu_sink_cases() {
  std::vector<Case> cases = sink_cases({DType::kF16, DType::kBF16, DType::kF32});
  for (const Case& c : sink_split_cases({DType::kF16, DType::kBF16})) cases.push_back(c);
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Cpu, SinkGrid, ::testing::ValuesIn(all_cpu_sink_cases()), param_name);

Case empty_row_case(std::vector<float> sinks) {
  Case c;
  c.entry = EntryPoint::kSingle;
  c.qo_lens = {12};
  c.kv_lens = {5};  // causal: rows 0..6 see no key
  c.causal = true;
  c.num_qo_heads = static_cast<int>(sinks.size());
  c.head_dim = 64;
  c.sinks = std::move(sinks);
  return c;
}

// Rows that see no key: out exactly 0, LSE exactly the sink in base 2 (-inf for a -inf sink),
// read straight from the API's outputs, not through the comparison.
TEST(Sinks, RowWithNoKeyGivesZeroAndTheSinksLse) {
  const float inf = std::numeric_limits<float>::infinity();
  const Case c = empty_row_case({2.5f, -inf, -7.0f});
  const ApiOutputs api = run_api(c, make_case_data(c));
  for (int row = 0; row < 7; ++row) {
    for (int h = 0; h < 3; ++h) {
      for (int d = 0; d < c.head_dim; ++d) EXPECT_EQ(api.out[(row * 3 + h) * 64 + d], 0.0) << row << " " << h;
      const double lse = api.lse[static_cast<std::size_t>(row * 3 + h)];
      if (h == 1) EXPECT_EQ(lse, -std::numeric_limits<double>::infinity());
      else EXPECT_NEAR(lse, c.sinks[h] / std::log(2.0), 1e-5);
    }
  }
  EXPECT_TRUE(run_case(c).passed) << run_case(c).failure;
}

// Sinks far above and below every logit: no overflow, no NaN; a dominant sink drives the
// output to 0 and the LSE to the sink's.
TEST(Sinks, ExtremeSinksStayFinite) {
  Case c = empty_row_case({200.0f, -200.0f, 80.0f, -1.0e30f});
  c.kv_lens = {40};
  c.qo_lens = {12};
  const CaseResult r = run_case(c);
  EXPECT_TRUE(r.passed) << r.failure;
  const ApiOutputs api = run_api(c, make_case_data(c));
  for (double x : api.out) EXPECT_FALSE(std::isnan(x));
  for (double x : api.lse) EXPECT_TRUE(std::isfinite(x));
  EXPECT_NEAR(api.lse[0], 200.0 / std::log(2.0), 1e-3);
}

// Mutation check built in: the API's result, judged against the reference without sinks,
// must fail; a backend that ignored sinks would produce exactly that reference.
TEST(Sinks, IgnoringSinksFails) {
  for (const Case& c : sink_cases({DType::kF16})) {
    const std::vector<RequestData> data = make_case_data(c);
    const ApiOutputs api = run_api(c, data);
    Case plain = c;
    plain.sinks.clear();
    const Reference without = make_reference(plain, data, {c.window_left, c.window_right});
    const Comparison cmp = compare_attention(tolerance_for(c.dtype), c.num_qo_heads, c.head_dim, api.out, without.out,
                                             api.lse, without.lse, without.empty);
    EXPECT_FALSE(cmp.passed) << c.name() << ": the result with sinks passes as the one without";
  }
}

// The merge rule: two partial states merged (split-KV) and then the sink folded in once
// equal one pass over all keys with the sink; folding per split would count it twice.
TEST(Sinks, FoldedOnceAfterTheMerge) {
  const float sink2 = 3.0f * core::kLog2e;
  // Row logits (base 2) of two splits; the one-pass state sees them all.
  const float a[] = {0.5f, 1.5f, -2.0f}, b[] = {2.5f, 0.0f};
  core::SoftmaxState sa, sb, all;
  auto add = [](core::SoftmaxState& s, float x) {
    s.rescale_to(x);
    s.add(s.weight(x));
  };
  for (float x : a) add(sa, x), add(all, x);
  for (float x : b) add(sb, x), add(all, x);
  // Exact softmax of the five logits and the sink: key 0's weight and the LSE.
  double den = std::exp2(static_cast<double>(sink2));
  for (float x : a) den += std::exp2(static_cast<double>(x));
  for (float x : b) den += std::exp2(static_cast<double>(x));
  const double want_w0 = std::exp2(0.5) / den, want_lse = std::log2(den);

  float scale = all.output_scale(), lse = all.lse();
  core::fold_sink(sink2, scale, lse);
  EXPECT_NEAR(lse, want_lse, 1e-5);
  EXPECT_NEAR(scale * all.weight(0.5f), want_w0, 1e-6);

  // Split-KV: merge the normalised partials, then fold the sink once.
  const core::MergeWeights m = core::merge_weights(sa.lse(), sb.lse());
  float keep = 1.0f, merged_lse = m.lse;
  core::fold_sink(sink2, keep, merged_lse);
  EXPECT_NEAR(merged_lse, want_lse, 1e-5);
  EXPECT_NEAR(keep * m.w_a * sa.output_scale() * sa.weight(0.5f), want_w0, 1e-6);

  // Folding it into each split before the merge counts it twice, which the test must see.
  float ka = 1.0f, la = sa.lse(), kb = 1.0f, lb = sb.lse();
  core::fold_sink(sink2, ka, la);
  core::fold_sink(sink2, kb, lb);
  EXPECT_GT(std::fabs(core::merge_weights(la, lb).lse - want_lse), 0.1);

  // No sink: nothing changes, exactly; no key and no sink: 0 and -inf; no key: the sink.
  float s1 = all.output_scale(), l1 = all.lse();
  core::fold_sink(core::neg_inf(), s1, l1);
  EXPECT_EQ(s1, all.output_scale());
  EXPECT_EQ(l1, all.lse());
  float s2 = 0.0f, l2 = core::neg_inf();
  core::fold_sink(core::neg_inf(), s2, l2);
  EXPECT_EQ(s2, 0.0f);
  EXPECT_EQ(l2, core::neg_inf());
  core::fold_sink(sink2, s2, l2);
  EXPECT_EQ(s2, 0.0f);
  EXPECT_EQ(l2, sink2);
}

// Bad sinks, refused by name before anything is written.
TEST(Sinks, BadInputIsRefusedByName) {
  Case c = empty_row_case({1.0f, 2.0f});
  const std::vector<RequestData> data = make_case_data(c);
  std::vector<float> host(3, 0.0f);
  std::vector<int32_t> wrong_dtype(2, 0);
  std::vector<float> q(12 * 2 * 64, 0.1f), k(5 * 2 * 64, 0.1f), out(12 * 2 * 64, 7.0f);
  const TensorView tq = TensorView::contiguous(q.data(), DType::kF32, {12, 2, 64});
  const TensorView tk = TensorView::contiguous(k.data(), DType::kF32, {5, 2, 64});
  const TensorView to = TensorView::contiguous(out.data(), DType::kF32, {12, 2, 64});
  Options o;
  o.sinks = true;
  auto expect = [&](const Options& opts, const TensorView* s, const std::string& needle) {
    try {
      single_prefill(tq, tk, tk, to, nullptr, opts, {}, {}, s);
      ADD_FAILURE() << "accepted; expected an error naming '" << needle << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
    for (float x : out) ASSERT_EQ(x, 7.0f) << "an output was written despite the error";
  };
  const TensorView three = TensorView::contiguous(host.data(), DType::kF32, {3});
  expect(o, &three, "sinks");
  expect(o, &three, "num_qo_heads");
  const TensorView f64 = TensorView::contiguous(wrong_dtype.data(), DType::kI32, {2});
  expect(o, &f64, "float32");
  const TensorView two_d = TensorView::contiguous(host.data(), DType::kF32, {1, 2});
  expect(o, &two_d, "[num_qo_heads]");
  TensorView strided = TensorView::contiguous(host.data(), DType::kF32, {2});
  strided.strides[0] = 2;
  expect(o, &strided, "stride");
  TensorView on_gpu = TensorView::contiguous(host.data(), DType::kF32, {2}, Device::kCUDA);
  expect(o, &on_gpu, "CUDA memory");
  expect(o, nullptr, "run() got none");
  const TensorView good = TensorView::contiguous(host.data(), DType::kF32, {2});
  expect(Options{}, &good, "plan was made without sinks");
}

// Every backend claims sinks, cudnn on prefill only (its decode mode takes no sink token) and
// only on a cuDNN with one (9.13 on), refusing an older one by name rather than building a
// graph without the sink.
TEST(Sinks, CapabilityNamesThem) {
  ProblemDesc p;
  p.op = Op::kRaggedPrefill;
  p.dtype = DType::kBF16;
  p.device = Device::kCUDA;
  p.head_dim = 128;
  p.sinks = true;
  for (const auto& row : dispatch::capability_table()) {
    if (row.status == dispatch::Status::kUnsupported) continue;
    const bool cudnn_decode = row.backend == Backend::kCUDNN && row.op == Op::kPagedDecode;
    EXPECT_EQ(row.limits.sinks, !cudnn_decode) << backend_name(row.backend) << " " << op_name(row.op);
  }
  const dispatch::MachineInfo old_cudnn{1, 90, 91201};
  const dispatch::Verdict v = dispatch::check_backend(p, Backend::kCUDNN, old_cudnn, dispatch::registry());
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.reason.find("sinks"), std::string::npos) << v.reason;
  EXPECT_NE(v.reason.find("9.13"), std::string::npos) << v.reason;
  // From 9.13 on the version no longer stands in the way (the build may still lack kernels).
  const dispatch::MachineInfo h200{1, 90, 91900};
  const dispatch::Verdict w = dispatch::check_backend(p, Backend::kCUDNN, h200, dispatch::registry());
  EXPECT_EQ(w.reason.find("9.13"), std::string::npos) << w.reason;
  p.sinks = false;
  EXPECT_EQ(dispatch::check_backend(p, Backend::kCUDNN, old_cudnn, dispatch::registry()).reason.find("9.13"),
            std::string::npos);
}

}  // namespace
}  // namespace flashband::testing
