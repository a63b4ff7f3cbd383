#include "plan/page_status.h"

#include <string>

#include "flashband/config.h"
#include "flashband/error.h"
#if FLASHBAND_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace flashband::detail {

#if FLASHBAND_WITH_CUDA
namespace {
void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess)
    throw Error(ErrorCode::kCudaError, std::string("paged_kv_indices (device): ") + what + ": " + cudaGetErrorString(err));
}
}  // namespace

PageStatus::PageStatus(int device_id) {
  int previous = 0;
  check(cudaGetDevice(&previous), "cudaGetDevice");
  check(cudaSetDevice(device_id), "cudaSetDevice");
  const cudaError_t err = cudaHostAlloc(reinterpret_cast<void**>(&host_), 4 * sizeof(int),
                                        cudaHostAllocMapped | cudaHostAllocPortable);
  cudaSetDevice(previous);
  check(err, "cudaHostAlloc of the status word");
  for (int i = 0; i < 4; ++i) host_[i] = 0;
  check(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_), host_, 0), "cudaHostGetDevicePointer");
}

PageStatus::~PageStatus() { cudaFreeHost(host_); }

void PageStatus::raise_if_set() const {
  volatile int* w = host_;
  if (w[3] == 0) return;
  const int entry = w[1], page = w[2];
  w[3] = 0;
  w[0] = 0;  // a later run may claim the word again
  throw Error(ErrorCode::kInvalidArgument,
              "paged_kv_indices: a run read entry " + std::to_string(entry) + " of the device page-index array = " +
                  std::to_string(page) + ", outside the paged cache's pages; it read page 0 instead, so that "
                  "run's output is wrong");
}
#else
PageStatus::PageStatus(int) {
  throw Error(ErrorCode::kNotBuilt, "paged_kv_indices (device): this build has no CUDA backend");
}
PageStatus::~PageStatus() = default;
void PageStatus::raise_if_set() const {}
#endif

}  // namespace flashband::detail
