// How a case lays out K and V in memory for each entry point: contiguous ragged (NHD or HND)
// and paged caches whose pages are handed out in a shuffled, non-contiguous order, with a
// partially filled last page and a few pages that no request uses.
#pragma once
#include <cstdint>
#include <vector>

#include "dtype_values.h"
#include "flashband/options.h"

namespace flashband::testing {

// Per-request K or V in the oracle's layout: [kv_len, Hk, D] doubles.
using RequestRows = std::vector<const std::vector<double>*>;

// All requests' rows back to back: NHD [nnz, Hk, D] or HND [Hk, nnz, D]. kv_indptr gets the
// CSR offsets.
HostArray pack_contiguous(DType dtype, KVLayout layout, const RequestRows& rows,
                          const std::vector<int>& kv_lens, int num_kv_heads, int head_dim,
                          std::vector<int32_t>* kv_indptr);

struct PageTable {
  int page_size = 0;
  int num_pages = 0;                   // pages in the cache, used or not
  std::vector<int32_t> indptr;         // [batch + 1]
  std::vector<int32_t> indices;        // [indptr[batch]]
  std::vector<int32_t> last_page_len;  // [batch]; 0 for a request without pages
};

// ceil(kv_len / page_size) pages per request, taken from a shuffled permutation of
// num_pages = used + kSparePages pages.
PageTable assign_pages(const std::vector<int>& kv_lens, int page_size, uint64_t seed);
constexpr int kSparePages = 3;

// A finite poison (UnusedSlots below): a kernel that reads it with a weight other than 0
// gets a huge logit or value and fails the comparison, while a kernel that loads a whole
// page and masks correctly (p = 0 times a finite value) is unaffected.
constexpr double kPoison = 100.0;

// A paged cache holding K and V: separate tensors [P, ps, Hk, D] (NHD) / [P, Hk, ps, D]
// (HND), or one stacked tensor [P, 2, ...] with K at index 0 and V at index 1.
struct PagedCache {
  bool stacked = false;
  HostArray k;   // separate: K; stacked: the whole [P, 2, ...] tensor
  HostArray v;   // separate only
};

// What the slots no token occupies hold. Pages no request names are never read (README,
// paged cache): they hold NaN, which any read shows, even one under a weight of 0. The
// slots of a request's last page past its kv_len hold NaN too where the backend never
// loads rows past kv_len (kNaN), or kPoison where it may load whole pages or key tiles
// and weigh those rows 0 (kFiniteInNamedPages: cuDNN), which then shows any read with a
// weight other than 0.
enum class UnusedSlots { kNaN, kFiniteInNamedPages };

PagedCache pack_paged(DType dtype, KVLayout layout, bool stacked, const PageTable& pages,
                      const RequestRows& k_rows, const RequestRows& v_rows,
                      const std::vector<int>& kv_lens, int num_kv_heads, int head_dim,
                      UnusedSlots unused = UnusedSlots::kNaN);

}  // namespace flashband::testing
