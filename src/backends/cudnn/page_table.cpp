#include "backends/cudnn/page_table.h"

#include <cstddef>
#include <string>

#include "flashband/error.h"

namespace flashband::cudnn_backend {

void fill_page_table(const std::vector<int32_t>& page_indptr, const std::vector<int32_t>& page_indices,
                     int batch, int width, int32_t* table) {
  const int32_t any_named = page_indices.empty() ? 0 : page_indices.front();
  for (int b = 0; b < batch; ++b) {
    const int first = page_indptr[b], pages = page_indptr[b + 1] - first;
    if (pages > width) {
      throw Error(ErrorCode::kInternal, "cudnn plan: request " + std::to_string(b) + " has " +
                                            std::to_string(pages) + " pages, page table width is " +
                                            std::to_string(width));
    }
    const int32_t pad = pages > 0 ? page_indices[first + pages - 1] : any_named;
    int32_t* row = table + static_cast<std::size_t>(b) * width;
    for (int j = 0; j < width; ++j) row[j] = j < pages ? page_indices[first + j] : pad;
  }
}

}  // namespace flashband::cudnn_backend
