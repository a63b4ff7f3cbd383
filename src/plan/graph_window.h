// The window a cuda_graph plan launches with. Other plans drop a window that hides nothing
// (core::normalize_window) so the unmasked kernels serve it; a cuda_graph plan must not,
// since later plans of longer requests, which the window may then clip, must launch the
// same kernel with the same argument as the graph captured. It keeps the window, capped at
// kMaxGraphWindow (or max_kv_len - 1 where that is larger, so it still hides nothing),
// which keeps p - window_left far from int overflow. window_right is kept the same way,
// against the longest qo_len instead.
#pragma once

namespace flashband::detail {

inline constexpr int kMaxGraphWindow = 1 << 30;

constexpr int graph_window(int window_left, int max_kv_len) {
  if (window_left <= kMaxGraphWindow) return window_left;
  if (max_kv_len - 1 <= kMaxGraphWindow) return kMaxGraphWindow;
  return window_left < max_kv_len - 1 ? window_left : max_kv_len - 1;
}

}  // namespace flashband::detail
