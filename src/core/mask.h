// The visibility rule of SPEC.md and everything derived from it: needs_mask, window
// normalisation, the KV range a block of query rows can see, and tile classification.
// Host and device share this file, so the cpu backend, the planner and every GPU mainloop
// agree on one definition (tests/unit/mask_test.cpp checks it against brute force).
#pragma once
#include "core/hd.h"

namespace flashband::core {

// One request's mask parameters. window_left / window_right = -1: no bound on that side.
// The right side is `causal` (j <= p) or window_right = r (j <= p + r); plans give at most
// one of them (a causal problem carries window_right -1), and were both set, the causal
// bound would be the tighter one.
struct MaskSpec {
  int qo_len;
  int kv_len;
  bool causal;
  int window_left;
  int window_right = -1;
};

// Bottom-right alignment: the last query row sits on the last key.
FB_HD constexpr int query_position(int row, int qo_len, int kv_len) { return row + kv_len - qo_len; }

FB_HD constexpr bool needs_mask(bool causal, int window_left, int window_right) {
  return causal || window_left >= 0 || window_right >= 0;
}

// causal is the right bound 0: a wider right bound beside it has no single meaning
// (FlashInfer's decode lets window_right replace causal, FA3 lets causal win), so plan() and
// supports() both refuse it.
FB_HD constexpr bool right_bounds_conflict(bool causal, int window_right) { return causal && window_right > 0; }

// A custom mask states every visible pair itself; FlashInfer ignores causal beside one, and
// flashband never ignores a parameter, so plan() and supports() both refuse the pair.
FB_HD constexpr bool custom_mask_conflicts(bool causal, bool custom_mask) { return causal && custom_mask; }

// Bit (row, key) of one request's packed custom mask (SPEC.md "Custom masks"): the
// [qo_len, kv_len] matrix flattened row-major, least significant bit first in each byte.
FB_HD bool custom_mask_bit(const unsigned char* bits, int row, int kv_len, int key) {
  const long long k = static_cast<long long>(row) * kv_len + key;
  return (bits[k >> 3] >> (k & 7)) & 1;
}

// Bits (row, key0) .. (row, key0 + n - 1) of the same matrix as one word, bit k for key
// key0 + k; 0 < n <= 64. A row starts at bit row * kv_len, any bit of a byte, so this reads
// the (at most 9) bytes holding the wanted bits, no byte past them, and shifts. The GPU
// kernels classify a warp's tile from such windows (backends/sm80/custom_mask.h).
FB_HD unsigned long long mask_byte(const unsigned char* p) {
#if defined(__CUDA_ARCH__)
  return __ldg(p);  // read-only for the kernel's life
#else
  return *p;
#endif
}
FB_HD unsigned long long custom_mask_window(const unsigned char* bits, int row, int kv_len, int key0, int n) {
  const long long first = static_cast<long long>(row) * kv_len + key0;
  const unsigned char* b = bits + (first >> 3);
  const int shift = static_cast<int>(first & 7);
  const int nbytes = (shift + n + 7) >> 3;
  unsigned long long lo = 0;
  for (int i = 0; i < 8; ++i)
    if (i < nbytes) lo |= mask_byte(b + i) << (8 * i);
  unsigned long long v = lo >> shift;
  if (nbytes > 8) v |= mask_byte(b + 8) << (64 - shift);  // 9 bytes only when shift > 0
  return n >= 64 ? v : v & ((1ull << n) - 1);
}

// A window that reaches key 0 from every row of every request changes nothing. `max_kv_len`
// must be the longest kv_len over all requests that share the kernel launch.
FB_HD constexpr int normalize_window(int window_left, int max_kv_len) {
  return (window_left >= 0 && window_left >= max_kv_len - 1) ? -1 : window_left;
}

// window_right = r hides nothing when every row reaches the last key: p(0) + r >= kv_len - 1,
// i.e. r >= qo_len - 1. `max_qo_len` must be the longest qo_len of the launch. Only r >= 1
// is dropped: 0 is the causal bound, which plans express as `causal`.
FB_HD constexpr int normalize_window_right(int window_right, int max_qo_len) {
  return (window_right >= 1 && window_right >= max_qo_len - 1) ? -1 : window_right;
}

// The right bound's reach past the diagonal: 0 under causal, window_right otherwise
// (-1: none).
FB_HD constexpr int right_reach(const MaskSpec& m) { return m.causal ? 0 : m.window_right; }

FB_HD constexpr bool is_visible(const MaskSpec& m, int row, int key) {
  const int p = query_position(row, m.qo_len, m.kv_len);
  const int r = right_reach(m);
  // key - p as (key - kv_len) + (qo_len - row), two small terms: p + r may pass INT_MAX
  // (a cuda_graph plan keeps a window_right of up to 2^30).
  return key >= 0 && key < m.kv_len && (r < 0 || (key - m.kv_len) + (m.qo_len - row) <= r) &&
         (m.window_left < 0 || key >= p - m.window_left);
}

struct KVRange {
  int first;  // inclusive
  int last;   // exclusive; first == last == 0 when empty
  FB_HD constexpr bool empty() const { return last <= first; }
  FB_HD constexpr int size() const { return last > first ? last - first : 0; }
};

// Keys visible to one row, [first, last).
FB_HD constexpr KVRange row_kv_range(const MaskSpec& m, int row) {
  const int p = query_position(row, m.qo_len, m.kv_len);
  int first = m.window_left >= 0 ? p - m.window_left : 0;
  first = first < 0 ? 0 : first;
  // p + r + 1 only where it lies below kv_len (so it cannot overflow): kv_len - p = qo_len - row.
  const int r = right_reach(m);
  const int last = (r >= 0 && r < m.qo_len - row) ? p + r + 1 : m.kv_len;
  return last > first ? KVRange{first, last} : KVRange{0, 0};
}

// Keys visible to at least one row of [row_begin, row_end). Each row's range is an interval
// whose ends move right by one per row, so the union is an interval as well.
FB_HD constexpr KVRange rows_kv_range(const MaskSpec& m, int row_begin, int row_end) {
  if (row_end > m.qo_len) row_end = m.qo_len;
  if (row_begin < 0) row_begin = 0;
  if (row_end <= row_begin) return {0, 0};
  const KVRange lo = row_kv_range(m, row_begin);
  const KVRange hi = row_kv_range(m, row_end - 1);
  if (hi.empty()) return {0, 0};  // the last row sees nothing, so no earlier row does
  // The first non-empty row determines `first`. Only rows whose right bound lies left of
  // key 0 (p + r < 0: causal, or window_right, with qo_len > kv_len) are empty, and they
  // come first.
  int first = lo.first;
  if (lo.empty()) {
    // the first row the right bound lets see key 0: p(row0) + r == 0
    const int row0 = m.qo_len - m.kv_len - right_reach(m);
    first = row_kv_range(m, row0 > row_begin ? row0 : row_begin).first;
  }
  return {first, hi.last};
}

enum class TileClass { kHidden, kFull, kPartial };

// Classifies the tile rows [row_begin, row_end) x keys [key_begin, key_end):
// hidden (no visible pair: never load it), full (every pair visible: no mask arithmetic),
// or partial (apply is_visible element-wise). Rows >= qo_len and keys >= kv_len count as
// invisible, so a ragged edge tile is partial.
FB_HD constexpr TileClass classify_tile(const MaskSpec& m, int row_begin, int row_end,
                                        int key_begin, int key_end) {
  const KVRange r = rows_kv_range(m, row_begin, row_end);
  const int kb = key_begin > r.first ? key_begin : r.first;
  const int ke = key_end < r.last ? key_end : r.last;
  if (ke <= kb) return TileClass::kHidden;
  if (row_begin < 0 || row_end > m.qo_len || key_begin < 0 || key_end > m.kv_len)
    return TileClass::kPartial;
  // Every row sees the whole key block when the most restrictive rows do: the first row
  // bounds the right edge (causal or window_right), the last row the window's left edge.
  const KVRange first_row = row_kv_range(m, row_begin);
  const KVRange last_row = row_kv_range(m, row_end - 1);
  const bool full = !first_row.empty() && key_begin >= last_row.first && key_end <= first_row.last;
  return full ? TileClass::kFull : TileClass::kPartial;
}

// KV tile indices [begin, end) of width tile_n that a query block must visit; tiles outside
// are hidden and never loaded.
struct TileSpan {
  int begin;
  int end;
};
FB_HD constexpr TileSpan kv_tile_span(const MaskSpec& m, int row_begin, int row_end, int tile_n) {
  const KVRange r = rows_kv_range(m, row_begin, row_end);
  if (r.empty()) return {0, 0};
  return {r.first / tile_n, (r.last + tile_n - 1) / tile_n};
}

}  // namespace flashband::core
