// FB_HD marks functions shared by host code and CUDA kernels.
#pragma once
#if defined(__CUDACC__)
#define FB_HD __host__ __device__ __forceinline__
#else
#define FB_HD inline
#endif
