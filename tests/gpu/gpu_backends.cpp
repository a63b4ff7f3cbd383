#include "gpu_backends.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <utility>

#include "flashband/config.h"

namespace flashband::testing {

Case make_case(EntryPoint e, std::vector<int> qo, std::vector<int> kv, int hq, int hk, int d, DType dt, bool causal,
               int window) {
  Case c;
  c.entry = e;
  c.qo_lens = e == EntryPoint::kDecode ? std::vector<int>(kv.size(), 1) : std::move(qo);
  c.kv_lens = std::move(kv);
  c.num_qo_heads = hq;
  c.num_kv_heads = hk;
  c.head_dim = d;
  c.dtype = dt;
  c.causal = causal;
  c.window_left = window;
  return c;
}

std::vector<Backend> gpu_test_backends() {
  // Every GPU backend this build contains; a case a backend does not claim is skipped.
  std::vector<Backend> b = {Backend::kSM80};
#if FLASHBAND_WITH_SM90
  b.push_back(Backend::kSM90);
#endif
#if FLASHBAND_WITH_CUDNN
  b.push_back(Backend::kCUDNN);
#endif
  return b;
}

std::string cuda_unavailable_reason() {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) return std::string("cudaGetDeviceCount: ") + cudaGetErrorString(err);
  if (n == 0) return "cudaGetDeviceCount found none";
  int major = 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
  if (major < 8) return "device 0 has compute capability " + std::to_string(major) + ".x, need >= 8.0";
  return {};
}

Case on_backend(Case c, Backend b) {
  c.backend = b;
  c.device = Device::kCUDA;
  return c;
}

std::string param_name(Backend b, const Case& c) { return on_backend(c, b).name(); }

}  // namespace flashband::testing
