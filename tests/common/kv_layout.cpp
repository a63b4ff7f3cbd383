#include "kv_layout.h"

#include <stdexcept>

#include "random.h"

namespace flashband::testing {

HostArray pack_contiguous(DType dtype, KVLayout layout, const RequestRows& rows,
                          const std::vector<int>& kv_lens, int num_kv_heads, int head_dim,
                          std::vector<int32_t>* kv_indptr) {
  const int Hk = num_kv_heads, D = head_dim;
  kv_indptr->assign(1, 0);
  for (int len : kv_lens) kv_indptr->push_back(kv_indptr->back() + len);
  const int64_t nnz = kv_indptr->back();
  HostArray a(dtype, nnz * Hk * D);
  for (std::size_t b = 0; b < kv_lens.size(); ++b) {
    const std::vector<double>& x = *rows[b];
    for (int t = 0; t < kv_lens[b]; ++t) {
      const int64_t n = (*kv_indptr)[b] + t;
      for (int h = 0; h < Hk; ++h) {
        const int64_t dst = layout == KVLayout::kNHD ? (n * Hk + h) * D : (h * nnz + n) * D;
        const int64_t src = (static_cast<int64_t>(t) * Hk + h) * D;
        for (int d = 0; d < D; ++d) a.set(dst + d, x[static_cast<std::size_t>(src + d)]);
      }
    }
  }
  return a;
}

PageTable assign_pages(const std::vector<int>& kv_lens, int page_size, uint64_t seed) {
  if (page_size < 1) throw std::invalid_argument("assign_pages: page_size must be >= 1");
  PageTable t;
  t.page_size = page_size;
  t.indptr.assign(1, 0);
  for (int len : kv_lens) {
    const int n = (len + page_size - 1) / page_size;
    t.indptr.push_back(t.indptr.back() + n);
    t.last_page_len.push_back(n == 0 ? 0 : len - (n - 1) * page_size);
  }
  t.num_pages = t.indptr.back() + kSparePages;
  const std::vector<int> perm = random_permutation(t.num_pages, seed);
  t.indices.assign(perm.begin(), perm.begin() + t.indptr.back());
  return t;
}

PagedCache pack_paged(DType dtype, KVLayout layout, bool stacked, const PageTable& pages,
                      const RequestRows& k_rows, const RequestRows& v_rows,
                      const std::vector<int>& kv_lens, int num_kv_heads, int head_dim, UnusedSlots unused) {
  const int Hk = num_kv_heads, D = head_dim, ps = pages.page_size;
  const int64_t page_elems = static_cast<int64_t>(ps) * Hk * D;
  const int64_t P = pages.num_pages;
  PagedCache c;
  c.stacked = stacked;
  c.k = HostArray(dtype, (stacked ? 2 : 1) * P * page_elems);
  c.k.fill_nan();
  if (!stacked) {
    c.v = HostArray(dtype, P * page_elems);
    c.v.fill_nan();
  }
  // Element offset of (page, slot, head, d) of K (which = 0) or V (which = 1).
  auto offset = [&](int which, int64_t page, int slot, int h, int d) -> int64_t {
    const int64_t in_page = layout == KVLayout::kNHD ? (static_cast<int64_t>(slot) * Hk + h) * D + d
                                                     : (static_cast<int64_t>(h) * ps + slot) * D + d;
    return stacked ? (page * 2 + which) * page_elems + in_page : page * page_elems + in_page;
  };
  for (std::size_t b = 0; b < kv_lens.size(); ++b) {
    // The last page's slots past kv_len, where a backend may read them under a weight of 0.
    const int used_slots = kv_lens[b] == 0 ? ps : (kv_lens[b] - 1) % ps + 1;
    if (unused == UnusedSlots::kFiniteInNamedPages && used_slots < ps) {
      const int64_t page = pages.indices[static_cast<std::size_t>(pages.indptr[b + 1] - 1)];
      for (int slot = used_slots; slot < ps; ++slot)
        for (int h = 0; h < Hk; ++h)
          for (int d = 0; d < D; ++d) {
            c.k.set(offset(0, page, slot, h, d), kPoison);
            (stacked ? c.k : c.v).set(offset(1, page, slot, h, d), kPoison);
          }
    }
    for (int t = 0; t < kv_lens[b]; ++t) {
      const int64_t page = pages.indices[static_cast<std::size_t>(pages.indptr[b] + t / ps)];
      const int slot = t % ps;
      for (int h = 0; h < Hk; ++h) {
        const std::size_t src = (static_cast<std::size_t>(t) * Hk + h) * D;
        for (int d = 0; d < D; ++d) {
          c.k.set(offset(0, page, slot, h, d), (*k_rows[b])[src + d]);
          (stacked ? c.k : c.v).set(offset(1, page, slot, h, d), (*v_rows[b])[src + d]);
        }
      }
    }
  }
  return c;
}

}  // namespace flashband::testing
