#include "gpu_backends.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <utility>

#include "core/mask.h"
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

ProblemDesc problem_of(const Case& c) {
  ProblemDesc d;
  switch (c.entry) {
    case EntryPoint::kSingle: d.op = Op::kSinglePrefill; break;
    case EntryPoint::kRagged: d.op = Op::kRaggedPrefill; break;
    case EntryPoint::kPaged: d.op = Op::kPagedPrefill; break;
    case EntryPoint::kDecode: d.op = Op::kPagedDecode; break;
  }
  d.dtype = c.dtype;
  d.device = c.device;
  d.head_dim = c.head_dim;
  d.num_qo_heads = c.num_qo_heads;
  d.num_kv_heads = c.num_kv_heads;
  d.causal = c.causal;
  int max_kv = 0;
  for (int k : c.kv_lens) max_kv = std::max(max_kv, k);
  d.window_left = core::normalize_window(c.window_left, max_kv);
  d.max_kv_len = max_kv;
  d.soft_cap = c.logits_soft_cap > 0.0f;
  d.return_lse = c.return_lse;
  d.kv_layout = c.layout;
  d.page_size = (c.entry == EntryPoint::kPaged || c.entry == EntryPoint::kDecode) ? c.page_size : 0;
  for (std::size_t b = 0; b < c.kv_lens.size(); ++b) {
    const int qo = c.entry == EntryPoint::kDecode ? 1 : c.qo_lens[b];
    const int kv = c.kv_lens[b];
    if (qo > 0 && (kv == 0 || (c.causal && qo > kv))) d.has_empty_rows = true;
    if (qo > kv) d.qo_longer_than_kv = true;
  }
  return d;
}

Case on_backend(Case c, Backend b) {
  c.backend = b;
  c.device = Device::kCUDA;
  return c;
}

std::string param_name(Backend b, const Case& c) { return on_backend(c, b).name(); }

}  // namespace flashband::testing
