#include "plan/workspace_claim.h"

#include <algorithm>
#include <mutex>
#include <vector>

#include "flashband/error.h"

namespace flashband::detail {

namespace {

std::mutex g_mutex;
std::vector<std::weak_ptr<WorkspaceClaim>> g_claims;  // live plans' claims, pruned as plans die

bool overlaps(const ByteRange& x, const ByteRange& y) { return x.begin < y.end && y.begin < x.end; }

bool conflict(const WorkspaceClaim& c, const ByteRange& arrays, const ByteRange& scratch) {
  return overlaps(c.arrays, arrays) || overlaps(c.arrays, scratch) || overlaps(c.scratch, arrays);
}

ByteRange range(const void* data, std::size_t bytes) {
  if (data == nullptr || bytes == 0) return {};
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  return {begin, begin + bytes};
}

// What a plan over `ws` claims: its arrays' buffer, and beside a plan_data the scratch.
ByteRange arrays_of(const Workspace& ws) {
  return ws.plan_data ? range(ws.plan_data, ws.plan_bytes) : range(ws.data, ws.bytes);
}
ByteRange scratch_of(const Workspace& ws) { return ws.plan_data ? range(ws.data, ws.bytes) : ByteRange{}; }

bool empty(const ByteRange& r) { return r.begin == r.end; }

}  // namespace

void check_workspace_free(const Workspace& ws, const std::shared_ptr<const void>& owner) {
  const ByteRange arrays = arrays_of(ws), scratch = scratch_of(ws);
  if (empty(arrays) && empty(scratch)) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  for (const auto& weak : g_claims) {
    const auto c = weak.lock();
    if (c && (!owner || c->owner != owner) && c->captured && !c->revoked && conflict(*c, arrays, scratch)) {
      throw Error(ErrorCode::kInvalidArgument,
                  "workspace: a CUDA graph captured a run of another batch object's plan that uses this "
                  "workspace, and this plan's arrays or runs would write over that plan's arrays (or its "
                  "runs over this plan's), so replaying the graph would compute the wrong problem; give "
                  "each batch object (wrapper) that a graph captures its own workspace, or its own "
                  "plan_data beside a shared data");
    }
  }
}

std::shared_ptr<WorkspaceClaim> claim_workspace(const Workspace& ws, const std::shared_ptr<const void>& owner,
                                                bool captured) {
  const ByteRange arrays = arrays_of(ws), scratch = scratch_of(ws);
  if (empty(arrays) && empty(scratch)) return nullptr;
  auto claim = std::make_shared<WorkspaceClaim>();
  claim->arrays = arrays;
  claim->scratch = scratch;
  claim->owner = owner;
  claim->captured = captured;
  std::lock_guard<std::mutex> lock(g_mutex);
  g_claims.erase(std::remove_if(g_claims.begin(), g_claims.end(),
                                [&](const std::weak_ptr<WorkspaceClaim>& weak) {
                                  const auto c = weak.lock();
                                  if (!c) return true;
                                  if (!conflict(*c, arrays, scratch)) return false;
                                  c->revoked = true;
                                  return true;
                                }),
                 g_claims.end());
  g_claims.push_back(claim);
  return claim;
}

void check_claim(const WorkspaceClaim* claim) {
  if (claim != nullptr && claim->revoked) {
    throw Error(ErrorCode::kInvalidArgument,
                "workspace: a later plan() (of another batch object, or a single_prefill) took bytes that "
                "this plan's arrays are in, or put its arrays where this plan's runs write scratch, so this "
                "run would read its arrays or write over them; give each batch object (wrapper) its own "
                "workspace, or its own plan_data (where a plan's arrays go) beside a shared data, or plan() "
                "again");
  }
}

}  // namespace flashband::detail
