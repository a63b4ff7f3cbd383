// The one argument of the sm90 prefill kernel, passed as a __grid_constant__ so that the
// TMA descriptors inside it stay in parameter memory (TMA reads them from there).
#pragma once
#include <cuda.h>  // CUtensorMap (a plain struct; nothing from libcuda is linked)

#include <cstdint>

#include "backends/sm90/work_list.h"
#include "core/fast_divmod.h"

namespace flashband::sm90 {

struct KernelParams {
  // Tensor maps over the whole token-major tensors, rank 3: (D, tokens, heads) with the
  // tensor's own strides, so NHD and HND are the same map; 128-byte swizzled boxes of 64
  // columns. Paged K/V with paged_tma_rows > 0: tma_k / tma_v are rank-4 maps over the page
  // pools (head_dim, slot, head, page) with boxes of paged_tma_rows slots.
  CUtensorMap tma_q;
  CUtensorMap tma_k;
  CUtensorMap tma_v;

  void* o = nullptr;  // [tokens, Hq, D] of the kernel's element type
  int64_t o_stride_n = 0, o_stride_h = 0;  // multiples of 8 elements, o 16-byte aligned
  float* lse = nullptr;  // [tokens, Hq] base 2, or nullptr
  int64_t lse_stride_n = 0, lse_stride_h = 0;
  // [Hq] attention sinks (natural log), folded into each finished row once (epilogue.h; a
  // split-KV item's partial leaves it to the merge), or nullptr.
  const float* sinks = nullptr;

  // Paged K/V (cp.async gathers): token t of a request is slot t % page_size of page
  // page_indices[item.kv_start + t / page_size].
  const void* k = nullptr;
  const void* v = nullptr;
  int64_t k_stride_page = 0, k_stride_n = 0, k_stride_h = 0;
  int64_t v_stride_page = 0, v_stride_n = 0, v_stride_h = 0;
  const int32_t* page_indices = nullptr;
  int page_size = 0;
  int page_shift = -1;  // log2(page_size) when it is a power of two, else -1
  // > 0: full KV tiles are loaded by TMA, one box of this many rows per page (pages of a
  // power-of-two size >= kMinTmaPageSize); the tile holding kv_len's end is still gathered
  // with cp.async, which zero-fills the rows past it. 0: every tile is gathered.
  int paged_tma_rows = 0;

  // Work: either a list from the planner, or (items == nullptr) one request whose query
  // tiles are derived in the kernel, last tile first.
  const WorkItem* items = nullptr;
  int num_items = 0;
  int single_qo_len = 0;
  int single_kv_len = 0;
  int num_units = 0;  // num_items * num_qo_heads

  int num_qo_heads = 0;
  // Divisors for a unit's item and head, and for a query head's KV head (group_div divides
  // by num_qo_heads / num_kv_heads): divisions at every unit start, on the path between two
  // ping-pong turns.
  core::FastDivmod qo_heads_div;
  core::FastDivmod group_div;

  // Packed custom mask (custom_mask.h; runtime-mask kernels only), or nullptr: the run()
  // tensor of mask_bytes bytes, and each work item's byte offset of its request's bits
  // (nullptr: one request without a list, offset 0).
  const uint8_t* custom_mask = nullptr;
  const int64_t* mask_offsets = nullptr;
  int64_t mask_bytes = 0;

  bool causal = false;
  int window_left = -1;
  int window_right = -1;  // >= 1 or -1 (core::MaskSpec): the runtime-mask kernels' right bound
  // Logits in base-2 units are s * scale_log2 without a soft cap, and
  // tanh(s * softcap_pre) * scale_log2 with one (softcap_pre = sm_scale / cap,
  // scale_log2 = cap * log2 e).
  float scale_log2 = 0.0f;
  float softcap_pre = 0.0f;  // 0: no soft cap

  // fp8 K/V (kFp8KV kernels; SPEC.md "Quantized KV"): kv_e5m2 picks the format the producer
  // decodes (else e4m3). A float k_scale is in scale_log2 / softcap_pre already; a device
  // k_scale_ptr is read once per CTA by the consumers and multiplied in there. O is
  // multiplied by v_scale (the float scale, or 1 where v_scale_ptr is given), times
  // *v_scale_ptr. Both carry the conversion's folded power of two (fp8_bits.h kScaleFold).
  bool kv_e5m2 = false;
  const float* k_scale_ptr = nullptr;
  const float* v_scale_ptr = nullptr;
  float v_scale = 1.0f;

  // Split-KV partial states (items with split >= 0):
  // partial_o [tokens, num_splits, Hq, D] float32, partial_lse [tokens, num_splits, Hq].
  float* partial_o = nullptr;
  float* partial_lse = nullptr;
  int num_splits = 1;

#if FLASHBAND_SM90_TRACE
  // Measurement builds only (trace.h): the event buffer, its words per lane, this launch's
  // number.
  uint32_t* trace = nullptr;
  int trace_capacity = 0;
  int trace_launch = 0;
#endif
};

}  // namespace flashband::sm90
