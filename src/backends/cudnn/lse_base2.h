// cuDNN writes its softmax statistics as natural-log LSE; SPEC.md wants base 2. One small
// kernel multiplies them in place by log2(e) on the run's stream (-inf stays -inf).
#pragma once
#include <cstdint>

namespace flashband::cudnn_backend {

// lse [rows, heads] float32 with element strides; launches on `stream` (cudaStream_t), throws
// Error(kCudaError) when the launch fails.
void lse_natural_to_base2(float* lse, int64_t rows, int heads, int64_t stride_n, int64_t stride_h,
                          void* stream);

}  // namespace flashband::cudnn_backend
