#include "backends/cudnn/workspace_layout.h"

namespace flashband::cudnn_backend {

namespace {

std::size_t align_up(std::size_t x, std::size_t a) { return (x + a - 1) / a * a; }

}  // namespace

WorkspaceLayout workspace_layout(const GraphKey& key, std::size_t cudnn_bytes) {
  WorkspaceLayout l;
  std::size_t at = 0;
  auto take = [&](std::size_t& field, std::size_t count) {
    field = at;
    at = align_up(at + count * sizeof(int32_t), 16);
  };
  const std::size_t b = static_cast<std::size_t>(key.batch);
  if (key.padding_mask()) {
    take(l.seq_len_q, b);
    take(l.seq_len_kv, b);
  }
  if (key.ragged_q()) {
    take(l.ragged_q, b + 1);
    take(l.ragged_o, b + 1);
    if (key.return_lse) take(l.ragged_stats, b + 1);
  }
  if (key.ragged_kv()) {
    take(l.ragged_k, b + 1);
    take(l.ragged_v, b + 1);
  }
  if (key.paged()) {
    static_assert(kPageStrideMultiples == 2, "one page table per page-stride multiple");
    take(l.page_table, b * static_cast<std::size_t>(key.page_table_width));
    take(l.page_table_x2, b * static_cast<std::size_t>(key.page_table_width));
  }
  l.index_bytes = at;
  l.cudnn = cudnn_bytes > 0 ? align_up(at, kWorkspaceAlign) : at;
  l.cudnn_bytes = cudnn_bytes;
  l.total = l.cudnn + cudnn_bytes;
  return l;
}

std::size_t required_bytes(const WorkspaceLayout& layout) {
  return layout.total == 0 ? 0 : layout.total + kWorkspaceAlign - 1;
}

}  // namespace flashband::cudnn_backend
