// batch_workspace_bytes / batch_plan_bytes refuse negative counts and sizes whose byte
// count would overflow, on every device, naming the argument (issue 63).
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>

#include "expect_refused.h"
#include "flashband/attention.h"

namespace flashband {
namespace {

void expect_refused(const std::function<void()>& call, const std::string& needle) {
  testing::expect_invalid_argument(call, needle);
}

TEST(SizeArgs, NegativeCountsAreRefusedByName) {
  for (Device dev : {Device::kCPU, Device::kCUDA}) {
    expect_refused([&] { batch_workspace_bytes(-5, 16, 8, 128, dev); }, "max_batch: got -5");
    expect_refused([&] { batch_workspace_bytes(4, -1, 8, 128, dev); }, "max_qo_tokens: got -1");
    expect_refused([&] { batch_workspace_bytes(4, 16, -4, 128, dev); }, "num_qo_heads: got -4");
    expect_refused([&] { batch_workspace_bytes(4, 16, 8, -128, dev); }, "head_dim: got -128");
    expect_refused([&] { batch_workspace_bytes(4, 16, 8, 128, dev, -3); }, "max_page_indices: got -3");
    expect_refused([&] { batch_plan_bytes(-5, 16, 8, 128, dev); }, "max_batch: got -5");
    expect_refused([&] { batch_plan_bytes(4, 16, -4, 128, dev); }, "num_qo_heads: got -4");
    expect_refused([&] { batch_plan_bytes(4, 16, 8, 128, dev, 10, -2); }, "max_request_pages: got -2");
  }
}

TEST(SizeArgs, OverflowingSizesAreRefused) {
  for (Device dev : {Device::kCPU, Device::kCUDA}) {
    expect_refused([&] { batch_workspace_bytes(1, int64_t{1} << 40, 1 << 24, 128, dev); }, "max_qo_tokens x num_qo_heads");
    expect_refused([&] { batch_plan_bytes(1, int64_t{1} << 40, 1 << 24, 128, dev); }, "max_qo_tokens x num_qo_heads");
    expect_refused([&] { batch_workspace_bytes(1 << 30, 1, 1, 128, dev, int64_t{1} << 40); }, "max_batch x max_page_indices");
    // Counts near INT64_MAX: the sums inside the check must not overflow first (UBSan, fuzz).
    constexpr int64_t kHuge = INT64_MAX;
    expect_refused([&] { batch_workspace_bytes(51, kHuge, 1, 128, dev); }, "max_qo_tokens x num_qo_heads");
    expect_refused([&] { batch_plan_bytes(1, kHuge, 1, 128, dev); }, "max_qo_tokens x num_qo_heads");
    expect_refused([&] { batch_workspace_bytes(1, 1, 1, 128, dev, kHuge); }, "max_batch x max_page_indices");
    expect_refused([&] { batch_plan_bytes(1, 1, 1, 128, dev, kHuge, kHuge); }, "max_batch x max_page_indices");
  }
}

TEST(SizeArgs, ValidSizesGrowWithTheProblem) {
  // Accepted sizes keep their order: more tokens never need fewer bytes (the overflow the
  // checks prevent made 2^40 tokens x 2^24 heads smaller than 2^20 tokens).
  for (Device dev : {Device::kCPU, Device::kCUDA}) {
    const std::size_t small = batch_workspace_bytes(8, int64_t{1} << 20, 32, 128, dev, 1 << 16);
    const std::size_t large = batch_workspace_bytes(8, int64_t{1} << 30, 1 << 10, 128, dev, 1 << 16);
    EXPECT_LE(small, large);
    EXPECT_LE(batch_plan_bytes(8, int64_t{1} << 20, 32, 128, dev), batch_plan_bytes(8, int64_t{1} << 30, 1 << 10, 128, dev));
    EXPECT_EQ(batch_workspace_bytes(0, 0, 0, 0, dev), batch_workspace_bytes(0, 0, 0, 0, dev));
  }
  EXPECT_EQ(batch_workspace_bytes(8, 1024, 32, 128, Device::kCPU), 0u);
}

}  // namespace
}  // namespace flashband
