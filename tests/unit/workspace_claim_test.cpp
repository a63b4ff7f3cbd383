// A plan's claim on the workspace its arrays live in: a later plan over the same bytes revokes
// it (run() of the earlier plan then refuses), and bytes that another object's captured run
// reads cannot be planned over. Host-only: the claims are bookkeeping on addresses.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>

#include "run/capture_guard.h"
#include "plan/workspace_claim.h"

namespace flashband::detail {
namespace {

// Addresses nothing dereferences; each test uses its own range.
Workspace at(std::uintptr_t begin, std::size_t bytes) { return {reinterpret_cast<void*>(begin), bytes}; }

const std::shared_ptr<const void> kOwnerA = std::make_shared<char>(), kOwnerB = std::make_shared<char>();

TEST(WorkspaceClaim, ALaterOverlappingPlanRevokesTheEarlierOne) {
  auto a = claim_workspace(at(0x100000, 4096), kOwnerA, false);
  auto apart = claim_workspace(at(0x100000 + 4096, 4096), kOwnerB, false);  // adjacent: no overlap
  EXPECT_NO_THROW(check_claim(a.get()));
  auto b = claim_workspace(at(0x100000 + 1024, 512), kOwnerB, false);
  EXPECT_TRUE(a->revoked);
  EXPECT_FALSE(apart->revoked);
  EXPECT_NO_THROW(check_claim(b.get()));
  try {
    check_claim(a.get());
    FAIL() << "a revoked claim ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("workspace"), std::string::npos) << e.what();
  }
  // The same object planning again revokes its own earlier claim the same way.
  auto b2 = claim_workspace(at(0x100000 + 1024, 512), kOwnerB, false);
  EXPECT_TRUE(b->revoked);
  EXPECT_FALSE(b2->revoked);
}

TEST(WorkspaceClaim, NoWorkspaceNoClaim) {
  EXPECT_EQ(claim_workspace(at(0, 0), kOwnerA, false), nullptr);
  EXPECT_EQ(claim_workspace(at(0x200000, 0), kOwnerA, false), nullptr);
  EXPECT_NO_THROW(check_claim(nullptr));
  EXPECT_NO_THROW(check_workspace_free(at(0, 0), kOwnerA));
}

TEST(WorkspaceClaim, CapturedBytesAreOnlyTheCapturingObjects) {
  auto a = claim_workspace(at(0x300000, 4096), kOwnerA, true);
  EXPECT_NO_THROW(check_workspace_free(at(0x300000, 4096), kOwnerA));  // graph mode re-plans
  EXPECT_NO_THROW(check_workspace_free(at(0x300000 + 4096, 64), kOwnerB));
  try {
    check_workspace_free(at(0x300000 + 4000, 4096), kOwnerB);
    FAIL() << "another object planned over captured bytes";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA graph"), std::string::npos) << e.what();
  }
  // The capturing object's later plans inherit the capture (plan_into passes it on) ...
  auto a2 = claim_workspace(at(0x300000, 4096), kOwnerA, true);
  EXPECT_THROW(check_workspace_free(at(0x300000, 4096), kOwnerB), Error);
  // ... and single_prefill (no owner) may not take the bytes either.
  EXPECT_THROW(check_workspace_free(at(0x300000, 64), nullptr), Error);
  // Once a plan of it runs without the capture (a refused plan forgets it), they are free.
  auto a3 = claim_workspace(at(0x300000, 4096), kOwnerA, false);
  EXPECT_NO_THROW(check_workspace_free(at(0x300000, 4096), kOwnerB));
  // A claim whose plan is gone binds nothing.
  auto c = claim_workspace(at(0x400000, 64), kOwnerA, true);
  c.reset();
  EXPECT_NO_THROW(check_workspace_free(at(0x400000, 64), kOwnerB));
}

TEST(WorkspaceClaim, AForgottenCaptureFreesTheNewPlansBytes) {
  // plan_into's path: the object had a capture, so the new plan's claim starts captured; the
  // capture guard then refuses the plan and forgets the capture, and the claim with it.
  auto plan = std::make_shared<Plan>();
  plan->claim = claim_workspace(at(0x500000, 4096), kOwnerA, true);
  plan->params.max_kv_len = 7;
  plan->backend = Backend::kSM80;
  auto old_plan = std::make_shared<Plan>();
  old_plan->backend = Backend::kSM80;
  auto captured = std::make_shared<Capture>();
  captured->plan = old_plan;
  std::shared_ptr<const Capture> held = captured;
  std::shared_ptr<const Plan> installed;
  EXPECT_THROW(install_plan(installed, held, plan), Error);
  EXPECT_EQ(installed, plan);
  EXPECT_FALSE(plan->claim->captured);
  EXPECT_NO_THROW(check_workspace_free(at(0x500000, 4096), kOwnerB));
}

// A workspace with plan_data: the arrays there, scratch in `data`.
Workspace split(std::uintptr_t arrays, std::size_t array_bytes, std::uintptr_t scratch, std::size_t scratch_bytes) {
  Workspace ws = at(scratch, scratch_bytes);
  ws.plan_data = reinterpret_cast<void*>(arrays);
  ws.plan_bytes = array_bytes;
  return ws;
}

TEST(WorkspaceClaim, PlansShareScratchBesideTheirOwnArrays) {
  const std::uintptr_t scratch = 0x600000;
  auto a = claim_workspace(split(0x700000, 4096, scratch, 1 << 16), kOwnerA, false);
  auto b = claim_workspace(split(0x710000, 4096, scratch, 1 << 16), kOwnerB, false);
  auto c = claim_workspace(split(0x720000, 4096, scratch + 512, 1024), nullptr, false);  // a single_prefill
  EXPECT_FALSE(a->revoked);
  EXPECT_FALSE(b->revoked);
  EXPECT_NO_THROW(check_claim(a.get()));
  // Arrays put into the shared scratch revoke every plan whose runs write there ...
  auto d = claim_workspace(at(scratch + 4096, 256), kOwnerB, false);
  EXPECT_TRUE(a->revoked);
  EXPECT_TRUE(b->revoked);
  EXPECT_FALSE(c->revoked);  // its scratch ends before them
  EXPECT_THROW(check_claim(b.get()), Error);
  // ... and scratch over a plan's arrays revokes that plan; overlapping scratch does not.
  auto e = claim_workspace(split(0x730000, 4096, scratch, 1 << 16), kOwnerA, false);
  EXPECT_TRUE(d->revoked);
  EXPECT_FALSE(c->revoked);
  EXPECT_FALSE(e->revoked);
  // Its own arrays' buffer is still claimed whole: a plan over it revokes it.
  auto f = claim_workspace(split(0x730000 + 1024, 64, scratch + (1 << 20), 64), kOwnerB, false);
  EXPECT_TRUE(e->revoked);
  EXPECT_FALSE(f->revoked);
}

TEST(WorkspaceClaim, ACapturedPlanSharesItsScratchButNotItsArrays) {
  const std::uintptr_t scratch = 0x800000;
  auto a = claim_workspace(split(0x900000, 4096, scratch, 1 << 16), kOwnerA, true);
  EXPECT_NO_THROW(check_workspace_free(split(0x910000, 4096, scratch, 1 << 16), kOwnerB));
  EXPECT_THROW(check_workspace_free(split(0x900000 + 64, 64, scratch + (1 << 20), 64), kOwnerB), Error);
  EXPECT_THROW(check_workspace_free(at(scratch + 128, 64), kOwnerB), Error);          // arrays into its scratch
  EXPECT_THROW(check_workspace_free(split(0x920000, 64, 0x900000, 64), kOwnerB), Error);  // scratch over its arrays
  EXPECT_FALSE(a->revoked);
}

}  // namespace
}  // namespace flashband::detail
