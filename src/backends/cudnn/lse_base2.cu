#include <cuda_runtime.h>

#include <string>

#include "backends/cudnn/lse_base2.h"
#include "core/state.h"
#include "flashband/error.h"

namespace flashband::cudnn_backend {

namespace {

__global__ void natural_to_base2_kernel(float* lse, int64_t rows, int heads, int64_t stride_n,
                                        int64_t stride_h) {
  const int64_t total = rows * heads;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / heads;
    const int64_t h = i - r * heads;
    float* x = lse + r * stride_n + h * stride_h;
    *x *= core::kLog2e;
  }
}

}  // namespace

void lse_natural_to_base2(float* lse, int64_t rows, int heads, int64_t stride_n, int64_t stride_h,
                          void* stream) {
  const int64_t total = rows * heads;
  if (total <= 0) return;
  constexpr int kThreads = 256;
  // Enough blocks to fill any current GPU; the grid-stride loop covers the rest.
  const int64_t wanted = (total + kThreads - 1) / kThreads;
  const int blocks = static_cast<int>(wanted < 4096 ? wanted : 4096);
  natural_to_base2_kernel<<<blocks, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      lse, rows, heads, stride_n, stride_h);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    throw Error(ErrorCode::kCudaError,
                std::string("backend 'cudnn': LSE base-2 kernel launch failed: ") + cudaGetErrorString(err));
  }
}

}  // namespace flashband::cudnn_backend
