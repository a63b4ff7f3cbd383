#include "backends/cuda/device_info.h"

#include <atomic>
#include <string>

#include "backends/cuda/check.h"
#include "flashband/error.h"

namespace flashband::cuda {

namespace {

constexpr int kMaxDevices = 64;

// 0 = not read yet; device attributes never change while the process runs.
int cached_attribute(std::atomic<int> (&cache)[kMaxDevices], cudaDeviceAttr attr, int device) {
  if (device < 0 || device >= kMaxDevices)
    throw Error(ErrorCode::kInvalidArgument,
                "device_id: got " + std::to_string(device) + ", allowed: 0.." + std::to_string(kMaxDevices - 1));
  int v = cache[device].load(std::memory_order_relaxed);
  if (v == 0) {
    FB_CUDA_CHECK(cudaDeviceGetAttribute(&v, attr, device));
    cache[device].store(v, std::memory_order_relaxed);
  }
  return v;
}

}  // namespace

int current_device() {
  int d = 0;
  FB_CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

int multiprocessor_count(int device) {
  static std::atomic<int> cache[kMaxDevices];
  return cached_attribute(cache, cudaDevAttrMultiProcessorCount, device);
}

int max_shared_memory_per_block(int device) {
  static std::atomic<int> cache[kMaxDevices];
  return cached_attribute(cache, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
}

}  // namespace flashband::cuda
