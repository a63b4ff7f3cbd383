// How a GPU plan divides the caller's Workspace (flashband/attention.h) between its own
// arrays (index arrays, work list: every run of the plan reads them) and its runs' scratch
// (split-KV partial states: one run writes and reads them). Given plan_data, they are two
// buffers; otherwise both share `data`, the arrays first and the scratch after them, at the
// next kRegionAlign boundary.
#pragma once
#include <cstddef>
#include <string>

#include "flashband/attention.h"

namespace flashband::detail {

inline constexpr std::size_t kRegionAlign = 256;

class WorkspaceRegions {
 public:
  explicit WorkspaceRegions(const Workspace& ws) : ws_(ws) {}

  bool separate() const { return ws_.plan_data != nullptr; }
  // No memory for the plan's arrays.
  bool empty() const { return arrays() == nullptr || arrays_room() == 0; }
  unsigned char* arrays() const { return static_cast<unsigned char*>(separate() ? ws_.plan_data : ws_.data); }
  std::size_t arrays_room() const { return separate() ? ws_.plan_bytes : ws_.bytes; }

  // Whether `array_bytes` of arrays and `scratch_bytes` of scratch fit.
  bool fits(std::size_t array_bytes, std::size_t scratch_bytes) const;
  // Where the scratch starts once the arrays take `array_bytes`, and the room it has there.
  unsigned char* scratch(std::size_t array_bytes) const;
  std::size_t scratch_room(std::size_t array_bytes) const;
  // The scratch's offset in `data`: 0 beside a plan_data; in one buffer right after
  // `array_bytes` of arrays or, `at_end`, `scratch_bytes` from the buffer's end (aligned
  // down), where arrays that grow between plans do not move it (cuda_graph plans, whose
  // captured launches keep their scratch address). Meaningful where fits() holds.
  std::size_t scratch_offset(std::size_t array_bytes, std::size_t scratch_bytes, bool at_end) const;
  unsigned char* data_at(std::size_t offset) const;

  // For errors: "got N bytes" or "got N bytes of plan_data and M bytes of data".
  std::string got() const;
  // For errors: what a plan needing these bytes asks of the workspace.
  std::string need(std::size_t array_bytes, std::size_t scratch_bytes) const;

 private:
  Workspace ws_;
};

}  // namespace flashband::detail
