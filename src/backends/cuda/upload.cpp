#include "backends/cuda/upload.h"

#include <cstring>

#include "backends/cuda/check.h"
#include "backends/cuda/pinned_staging.h"

namespace flashband::cuda {

std::size_t IndexBlob::append(const void* data, std::size_t bytes) {
  const std::size_t offset = align_up(bytes_.size());
  bytes_.resize(offset + bytes);
  if (bytes > 0) std::memcpy(bytes_.data() + offset, data, bytes);
  bytes_.resize(align_up(bytes_.size()));
  return offset;
}

void upload_async(void* device_dst, const IndexBlob& blob, void* stream) {
  copy_to_device_async(device_dst, blob.data(), blob.size(), stream);
}

}  // namespace flashband::cuda
