// CUDA runtime failures become flashband::Error(kCudaError) whose message names the call,
// the error and where it was made, so a failed launch reads like any other bad argument.
#pragma once
#include <cuda_runtime_api.h>

namespace flashband::cuda {

[[noreturn]] void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line);

inline void check(cudaError_t err, const char* call, const char* file, int line) {
  if (err != cudaSuccess) throw_cuda_error(err, call, file, line);
}

// After a kernel launch: reports (and clears) a launch error such as a bad configuration or
// too much shared memory. Never synchronises, so it is safe inside run() and graph capture.
void check_launch(const char* kernel, const char* file, int line);

}  // namespace flashband::cuda

#define FB_CUDA_CHECK(call) ::flashband::cuda::check((call), #call, __FILE__, __LINE__)
#define FB_CUDA_CHECK_LAUNCH(kernel_name) ::flashband::cuda::check_launch((kernel_name), __FILE__, __LINE__)
