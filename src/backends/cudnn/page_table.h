// cuDNN's paged graphs take a dense [batch, width] page table. Its slots past a request's
// pages are still read: cuDNN loads whole key tiles and gives the rows past kv_len a weight
// of 0, and 0 times a NaN or inf in such a row is NaN. So they repeat the request's last
// page, never a page the caller did not name (page 0 of a serving pool may be free memory
// holding anything). The unused slots of named pages must be finite (README, paged cache).
#pragma once
#include <cstdint>
#include <vector>

namespace flashband::cudnn_backend {

// Row b of `table` (width slots) from page_indices[page_indptr[b] .. page_indptr[b + 1]);
// the rest of the row repeats its last page, and an empty request's row repeats the
// batch's first named page (0 when no request names one). Throws when a request has more
// pages than width.
void fill_page_table(const std::vector<int32_t>& page_indptr, const std::vector<int32_t>& page_indices,
                     int batch, int width, int32_t* table);

}  // namespace flashband::cudnn_backend
