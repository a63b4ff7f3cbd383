// GraphKey: every value a cuDNN SDPA graph bakes in, as one plain struct. A cuDNN graph is
// compiled for fixed dims, strides, mask, scale and outputs; serving a problem with a graph
// built for a different value of any of them computes the wrong thing silently (FlashInfer's
// cudnn path once keyed without the scale). So the cache keys on this struct, and launch
// rebuilds the key from the AttentionParams it receives and refuses on any difference.
// Host-only and free of cuDNN headers, so tests/unit/cudnn_graph_key_test.cpp runs anywhere.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/params.h"
#include "flashband/capability.h"
#include "flashband/tensor.h"

namespace flashband::cudnn_backend {

// How the graph addresses Q/O and K/V; follows from the op (see make_graph_key).
enum class GraphLayout {
  kDense,   // single prefill: B = 1, exact lengths, no padding mask
  kRagged,  // ragged batch prefill: Q/O/K/V/LSE by ragged offsets, padding mask
  kPaged,   // paged batch prefill: Q/O/LSE ragged, K/V through page tables, padding mask
  kDecode,  // paged decode: one query row per request (s_q = 1), page tables, padding mask
};
const char* graph_layout_name(GraphLayout layout);

struct GraphKey {
  int device_id = 0;
  GraphLayout layout = GraphLayout::kDense;
  DType dtype = DType::kF16;
  int batch = 0;
  int num_qo_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  // The sequence extents the graph is built for: exact for kDense, bucketed maxima otherwise
  // (see bucket_length), and s_kv = page_table_width * page_size when paged.
  int64_t s_q = 0;
  int64_t s_kv = 0;
  // Element strides of every tensor the graph reads or writes (the last dim is contiguous);
  // 0 along an extent of 1, where no address depends on it.
  int64_t q_stride_n = 0, q_stride_h = 0;
  int64_t o_stride_n = 0, o_stride_h = 0;
  int64_t k_stride_page = 0, k_stride_n = 0, k_stride_h = 0;
  int64_t v_stride_page = 0, v_stride_n = 0, v_stride_h = 0;
  int64_t lse_stride_n = 0, lse_stride_h = 0;  // 0 when !return_lse
  // Paged containers: [kPageStrideMultiples * num_pages, Hk, page_size, D] with page stride
  // k/v_stride_page, and page tables [B, 1, width, 1]. A stacked cache [P, 2, ...] has twice
  // the page stride of separate K and V; launch runs it on the same graph through a second page
  // table holding 2 * page index (see page_stride_multiple), which is why the container
  // declares twice the pages.
  int page_size = 0;
  int num_pages = 0;
  int page_table_width = 0;
  // Semantics.
  bool causal = false;
  int window_left = -1;         // cuDNN left bound = window_left + 1 (the bound counts the diagonal)
  int window_right = -1;        // cuDNN right bound, the same number (>= 1; 0 is causal)
  uint32_t scale_bits = 0;      // sm_scale, bit-exact
  uint32_t soft_cap_bits = 0;   // always 0 in a built graph: soft cap is refused (see plan)
  bool return_lse = false;
  bool sinks = false;  // a [Hq] float32 sink per head, bound at run (cuDNN >= 9.13)

  bool padding_mask() const { return layout != GraphLayout::kDense; }
  bool paged() const { return layout == GraphLayout::kPaged || layout == GraphLayout::kDecode; }
  bool ragged_q() const { return layout == GraphLayout::kRagged || layout == GraphLayout::kPaged; }
  bool ragged_kv() const { return layout == GraphLayout::kRagged; }
  float sm_scale() const;

  bool operator==(const GraphKey& o) const;
  bool operator!=(const GraphKey& o) const { return !(*this == o); }
  // One line naming every field, e.g. for error messages and logs.
  std::string to_string() const;
  std::size_t hash() const;
};

struct GraphKeyHash {
  std::size_t operator()(const GraphKey& k) const { return k.hash(); }
};

// What a graph needs beyond AttentionParams: whether LSE is produced and whether sinks are
// bound (params.lse and params.sinks are null at plan time), the paged container's page count, and the device the graph is compiled for.
struct GraphKeyContext {
  bool return_lse = false;
  bool sinks = false;  // at plan: Options::sinks; at launch: params.sinks != nullptr
  int num_pages = 0;
  int device_id = 0;
};

// Page strides a paged graph serves: its own (separate K and V), and twice it (a stacked cache).
inline constexpr int kPageStrideMultiples = 2;

// For a paged key: m in [1, kPageStrideMultiples] such that `given` has page strides exactly m
// times `planned`'s (K and V alike), and `given` equals `planned` once divided by m; 0 when no
// such m exists or the keys are not paged.
int page_stride_multiple(const GraphKey& planned, const GraphKey& given);

// The extent a graph is built for when the real length is a maximum over requests: the next
// power of two (at least 1), so a stream of batches with slowly growing lengths reuses a
// handful of graphs instead of compiling one per step.
int64_t bucket_length(int64_t max_len);

// The key of the graph that runs `p`. Reads op, dtype, batch, heads, head_dim, max_qo_len,
// max_kv_len, page_size, every stride, causal, window_left, window_right, logits_soft_cap
// and sm_scale.
GraphKey make_graph_key(const core::AttentionParams& p, const GraphKeyContext& ctx);

// The first field in which two keys differ, as "name: a vs b"; empty when equal.
std::string first_difference(const GraphKey& planned, const GraphKey& given);

// Fills every zero stride of `p` with the canonical contiguous layout for `kv_layout`:
// Q/O [T, Hq, D], LSE [T, Hq], ragged K/V [T, Hk, D] (NHD) or [Hk, total_kv_tokens, D] (HND),
// paged K/V [P, page, Hk, D] (NHD) or [P, Hk, page, D] (HND), K and V as separate tensors.
// plan uses it because the tensors (and their strides) only arrive at run.
void fill_canonical_strides(core::AttentionParams& p, KVLayout kv_layout, int64_t total_kv_tokens);

}  // namespace flashband::cudnn_backend
