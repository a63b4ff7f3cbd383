// Custom masks on the cpu backend (SPEC.md "Custom masks"): the mask grid against the fp64
// oracle's own mask on single, ragged and paged prefill, the packed layout read bit by bit,
// rows that see no key, a check that ignoring the mask fails, bad input refused by name, and
// the capability table's columns (cpu and sm80 serve prefill; sm90, cudnn: kernels not
// written yet; decode: none).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "case.h"
#include "case_steps.h"
#include "compare.h"
#include "dispatch/capability_table.h"
#include "dispatch/select.h"
#include "flashband/error.h"
#include "mask_grid.h"

namespace flashband::testing {
namespace {

std::string param_name(const ::testing::TestParamInfo<Case>& info) { return info.param.name(); }

class MaskGrid : public ::testing::TestWithParam<Case> {};

TEST_P(MaskGrid, MatchesOracle) {
  const CaseResult r = run_case(GetParam());
  EXPECT_TRUE(r.passed) << r.failure << " (max_abs_err " << r.max_abs_err << ", lse " << r.lse_max_err << ")";
  EXPECT_TRUE(r.mask_guard_ok);
  EXPECT_TRUE(r.window_guard_ok);
}

INSTANTIATE_TEST_SUITE_P(Cpu, MaskGrid, ::testing::ValuesIn(custom_mask_cases({DType::kF16, DType::kBF16, DType::kF32})),
                         param_name);
// The GPU grid's other lists (tests/gpu/custom_mask_test.cpp), here so that their data and
// guards are known good before a GPU runs them.
INSTANTIATE_TEST_SUITE_P(CpuExtreme, MaskGrid, ::testing::ValuesIn(mask_extreme_cases({DType::kF16, DType::kBF16})),
                         param_name);
INSTANTIATE_TEST_SUITE_P(CpuTreeVerify, MaskGrid, ::testing::ValuesIn(tree_verify_cases({DType::kF16, DType::kBF16})),
                         param_name);
INSTANTIATE_TEST_SUITE_P(CpuSplit, MaskGrid, ::testing::ValuesIn(mask_split_cases({DType::kF16, DType::kBF16})),
                         param_name);

// Mutation check built in: the API's result, judged against the reference without the mask,
// must fail; a backend that ignored the mask would produce exactly that reference.
TEST(CustomMask, IgnoringTheMaskFails) {
  for (const Case& c : custom_mask_cases({DType::kF16})) {
    const std::vector<RequestData> data = make_case_data(c);
    const ApiOutputs api = run_api(c, data);
    std::vector<RequestData> unmasked = data;
    for (RequestData& d : unmasked) d.mask.clear();
    const Reference without = make_reference(c, unmasked, {c.window_left, c.window_right});
    const Comparison cmp = compare_attention(tolerance_for(c.dtype), c.num_qo_heads, c.head_dim, api.out, without.out,
                                             api.lse, without.lse, without.empty);
    EXPECT_FALSE(cmp.passed) << c.name() << ": the masked result passes as the unmasked one";
  }
}

// One request, qo_len 2, kv_len 5, one head, head_dim 4, fp32. The bits are written here by
// hand, not by the test's packer: row 0 sees key 3 only (bit 3 of byte 0), row 1 sees keys 0
// and 4 (bits 5 and 9: byte 0 bit 5, byte 1 bit 1). Row 0's output is then exactly v_3 and
// its LSE the one logit; a big-endian or column-major reading would pick other keys.
TEST(CustomMask, ReadsLittleEndianRowMajorBits) {
  const int D = 4;
  std::vector<float> q = {1, 0, 0, 0, 0, 1, 0, 0};
  std::vector<float> k(5 * D), v(5 * D);
  for (int j = 0; j < 5; ++j)
    for (int d = 0; d < D; ++d) {
      k[j * D + d] = 0.1f * static_cast<float>(j + 1) * static_cast<float>(d + 1);
      v[j * D + d] = static_cast<float>(10 * j + d);
    }
  std::vector<float> out(2 * D, std::nanf("")), lse(2, std::nanf(""));
  std::vector<uint8_t> bits = {0x08 | 0x20, 0x02};
  const TensorView tq = TensorView::contiguous(q.data(), DType::kF32, {2, 1, D});
  const TensorView tk = TensorView::contiguous(k.data(), DType::kF32, {5, 1, D});
  const TensorView tv = TensorView::contiguous(v.data(), DType::kF32, {5, 1, D});
  const TensorView to = TensorView::contiguous(out.data(), DType::kF32, {2, 1, D});
  const TensorView tl = TensorView::contiguous(lse.data(), DType::kF32, {2, 1});
  const TensorView tm = TensorView::contiguous(bits.data(), DType::kU8, {2});
  Options o;
  o.custom_mask = true;
  o.return_lse = true;
  o.backend = Backend::kCPU;
  single_prefill(tq, tk, tv, to, &tl, o, {}, {}, nullptr, &tm);
  for (int d = 0; d < D; ++d) EXPECT_FLOAT_EQ(out[d], static_cast<float>(30 + d));
  const double s03 = 0.5 * (1.0 * k[3 * D]);  // sm_scale 1/sqrt(4)
  EXPECT_NEAR(lse[0], s03 / std::log(2.0), 1e-6);
  // Row 1: softmax over keys 0 and 4 with logits 0.5 * k_j[1].
  const double a = std::exp(0.5 * k[0 * D + 1]), b = std::exp(0.5 * k[4 * D + 1]);
  for (int d = 0; d < D; ++d) EXPECT_NEAR(out[D + d], (a * v[d] + b * v[4 * D + d]) / (a + b), 1e-4);
}

// A mask that hides every key of some rows: exactly 0 and -inf there, or 0 and the sink's
// LSE with sinks; read straight from the outputs, not through the comparison.
TEST(CustomMask, RowWithNoVisibleKeyGivesZero) {
  for (bool sinks : {false, true}) {
    Case c;
    c.entry = EntryPoint::kRagged;
    c.qo_lens = {6, 4};
    c.kv_lens = {20, 3};
    c.num_qo_heads = 2;
    c.head_dim = 64;
    c.mask_density = 0.5;  // row 0 of every request of 3+ rows hides all keys (case.h)
    if (sinks) c.sinks = {1.5f, -2.0f};
    const std::vector<RequestData> data = make_case_data(c);
    const ApiOutputs api = run_api(c, data);
    for (int token : {0, 6}) {  // row 0 of each request
      for (int h = 0; h < 2; ++h) {
        for (int d = 0; d < 64; ++d) EXPECT_EQ(api.out[(token * 2 + h) * 64 + d], 0.0) << token << " " << h;
        const double lse = api.lse[static_cast<std::size_t>(token * 2 + h)];
        if (sinks) EXPECT_NEAR(lse, c.sinks[h] / std::log(2.0), 1e-5);
        else EXPECT_EQ(lse, -std::numeric_limits<double>::infinity());
      }
    }
    const CaseResult r = run_case(c);
    EXPECT_TRUE(r.passed) << r.failure;
  }
}

// Bad masks and bad combinations, refused by name before anything is written.
class CustomMaskBadInput : public ::testing::Test {
 protected:
  std::vector<float> q = std::vector<float>(6 * 2 * 8, 0.1f), k = std::vector<float>(5 * 2 * 8, 0.1f);
  std::vector<float> out = std::vector<float>(6 * 2 * 8, 7.0f);
  std::vector<uint8_t> bytes = std::vector<uint8_t>(16, 0xff);  // 6 * 5 bits: 4 bytes
  TensorView tq = TensorView::contiguous(q.data(), DType::kF32, {6, 2, 8});
  TensorView tk = TensorView::contiguous(k.data(), DType::kF32, {5, 2, 8});
  TensorView to = TensorView::contiguous(out.data(), DType::kF32, {6, 2, 8});

