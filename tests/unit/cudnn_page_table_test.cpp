// The cudnn backend's dense page table: slots past a request's pages must name one of its own
// pages, never page 0 (the far_kv GPU tests, whose unnamed pages hold NaN, found cuDNN
// reading them). Host-only.
#include <gtest/gtest.h>

#include "flashband/config.h"

#if FLASHBAND_WITH_CUDNN

#include <cstdint>
#include <vector>

#include "backends/cudnn/page_table.h"
#include "flashband/error.h"

namespace flashband::cudnn_backend {
namespace {

TEST(CudnnPageTable, PadsEachRowWithItsOwnLastPage) {
  // Requests of 2, 0 and 3 pages; no request uses page 0.
  const std::vector<int32_t> indptr = {0, 2, 2, 5};
  const std::vector<int32_t> indices = {7, 4, 9, 3, 8};
  std::vector<int32_t> table(3 * 4, -1);
  fill_page_table(indptr, indices, 3, 4, table.data());
  const std::vector<int32_t> want = {7, 4, 4, 4,   // its pages, then its last page
                                     7, 7, 7, 7,   // empty: the batch's first named page
                                     9, 3, 8, 8};
  EXPECT_EQ(table, want);
}

TEST(CudnnPageTable, FullRowsAndNoPages) {
  std::vector<int32_t> table(2 * 2, -1);
  fill_page_table({0, 2, 4}, {5, 6, 1, 2}, 2, 2, table.data());
  EXPECT_EQ(table, (std::vector<int32_t>{5, 6, 1, 2}));
  std::vector<int32_t> empty(2 * 3, -1);
  fill_page_table({0, 0, 0}, {}, 2, 3, empty.data());
  EXPECT_EQ(empty, std::vector<int32_t>(6, 0));
}

TEST(CudnnPageTable, RefusesARequestWiderThanTheTable) {
  std::vector<int32_t> table(2, -1);
  EXPECT_THROW(fill_page_table({0, 3}, {1, 2, 3}, 1, 2, table.data()), Error);
}

}  // namespace
}  // namespace flashband::cudnn_backend

#else

TEST(CudnnPageTable, NotBuilt) { GTEST_SKIP() << "this build has no cudnn backend"; }

#endif  // FLASHBAND_WITH_CUDNN
