// Where a cudnn plan puts its device arrays inside the caller's Workspace. The int32 index
// arrays sit in one block (so plan copies them with a single cudaMemcpyAsync), followed by
// the workspace cuDNN's execution plan asks for. Offsets are in bytes from the workspace's
// data pointer after aligning it up to kWorkspaceAlign.
#pragma once
#include <cstddef>
#include <cstdint>

#include "backends/cudnn/graph_key.h"

namespace flashband::cudnn_backend {

inline constexpr std::size_t kWorkspaceAlign = 256;  // cuDNN's workspace, and room to spare

// A byte offset of kAbsent marks an array the graph does not use.
inline constexpr std::size_t kAbsent = static_cast<std::size_t>(-1);

struct WorkspaceLayout {
  // int32 arrays, each 16-byte aligned inside the index block:
  std::size_t seq_len_q = kAbsent;     // [B]      padding mask
  std::size_t seq_len_kv = kAbsent;    // [B]      padding mask
  std::size_t ragged_q = kAbsent;      // [B + 1]  Q element offsets
  std::size_t ragged_o = kAbsent;      // [B + 1]  O element offsets
  std::size_t ragged_stats = kAbsent;  // [B + 1]  LSE element offsets
  std::size_t ragged_k = kAbsent;      // [B + 1]  K element offsets
  std::size_t ragged_v = kAbsent;      // [B + 1]  V element offsets
  std::size_t page_table = kAbsent;    // [B, width], shared by K and V
  std::size_t page_table_x2 = kAbsent; // [B, width], 2 * page index: a stacked cache
  std::size_t index_bytes = 0;         // the block [0, index_bytes)
  std::size_t cudnn = 0;               // cuDNN's workspace, kWorkspaceAlign-aligned
  std::size_t cudnn_bytes = 0;
  std::size_t total = 0;               // bytes from the aligned base
};

WorkspaceLayout workspace_layout(const GraphKey& key, std::size_t cudnn_bytes);

// Bytes a Workspace must have so that workspace_layout() fits whatever its alignment
// (kWorkspaceAlign - 1 bytes of slack included).
std::size_t required_bytes(const WorkspaceLayout& layout);

}  // namespace flashband::cudnn_backend
