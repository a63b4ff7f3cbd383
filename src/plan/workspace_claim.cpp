#include "plan/workspace_claim.h"

#include <algorithm>
#include <mutex>
#include <vector>

#include "flashband/error.h"

namespace flashband::detail {

namespace {

std::mutex g_mutex;
std::vector<std::weak_ptr<WorkspaceClaim>> g_claims;  // live plans' claims, pruned as plans die

bool overlaps(const WorkspaceClaim& c, std::uintptr_t begin, std::uintptr_t end) {
  return c.begin < end && begin < c.end;
}

std::uintptr_t begin_of(const Workspace& ws) { return reinterpret_cast<std::uintptr_t>(ws.data); }

}  // namespace

void check_workspace_free(const Workspace& ws, const std::shared_ptr<const void>& owner) {
  if (ws.data == nullptr || ws.bytes == 0) return;
  const std::uintptr_t begin = begin_of(ws), end = begin + ws.bytes;
  std::lock_guard<std::mutex> lock(g_mutex);
  for (const auto& weak : g_claims) {
    const auto c = weak.lock();
    if (c && (!owner || c->owner != owner) && c->captured && !c->revoked && overlaps(*c, begin, end)) {
      throw Error(ErrorCode::kInvalidArgument,
                  "workspace: a CUDA graph captured a run of another batch object's plan that reads this "
                  "workspace, and this plan would write its arrays over that plan's, so replaying the graph "
                  "would compute the wrong problem; give each batch object (wrapper) that a graph captures "
                  "its own workspace");
    }
  }
}

std::shared_ptr<WorkspaceClaim> claim_workspace(const Workspace& ws, const std::shared_ptr<const void>& owner,
                                                bool captured) {
  if (ws.data == nullptr || ws.bytes == 0) return nullptr;
  auto claim = std::make_shared<WorkspaceClaim>();
  claim->begin = begin_of(ws);
  claim->end = claim->begin + ws.bytes;
  claim->owner = owner;
  claim->captured = captured;
  std::lock_guard<std::mutex> lock(g_mutex);
  g_claims.erase(std::remove_if(g_claims.begin(), g_claims.end(),
                                [&](const std::weak_ptr<WorkspaceClaim>& weak) {
                                  const auto c = weak.lock();
                                  if (!c) return true;
                                  if (!overlaps(*c, claim->begin, claim->end)) return false;
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
                "workspace: a later plan() wrote its arrays over this plan's (another batch object, or a "
                "single_prefill, given the same workspace bytes), so this run would read them; give each "
                "batch object (wrapper) its own workspace (flashband keeps a plan's index arrays there, "
                "where FlashInfer keeps only scratch), or plan() again");
  }
}

}  // namespace flashband::detail
