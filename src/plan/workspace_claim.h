// Which plan's arrays a workspace holds. A GPU batch plan keeps its index arrays and work list
// in the caller's workspace, so a later plan over the same bytes (another batch object sharing
// the buffer, as FlashInfer's wrappers share their float workspace) overwrites them, and run()
// of the earlier plan, or a replay of a CUDA graph that captured it, would read the later
// plan's arrays. Each plan claims its workspace; a later claim that conflicts revokes it,
// run() refuses a revoked plan, and a plan may not take bytes that another object's captured
// run reads. Two claims conflict where either's arrays overlap the other's arrays or scratch;
// scratch beside a plan_data (Workspace) may overlap other such scratch, since each run writes
// its scratch before reading it.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>

#include "flashband/attention.h"

namespace flashband::detail {

struct ByteRange {
  std::uintptr_t begin = 0, end = 0;
};

struct WorkspaceClaim {
  ByteRange arrays;   // the plan's arrays (and its scratch, in a one-buffer workspace)
  ByteRange scratch;  // its runs' scratch in `data` beside a plan_data: shared with other such plans
  std::shared_ptr<const void> owner;    // the token of the batch object (and its copies)
  std::atomic<bool> revoked{false};     // a later plan wrote over it
  std::atomic<bool> captured{false};    // a CUDA graph captured a run that reads it
};

// Before a plan by `owner` (a batch object's token, null for single_prefill) writes `ws`:
// throws when its claim would conflict with a run that a CUDA graph captured for another
// object. The
// claim of a captured run binds for as long as its object keeps the capture (until a plan()
// of it is refused) and lives; a graph replayed after its object is gone is unprotected.
void check_workspace_free(const Workspace& ws, const std::shared_ptr<const void>& owner);

// After the plan wrote `ws`: revokes every claim conflicting with it and returns the new one
// (null for an empty workspace). `captured`: a capture of this owner reads the new plan too.
std::shared_ptr<WorkspaceClaim> claim_workspace(const Workspace& ws, const std::shared_ptr<const void>& owner,
                                                bool captured);

// run(): throws when a later plan wrote over this claim.
void check_claim(const WorkspaceClaim* claim);

}  // namespace flashband::detail
