// AttentionParams: the one description of a launch that every backend's kernels receive.
// All four entry points reduce to it: a batch of requests whose queries are CSR rows of a
// token-major Q/O and whose keys live either in a ragged (contiguous) KV or in pages.
// Strides are in elements, so NHD and HND are the same code with different strides.
#pragma once
#include <cstddef>
#include <cstdint>

#include "flashband/capability.h"
#include "flashband/tensor.h"

namespace flashband::core {

enum class KVStorage { kContiguous, kPaged };

struct AttentionParams {
  Op op = Op::kSinglePrefill;
  DType dtype = DType::kBF16;  // of q (and of k and v unless kv_dtype says otherwise)
  // Of o: dtype, except for fp8 attention (dtype kE4M3), whose output is fp16 or bf16.
  DType o_dtype = DType::kBF16;
  // K and V storage: dtype, or an fp8 format (kE4M3, kE5M2) dequantized by the kernel with
  // per-tensor scales: s = (q . k8) * k_scale * sm_scale, o = (P . v8) * v_scale. A non-null
  // *_scale_ptr (one float32 in the backend's memory) is read at run time and wins over the
  // float, so a captured graph replays with a new scale.
  DType kv_dtype = DType::kBF16;
  float k_scale = 1.0f, v_scale = 1.0f;
  const float* k_scale_ptr = nullptr;
  const float* v_scale_ptr = nullptr;
  // fp8 attention (dtype kE4M3): s = (q8 . k8) * q_scale * k_scale * sm_scale, and P is
  // quantized to e4m3 for P.V (SPEC.md "fp8 attention"). 1.0 and null otherwise.
  float q_scale = 1.0f;
  const float* q_scale_ptr = nullptr;
  int batch = 0;
  int num_qo_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;

  // Q and O: [total_qo_tokens, Hq, D] with these strides (last dim contiguous).
  const void* q = nullptr;
  int64_t q_stride_n = 0, q_stride_h = 0;
  void* o = nullptr;
  int64_t o_stride_n = 0, o_stride_h = 0;
  // LSE: [total_qo_tokens, Hq] float32, base 2; nullptr when not requested.
  float* lse = nullptr;
  int64_t lse_stride_n = 0, lse_stride_h = 0;

  // K and V. Contiguous: token t of request b is at kv_indptr[b] + t, stride_n apart.
  // Paged: token t is slot t % page_size of page page_indices[kv_indptr[b] + t / page_size].
  KVStorage kv_storage = KVStorage::kContiguous;
  const void* k = nullptr;
  const void* v = nullptr;
  int64_t k_stride_page = 0, k_stride_n = 0, k_stride_h = 0;
  int64_t v_stride_page = 0, v_stride_n = 0, v_stride_h = 0;
  int page_size = 0;
  int64_t k_num_pages = 0, v_num_pages = 0;  // paged: pages in each pool (its first dimension)

  // Per-request index arrays, in the memory of the backend that runs (host for cpu).
  const int32_t* qo_indptr = nullptr;      // [batch + 1]
  const int32_t* kv_indptr = nullptr;      // [batch + 1]: token offsets, or page offsets when paged
  const int32_t* page_indices = nullptr;   // paged only
  const int32_t* last_page_len = nullptr;  // paged only, [batch]
  const int32_t* kv_lens = nullptr;        // [batch], derived by plan() for both storages
  // Set when page_indices is the caller's device array (PagedIndex::device_indices): the
  // kernels then check each index against the pools and record the first bad one here
  // ([claimed, entry, page, published], mapped host memory) instead of dereferencing it.
  int* page_status = nullptr;

  // Semantics (window already normalised; sm_scale already defaulted).
  bool causal = false;
  int window_left = -1;
  // j <= p(i) + window_right, >= 1 or -1 (none): plans express the right bound 0 as causal
  // and give window_right -1 with causal (core/mask.h).
  int window_right = -1;
  float logits_soft_cap = 0.0f;
  float sm_scale = 1.0f;
  // Attention sinks: [num_qo_heads] float32 in the backend's memory (natural-log domain,
  // SPEC.md), folded into each row's denominator once, after the KV loop and any split-KV
  // merge; nullptr: none. A run() tensor, bound like q.
  const float* sinks = nullptr;
  // Custom mask (SPEC.md "Custom masks"): every request's packed bits, request b's starting
  // at byte mask_indptr[b] (derived by plan() from the lengths, in the backend's memory);
  // custom_mask is run()'s tensor, like q; nullptr: none.
  const uint8_t* custom_mask = nullptr;
  const int64_t* mask_indptr = nullptr;

  // Host-side maxima from plan(), for grid sizing without reading device memory.
  int max_qo_len = 0;
  int max_kv_len = 0;
  int64_t total_qo_tokens = 0;

  // Backend-specific work partition written by the backend's planner into the workspace
  // (opaque here), and the rest of the workspace for split-KV partial results.
  const void* work = nullptr;
  int num_work_items = 0;
  int num_kv_splits = 1;
  void* scratch = nullptr;
  std::size_t scratch_bytes = 0;

  void* stream = nullptr;  // cudaStream_t
};

}  // namespace flashband::core
