#include "plan/workspace_regions.h"

namespace flashband::detail {

namespace {
std::size_t align_up(std::size_t n) { return (n + kRegionAlign - 1) / kRegionAlign * kRegionAlign; }
}  // namespace

bool WorkspaceRegions::fits(std::size_t array_bytes, std::size_t scratch_bytes) const {
  if (separate()) return array_bytes <= ws_.plan_bytes && scratch_bytes <= scratch_room(0);
  if (scratch_bytes == 0) return array_bytes <= ws_.bytes;
  return align_up(array_bytes) + scratch_bytes <= ws_.bytes;
}

unsigned char* WorkspaceRegions::scratch(std::size_t array_bytes) const {
  return data_at(scratch_offset(array_bytes, 0, false));
}

std::size_t WorkspaceRegions::scratch_offset(std::size_t array_bytes, std::size_t scratch_bytes, bool at_end) const {
  if (separate()) return 0;
  if (!at_end || scratch_bytes > ws_.bytes) return align_up(array_bytes);
  return (ws_.bytes - scratch_bytes) / kRegionAlign * kRegionAlign;
}

unsigned char* WorkspaceRegions::data_at(std::size_t offset) const {
  return ws_.data ? static_cast<unsigned char*>(ws_.data) + offset : nullptr;
}

std::size_t WorkspaceRegions::scratch_room(std::size_t array_bytes) const {
  if (separate()) return ws_.data ? ws_.bytes : 0;  // bytes without data are no room
  const std::size_t taken = align_up(array_bytes);
  return ws_.bytes > taken ? ws_.bytes - taken : 0;
}

std::string WorkspaceRegions::got() const {
  if (!separate()) return "got " + std::to_string(ws_.bytes) + " bytes";
  return "got " + std::to_string(ws_.plan_bytes) + " bytes of plan_data and " +
         std::to_string(ws_.bytes) + " bytes of data";
}

std::string WorkspaceRegions::need(std::size_t array_bytes, std::size_t scratch_bytes) const {
  if (!separate()) {
    const std::size_t total = scratch_bytes ? align_up(array_bytes) + scratch_bytes : array_bytes;
    return std::to_string(total) + " bytes";
  }
  return std::to_string(array_bytes) + " bytes of plan_data and " + std::to_string(scratch_bytes) +
         " bytes of data";
}

}  // namespace flashband::detail
