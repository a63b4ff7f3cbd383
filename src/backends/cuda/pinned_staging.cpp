#include "backends/cuda/pinned_staging.h"

#include <cuda_runtime_api.h>

#include <cstring>
#include <mutex>
#include <vector>

#include "backends/cuda/check.h"

namespace flashband::cuda {
namespace {

struct Block {
  int device = -1;
  void* host = nullptr;
  std::size_t bytes = 0;
  cudaEvent_t copied = nullptr;  // recorded behind the last copy that read this block
};

// Blocks live for the process: in-flight copies may read them at any time. The count is
// bounded by how many plans' copies are in flight at once; past the cap, copies go direct.
constexpr std::size_t kMaxBlocks = 64;
constexpr std::size_t kMinBlockBytes = 64 << 10;

std::mutex g_mutex;
std::vector<Block> g_blocks;

bool copy_has_run(cudaEvent_t e) {
  const cudaError_t status = cudaEventQuery(e);
  if (status == cudaSuccess) return true;
  // A query's "not ready" must not linger as the thread's last error, where the next
  // launch check would read it.
  if (cudaPeekAtLastError() == cudaErrorNotReady) cudaGetLastError();
  if (status != cudaErrorNotReady) FB_CUDA_CHECK(status);
  return false;
}

// A free block of at least `bytes` on `device`, or null when none can be had.
Block* free_block(int device, std::size_t bytes) {
  for (Block& b : g_blocks)
    if (b.device == device && b.bytes >= bytes && copy_has_run(b.copied)) return &b;
  if (g_blocks.size() >= kMaxBlocks) return nullptr;
  std::size_t size = kMinBlockBytes;
  while (size < bytes) size *= 2;
  Block b;
  b.device = device;
  b.bytes = size;
  if (cudaHostAlloc(&b.host, size, cudaHostAllocPortable) != cudaSuccess) {
    cudaGetLastError();  // no pinned memory to spare: copy directly instead
    return nullptr;
  }
  if (cudaEventCreateWithFlags(&b.copied, cudaEventDisableTiming) != cudaSuccess) {
    cudaGetLastError();
    cudaFreeHost(b.host);
    return nullptr;
  }
  g_blocks.push_back(b);
  return &g_blocks.back();
}

// Staging needs an event on the stream's device, recorded outside any capture; the device
// is the current one (the planners set it), or -1 when staging does not apply.
int staging_device(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  int current = -1, of_stream = -1;
  if (cudaStreamIsCapturing(stream, &status) != cudaSuccess || cudaGetDevice(&current) != cudaSuccess ||
      cudaStreamGetDevice(stream, &of_stream) != cudaSuccess) {
    cudaGetLastError();
    return -1;  // unknown: take the direct path, which never reuses memory
  }
  return status == cudaStreamCaptureStatusNone && of_stream == current ? current : -1;
}

}  // namespace

void copy_to_device_async(void* dst, const void* src, std::size_t bytes, void* stream) {
  if (bytes == 0) return;
  const auto s = static_cast<cudaStream_t>(stream);
  const int device = staging_device(s);
  if (device >= 0) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (Block* b = free_block(device, bytes)) {
      std::memcpy(b->host, src, bytes);
      FB_CUDA_CHECK(cudaMemcpyAsync(dst, b->host, bytes, cudaMemcpyHostToDevice, s));
      FB_CUDA_CHECK(cudaEventRecord(b->copied, s));
      return;
    }
  }
  FB_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s));
}

std::size_t pinned_staging_blocks() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_blocks.size();
}

}  // namespace flashband::cuda
