#include "backends/cuda/pinned_staging.h"

#include <cuda_runtime_api.h>

#include <cstring>
#include <mutex>
#include <vector>

#include "backends/cuda/check.h"
#include "flashband/error.h"

namespace flashband::cuda {
namespace {

struct Block {
  int device = -1;  // -1: retired (its last copy may still be queued), never handed out again
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

// Clears the thread's last error only where it is the one this file's call just left, so an
// error of the caller's own (an earlier launch) is not swallowed.
void clear_own(cudaError_t err) {
  if (err != cudaSuccess && cudaPeekAtLastError() == err) cudaGetLastError();
}

// Whether the block's last copy has run. Anything but a clear yes counts as busy.
bool copy_has_run(cudaEvent_t e) {
  const cudaError_t status = cudaEventQuery(e);
  clear_own(status);
  return status == cudaSuccess;
}

// The smallest free block of at least `bytes` on `device`, or null when none can be had.
Block* free_block(int device, std::size_t bytes) {
  Block* best = nullptr;
  for (Block& b : g_blocks)
    if (b.device == device && b.bytes >= bytes && (!best || b.bytes < best->bytes) && copy_has_run(b.copied))
      best = &b;
  if (best || g_blocks.size() >= kMaxBlocks) return best;
  std::size_t size = kMinBlockBytes;
  while (size < bytes) size *= 2;
  Block b;
  b.device = device;
  b.bytes = size;
  const cudaError_t alloc = cudaHostAlloc(&b.host, size, cudaHostAllocPortable);
  if (alloc != cudaSuccess) {
    clear_own(alloc);  // no pinned memory to spare: copy directly instead
    return nullptr;
  }
  const cudaError_t event = cudaEventCreateWithFlags(&b.copied, cudaEventDisableTiming);
  if (event != cudaSuccess) {
    clear_own(event);
    cudaFreeHost(b.host);
    return nullptr;
  }
  g_blocks.push_back(b);
  return &g_blocks.back();
}

// The pool's own calls (event queries, pinned allocations) are legal while another stream
// of the process captures a graph only in relaxed mode; torch.cuda.graph captures in global
// mode, where they would end that capture.
class RelaxedCaptureMode {
 public:
  RelaxedCaptureMode() { cudaThreadExchangeStreamCaptureMode(&mode_); }
  ~RelaxedCaptureMode() { cudaThreadExchangeStreamCaptureMode(&mode_); }

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
};

}  // namespace

void copy_to_device_async(void* dst, const void* src, std::size_t bytes, void* stream) {
  if (bytes == 0) return;
  const auto s = static_cast<cudaStream_t>(stream);
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  FB_CUDA_CHECK(cudaStreamIsCapturing(s, &capture));
  if (capture != cudaStreamCaptureStatusNone)
    throw Error(ErrorCode::kInvalidArgument,
                "stream: plan() was called on a stream that is capturing a CUDA graph; plan before the "
                "capture and capture run() only (FlashInfer's pattern), with cuda_graph set");
  int current = -1, of_stream = -1;
  FB_CUDA_CHECK(cudaGetDevice(&current));
  FB_CUDA_CHECK(cudaStreamGetDevice(s, &of_stream));
  if (of_stream == current) {  // an event must be recorded on the stream's own device
    RelaxedCaptureMode relaxed;
    std::lock_guard<std::mutex> lock(g_mutex);
    if (Block* b = free_block(current, bytes)) {
      std::memcpy(b->host, src, bytes);
      FB_CUDA_CHECK(cudaMemcpyAsync(dst, b->host, bytes, cudaMemcpyHostToDevice, s));
      const cudaError_t recorded = cudaEventRecord(b->copied, s);
      if (recorded != cudaSuccess) {
        b->device = -1;  // the queued copy may still read it: never reuse this block
        FB_CUDA_CHECK(recorded);
      }
      return;
    }
  }
  // Pageable source: CUDA stages it before returning, so `src` may be freed afterwards.
  FB_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s));
}

std::size_t pinned_staging_blocks() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_blocks.size();
}

}  // namespace flashband::cuda
