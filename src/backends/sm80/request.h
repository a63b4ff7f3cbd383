// One work item's view of core::AttentionParams: which request, which rows and keys, and
// where each query row and each key lives in global memory. Contiguous and paged K/V differ
// only in kv_offset(); NHD and HND differ only in the strides.
#pragma once
#include <cstdint>

#include "backends/sm80/work.h"
#include "core/fast_divmod.h"
#include "core/mask.h"
#include "core/params.h"

namespace flashband::sm80 {

struct Request {
  int request;    // index in the batch (custom masks: its bits start at mask_indptr[request])
  int qo_begin;   // first token of the request in Q/O
  int qo_len;
  int kv_len;
  int kv_first;   // contiguous: first K/V row; paged: first entry of page_indices
  int group;      // query heads per kv head
  int kv_head;
  int row_begin;  // first packed row of this CTA
  int split;
};

// When plan() had no workspace (single prefill without one), there are no device index
// arrays and no work list: request 0 spans max_qo_len x max_kv_len, and blocks are handed
// out per kv head, last row tile first (under causal masks the last tiles are longest).
// `group` divides by the query heads per kv head (the launch builds it once).
__device__ __forceinline__ Request load_request(const core::AttentionParams& p, const core::FastDivmod& group,
                                                int block_m) {
  Request r;
  r.group = group.divisor;
  if (p.work != nullptr) {
    const int4 w = reinterpret_cast<const int4*>(p.work)[blockIdx.x];
    const int b = w.x;
    r.request = b;
    r.kv_head = w.y;
    r.row_begin = w.z * block_m;
    r.split = w.w;
    r.qo_begin = p.qo_indptr[b];
    r.qo_len = p.qo_indptr[b + 1] - r.qo_begin;
    r.kv_len = p.kv_lens[b];
    r.kv_first = p.kv_indptr[b];
  } else {
    const int tiles = (p.max_qo_len * r.group + block_m - 1) / block_m;
    const int idx = static_cast<int>(blockIdx.x);
    r.kv_head = idx % p.num_kv_heads;
    r.row_begin = (tiles - 1 - idx / p.num_kv_heads) * block_m;
    r.split = 0;
    r.request = 0;
    r.qo_begin = 0;
    r.qo_len = p.max_qo_len;
    r.kv_len = p.max_kv_len;
    r.kv_first = 0;
  }
  return r;
}

// Number of CTAs of the no-workspace launch.
inline int implicit_grid(const core::AttentionParams& p, int block_m) {
  const int group = p.num_qo_heads / p.num_kv_heads;
  const int64_t tiles = (static_cast<int64_t>(p.max_qo_len) * group + block_m - 1) / block_m;
  return static_cast<int>(tiles * p.num_kv_heads);
}

// Records the first page index outside the pools (p.page_status: device page indices only).
// The word is mapped host memory the host also writes: system-scope atomics.
__device__ __noinline__ inline void report_bad_page(int* status, int entry, int64_t page) {
  if (atomicCAS_system(status, 0, 1) == 0) {
    status[1] = entry;
    status[2] = static_cast<int>(page);
    __threadfence_system();  // the host reads the word only once it is published
    atomicExch_system(status + 3, 1);
  }
}

// `page`, read from page_indices[entry], or page 0 after recording it when it lies outside
// the pools: an index the caller wrote into its device array is never dereferenced.
__device__ __forceinline__ int64_t checked_page(const core::AttentionParams& p, int entry, int64_t page) {
  if (p.page_status == nullptr || (page >= 0 && page < p.k_num_pages && page < p.v_num_pages)) return page;
  report_bad_page(p.page_status, entry, page);
  return 0;
}

// Element offsets of key `t` (< kv_len) of the request's kv head in K and in V. Holds two
// ints; strides and base pointers come from the kernel parameters (constant bank), which
// keeps registers free through the main loop.
template <bool kPaged>
struct KVRows {
  int kv_head;
  int first;  // contiguous: first row; paged: first entry of page_indices

  __device__ __forceinline__ KVRows(const core::AttentionParams&, const Request& r)
      : kv_head(r.kv_head), first(r.kv_first) {}

  __device__ __forceinline__ void offsets(const core::AttentionParams& p, int t, int64_t& k, int64_t& v) const {
    if constexpr (kPaged) {
      const int entry = first + t / p.page_size;
      const int64_t page = checked_page(p, entry, p.page_indices[entry]);
      const int64_t slot = t % p.page_size;
      k = page * p.k_stride_page + slot * p.k_stride_n + kv_head * p.k_stride_h;
      v = page * p.v_stride_page + slot * p.v_stride_n + kv_head * p.v_stride_h;
    } else {
      const int64_t row = first + t;
      k = row * p.k_stride_n + kv_head * p.k_stride_h;
      v = row * p.v_stride_n + kv_head * p.v_stride_h;
    }
  }
};

// Token (within the request) and query head of packed row `row`. `group` divides by
// r.group: the epilogue and the Q load ask this for every row they touch, and a division by
// a runtime value there was a large share of a short request's time (ncu, S = 512).
struct RowCoord {
  int token;
  int head;
};
__device__ __forceinline__ RowCoord row_coord(const Request& r, const core::FastDivmod& group, int row) {
  int token, slot;
  group.divmod(row, token, slot);
  return {token, r.kv_head * r.group + slot};
}

}  // namespace flashband::sm80
