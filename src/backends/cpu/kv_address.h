// Where the tokens of one request live, for both K/V storages of core::AttentionParams:
// contiguous (token t at row kv_indptr[b] + t) and paged (token t at slot t % page_size of
// page page_indices[kv_indptr[b] + t / page_size]). Offsets are in elements.
#pragma once
#include <cstdint>

#include "core/params.h"

namespace flashband::cpu {

inline int request_qo_len(const core::AttentionParams& p, int b) {
  return p.qo_indptr[b + 1] - p.qo_indptr[b];
}

// kv_lens comes from plan(); without it the length follows from the index arrays.
inline int request_kv_len(const core::AttentionParams& p, int b) {
  if (p.kv_lens != nullptr) return p.kv_lens[b];
  const int n = p.kv_indptr[b + 1] - p.kv_indptr[b];
  if (p.kv_storage == core::KVStorage::kContiguous) return n;
  return n == 0 ? 0 : (n - 1) * p.page_size + p.last_page_len[b];
}

class RequestKV {
 public:
  RequestKV(const core::AttentionParams& p, int b) : p_(p), first_(p.kv_indptr[b]) {}

  int64_t k_offset(int token, int head) const {
    return row_base(token, p_.k_stride_page, p_.k_stride_n) + head * p_.k_stride_h;
  }
  int64_t v_offset(int token, int head) const {
    return row_base(token, p_.v_stride_page, p_.v_stride_n) + head * p_.v_stride_h;
  }

 private:
  int64_t row_base(int token, int64_t stride_page, int64_t stride_n) const {
    if (p_.kv_storage == core::KVStorage::kContiguous)
      return static_cast<int64_t>(first_ + token) * stride_n;
    const int64_t page = p_.page_indices[first_ + token / p_.page_size];
    return page * stride_page + static_cast<int64_t>(token % p_.page_size) * stride_n;
  }

  const core::AttentionParams& p_;
  int first_;
};

}  // namespace flashband::cpu
