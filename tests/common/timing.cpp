#include "timing.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "device_buffer.h"
#include "flashband/config.h"

#if FLASHBAND_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace flashband::testing {

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
}  // namespace

double median_ms(Device device, int warmup_iters, int timed_iters, const std::function<void()>& fn) {
  if (timed_iters <= 0) throw std::invalid_argument("median_ms: timed_iters must be positive");
  for (int i = 0; i < warmup_iters; ++i) fn();
  synchronize(device);
  std::vector<double> ms;
  ms.reserve(static_cast<std::size_t>(timed_iters));
  if (device == Device::kCPU) {
    for (int i = 0; i < timed_iters; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      fn();
      const auto t1 = std::chrono::steady_clock::now();
      ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    return median(ms);
  }
#if FLASHBAND_WITH_CUDA
  auto check = [](cudaError_t e, const char* what) {
    if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
  };
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  try {
    for (int i = 0; i < timed_iters; ++i) {
      check(cudaEventRecord(start), "cudaEventRecord");
      fn();
      check(cudaEventRecord(stop), "cudaEventRecord");
      check(cudaEventSynchronize(stop), "cudaEventSynchronize");
      float t = 0.0f;
      check(cudaEventElapsedTime(&t, start, stop), "cudaEventElapsedTime");
      ms.push_back(t);
    }
  } catch (...) {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    throw;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return median(ms);
#else
  throw std::runtime_error("median_ms: this build has no GPU backend");
#endif
}

}  // namespace flashband::testing