  static Options masked() {
    Options o;
    o.custom_mask = true;
    return o;
  }
  void expect_single(const Options& opts, const TensorView* mask, const std::string& needle) {
    try {
      single_prefill(tq, tk, tk, to, nullptr, opts, {}, {}, nullptr, mask);
      ADD_FAILURE() << "accepted; expected an error naming '" << needle << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
    for (float x : out) ASSERT_EQ(x, 7.0f) << "an output was written despite the error";
  }
};

TEST_F(CustomMaskBadInput, SinglePrefillRefusesByName) {
  const TensorView good = TensorView::contiguous(bytes.data(), DType::kU8, {4});
  const TensorView longer = TensorView::contiguous(bytes.data(), DType::kU8, {5});
  expect_single(masked(), &longer, "custom_mask: dimension 0 of shape [5] is 5, expected 4");
  const TensorView as_int = TensorView::contiguous(bytes.data(), DType::kI32, {4});
  expect_single(masked(), &as_int, "uint8");
  const TensorView two_d = TensorView::contiguous(bytes.data(), DType::kU8, {2, 2});
  expect_single(masked(), &two_d, "custom_mask: got 2 dimensions");
  TensorView strided = good;
  strided.strides[0] = 2;
  expect_single(masked(), &strided, "custom_mask: stride 2");
  const TensorView on_gpu = TensorView::contiguous(bytes.data(), DType::kU8, {4}, Device::kCUDA);
  expect_single(masked(), &on_gpu, "custom_mask: is in CUDA memory");
  expect_single(masked(), nullptr, "custom_mask: the plan was made with custom_mask");
  expect_single(Options{}, &good, "custom_mask: run() got a custom_mask tensor but the plan was made without");
  Options causal = masked();
  causal.causal = true;
  expect_single(causal, &good, "causal: got true with a custom_mask");
  expect_single(causal, &good, "put the causal bits into the mask");
}

// A batch's length is the sum of its padded segments: two requests of 3 x 3 = 9 bits take
// 2 bytes each, 4 in all, where packing the batch as one segment gives ceil(18 / 8) = 3.
TEST_F(CustomMaskBadInput, RaggedRunChecksTheSegmentTotal) {
  const int32_t qo_indptr[] = {0, 3, 6};
  const int32_t kv_indptr[] = {0, 3, 6};
  BatchPrefillRagged batch;
  Options o = masked();
  o.backend = Backend::kCPU;
  batch.plan(qo_indptr, kv_indptr, 2, BatchShape{2, 2, 8, DType::kF32, Device::kCPU, 0}, o, {});
  std::vector<float> kk(6 * 2 * 8, 0.1f), qq(6 * 2 * 8, 0.1f), oo(6 * 2 * 8, 7.0f);
  const TensorView bq = TensorView::contiguous(qq.data(), DType::kF32, {6, 2, 8});
  const TensorView bk = TensorView::contiguous(kk.data(), DType::kF32, {6, 2, 8});
  const TensorView bo = TensorView::contiguous(oo.data(), DType::kF32, {6, 2, 8});
  const TensorView unsegmented = TensorView::contiguous(bytes.data(), DType::kU8, {3});
  RunArgs args;
  args.custom_mask = &unsegmented;
  try {
    batch.run(bq, bk, bk, bo, nullptr, args);
    ADD_FAILURE() << "a mask packed without per-request padding was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("custom_mask: dimension 0 of shape [3] is 3, expected 4"), std::string::npos)
        << e.what();
  }
  for (float x : oo) ASSERT_EQ(x, 7.0f);
  const TensorView segmented = TensorView::contiguous(bytes.data(), DType::kU8, {4});
  args.custom_mask = &segmented;
  batch.run(bq, bk, bk, bo, nullptr, args);
  for (float x : oo) EXPECT_FALSE(std::isnan(x));
}

// The capability table: cpu, sm80 and sm90 serve a custom mask, on prefill (the GPU rows
// declare it unvalidated until their GPU grids run: findings F45); cudnn refuses it naming
// custom_mask and issue 66; decode refuses it everywhere; causal with a mask is refused by
// supports() naming causal, as by plan().
TEST(CustomMask, CapabilityNamesIt) {
  for (const auto& row : dispatch::capability_table()) {
    if (row.status == dispatch::Status::kUnsupported) continue;
    const bool gpu_kernels = row.backend == Backend::kSM80 || row.backend == Backend::kSM90;
    const bool served = (row.backend == Backend::kCPU || gpu_kernels) && row.op != Op::kPagedDecode;
    EXPECT_EQ(row.limits.custom_mask, served) << backend_name(row.backend) << " " << op_name(row.op);
    if (!gpu_kernels || !served) continue;
    ProblemDesc masked;
    masked.op = row.op;
    masked.custom_mask = true;
    EXPECT_EQ(dispatch::status_for(row, masked), dispatch::Status::kDeclared) << backend_name(row.backend);
    EXPECT_NE(dispatch::feature_names(row.unvalidated).find("custom_mask"), std::string::npos);
  }
  const dispatch::MachineInfo h200{1, 90, 91900}, a100{1, 80, 91900};
  for (Op op : {Op::kSinglePrefill, Op::kRaggedPrefill, Op::kPagedPrefill, Op::kPagedDecode}) {
    ProblemDesc p;
    p.op = op;
    p.dtype = DType::kBF16;
    p.device = Device::kCUDA;
    p.head_dim = 128;
    p.page_size = 16;
    p.custom_mask = true;
    for (Backend b : {Backend::kSM80, Backend::kSM90, Backend::kCUDNN}) {
      for (const dispatch::MachineInfo& m : {h200, a100}) {
        const dispatch::Verdict v = dispatch::check_backend(p, b, m, dispatch::registry());
        if (b == Backend::kSM90 && m.arch < 90) {  // no sm90 row for an A100 at all
          EXPECT_FALSE(v.ok);
          continue;
        }
        if (b != Backend::kCUDNN && op != Op::kPagedDecode) {  // served: past the limits
          EXPECT_EQ(v.reason.find("custom_mask"), std::string::npos) << v.reason;
          ASSERT_NE(v.row, nullptr);
          EXPECT_EQ(dispatch::status_for(*v.row, p), dispatch::Status::kDeclared);
          if (v.ok) EXPECT_TRUE(v.kernel->key.custom_mask) << v.kernel->key.to_string();
          continue;
        }
        EXPECT_FALSE(v.ok) << backend_name(b) << " " << op_name(op);
        if (v.row && v.row->status != dispatch::Status::kUnsupported) {  // else refused before the mask
          EXPECT_NE(v.reason.find("does not support custom_mask"), std::string::npos) << v.reason;
          const char* why = op == Op::kPagedDecode ? "paged decode takes no custom mask" : "issue 66";
          EXPECT_NE(v.reason.find(why), std::string::npos) << v.reason;
        }
      }
    }
    p.device = Device::kCPU;
    const SupportAnswer cpu = supports(p, Backend::kCPU);
    EXPECT_EQ(cpu.supported, op != Op::kPagedDecode) << cpu.reason;
    p.causal = true;
    const SupportAnswer causal = supports(p, Backend::kCPU);
    EXPECT_FALSE(causal.supported);
    EXPECT_NE(causal.reason.find("causal: got true with a custom_mask"), std::string::npos) << causal.reason;
  }
}

// plan() refuses a decode with a mask through the table, naming it.
TEST(CustomMask, DecodePlanRefusesIt) {
  const int32_t indptr[] = {0, 1}, indices[] = {0}, last[] = {3};
  PagedIndex pages{indptr, indices, last, 4, 1};
  BatchDecodePaged decode;
  Options o;
  o.custom_mask = true;
  try {
    decode.plan(pages, 1, BatchShape{2, 2, 8, DType::kF32, Device::kCPU, 0}, o, {});
    ADD_FAILURE() << "a decode plan with custom_mask was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("custom_mask"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace flashband::testing
