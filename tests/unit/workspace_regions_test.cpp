// How a GPU plan divides the caller's Workspace between its arrays and its runs' scratch:
// one buffer (arrays first, scratch after them at a 256-byte boundary) or plan_data beside
// data (scratch only). Host-only: the regions are arithmetic on addresses.
#include <gtest/gtest.h>

#include <cstdint>

#include "plan/workspace_regions.h"

namespace flashband::detail {
namespace {

unsigned char* addr(std::uintptr_t a) { return reinterpret_cast<unsigned char*>(a); }

TEST(WorkspaceRegions, OneBufferPutsTheScratchAfterTheArrays) {
  const WorkspaceRegions r(Workspace{addr(0x10000), 4096});
  EXPECT_FALSE(r.separate());
  EXPECT_FALSE(r.empty());
  EXPECT_EQ(r.arrays(), addr(0x10000));
  EXPECT_EQ(r.scratch(100), addr(0x10000 + 256));
  EXPECT_EQ(r.scratch_room(100), 4096u - 256);
  EXPECT_TRUE(r.fits(4096, 0));
  EXPECT_TRUE(r.fits(100, 4096 - 256));
  EXPECT_FALSE(r.fits(100, 4096 - 255));
  EXPECT_FALSE(r.fits(4097, 0));
  EXPECT_EQ(r.got(), "got 4096 bytes");
  EXPECT_EQ(r.need(100, 10), "266 bytes");
}

// cuda_graph plans: the scratch sits at the buffer's end (256-aligned), where arrays that
// grow between plans leave it in place; beside a plan_data it is data's start either way.
TEST(WorkspaceRegions, ScratchAtTheEndStaysWhileTheArraysGrow) {
  const WorkspaceRegions r(Workspace{addr(0x10000), 4096 + 100});
  for (std::size_t arrays : {0, 100, 1000, 2000}) {
    EXPECT_EQ(r.scratch_offset(arrays, 1000, true), 3072u) << arrays;
    EXPECT_EQ(r.scratch_offset(arrays, 1000, false), (arrays + 255) / 256 * 256) << arrays;
    if (r.fits(arrays, 1000)) EXPECT_GE(r.scratch_offset(arrays, 1000, true), (arrays + 255) / 256 * 256);
  }
  EXPECT_EQ(r.data_at(3072), addr(0x10000 + 3072));
  EXPECT_EQ(r.scratch_offset(0, 4196, true), 0u);
  Workspace ws{addr(0x20000), 1000, addr(0x40000), 300};
  EXPECT_EQ(WorkspaceRegions(ws).scratch_offset(200, 500, true), 0u);
  EXPECT_EQ(WorkspaceRegions(Workspace{}).data_at(0), nullptr);
}

TEST(WorkspaceRegions, PlanDataTakesTheArraysAndDataTheScratch) {
  Workspace ws{addr(0x20000), 1000, addr(0x40000), 300};
  const WorkspaceRegions r(ws);
  EXPECT_TRUE(r.separate());
  EXPECT_EQ(r.arrays(), addr(0x40000));
  EXPECT_EQ(r.arrays_room(), 300u);
  EXPECT_EQ(r.scratch(100), addr(0x20000));
  EXPECT_EQ(r.scratch_room(100), 1000u);
  EXPECT_TRUE(r.fits(300, 1000));
  EXPECT_FALSE(r.fits(301, 0));
  EXPECT_FALSE(r.fits(1, 1001));
  EXPECT_EQ(r.got(), "got 300 bytes of plan_data and 1000 bytes of data");
  // No scratch given (bytes without data count as none): plans fit only without it.
  ws.data = nullptr;
  EXPECT_EQ(WorkspaceRegions(ws).scratch_room(0), 0u);
  EXPECT_TRUE(WorkspaceRegions(ws).fits(300, 0));
  EXPECT_FALSE(WorkspaceRegions(ws).fits(300, 1));
  EXPECT_TRUE(WorkspaceRegions(Workspace{}).empty());
}

}  // namespace
}  // namespace flashband::detail
