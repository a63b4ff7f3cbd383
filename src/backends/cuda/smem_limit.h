// Raising a kernel's dynamic shared-memory limit above the 48 KB default, once per kernel
// and device (cudaFuncSetAttribute is a driver call; run() should not repeat it).
#pragma once
#include <atomic>
#include <cstdint>
#include <string>

#include "backends/cuda/check.h"
#include "backends/cuda/device_info.h"
#include "flashband/error.h"

namespace flashband::cuda {

// One per kernel instantiation (a function-local static in its launcher): bit d is set once
// device d has the limit raised.
class SmemLimit {
 public:
  void ensure(const void* kernel, int bytes, const char* kernel_name) {
    const int device = current_device();
    const uint64_t bit = uint64_t{1} << (device & 63);
    if (done_.load(std::memory_order_acquire) & bit) return;
    const int limit = max_shared_memory_per_block(device);
    if (bytes > limit)
      throw Error(ErrorCode::kUnsupported, std::string(kernel_name) + " needs " + std::to_string(bytes) +
                                               " bytes of shared memory per block; device " + std::to_string(device) +
                                               " allows " + std::to_string(limit));
    if (bytes > 48 * 1024)
      FB_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    done_.fetch_or(bit, std::memory_order_release);
  }

 private:
  std::atomic<uint64_t> done_{0};
};

}  // namespace flashband::cuda
