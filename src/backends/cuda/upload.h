// Carving the caller's workspace into aligned regions, and copying a plan's host index
// arrays into it in one cudaMemcpyAsync. Shared by every CUDA backend's planner.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace flashband::cuda {

constexpr std::size_t kRegionAlign = 256;

constexpr std::size_t align_up(std::size_t n, std::size_t a = kRegionAlign) { return (n + a - 1) / a * a; }

// Host staging for everything a plan uploads: arrays are appended at aligned offsets and the
// whole blob goes to the start of the workspace in one copy.
class IndexBlob {
 public:
  // Returns the byte offset of the array inside the blob (and so inside the workspace).
  std::size_t append(const void* data, std::size_t bytes);
  std::size_t append(const std::vector<int32_t>& v) { return append(v.data(), v.size() * sizeof(int32_t)); }
  std::size_t size() const { return bytes_.size(); }
  const unsigned char* data() const { return bytes_.data(); }

 private:
  std::vector<unsigned char> bytes_;
};

// cudaMemcpyAsync host->device on `stream` (a cudaStream_t), checked. The source is pageable,
// so the call returns once the bytes are staged and `blob` may be freed afterwards.
void upload_async(void* device_dst, const IndexBlob& blob, void* stream);

}  // namespace flashband::cuda
