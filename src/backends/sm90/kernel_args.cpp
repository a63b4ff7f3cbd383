#include "backends/sm90/kernel_args.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "backends/sm80/fp8_bits.h"
#include "backends/sm90/tensor_map.h"
#include "backends/sm90/tile_shapes.h"
#include "backends/sm90/trace.h"
#include "core/mask.h"
#include "core/state.h"
#include "flashband/error.h"

namespace flashband::sm90 {

namespace {

// The power of two the fp8 conversion leaves in K and V for q's dtype (fp8_bits.h kScaleFold).
float fp8_scale_fold(DType q, DType kv) {
  using sm80::Fp8Bits;
  if (kv == DType::kE4M3)
    return q == DType::kF16 ? Fp8Bits<DType::kF16, DType::kE4M3>::kScaleFold
                            : Fp8Bits<DType::kBF16, DType::kE4M3>::kScaleFold;
  return q == DType::kF16 ? Fp8Bits<DType::kF16, DType::kE5M2>::kScaleFold
                          : Fp8Bits<DType::kBF16, DType::kE5M2>::kScaleFold;
}

}  // namespace

const PlanState& plan_state(const core::AttentionParams& a) {
  if (!a.work) throw Error(ErrorCode::kInternal, "sm90: launch without an sm90 plan (params.work is null)");
  return *static_cast<const PlanState*>(a.work);
}

KernelParams make_kernel_params(const core::AttentionParams& a, const PlanState& st, const LaunchShape& shape) {
  KernelParams p{};
  // Work items and the in-kernel tile walk count query tiles and KV tiles of the planner's
  // sizes (D = 64's two tiles differ only in rows, D = 128's and 256's only in keys).
  if (st.block_m != shape.block_m || st.block_n != shape.block_n)
    throw Error(ErrorCode::kInternal, "sm90: plan built for tiles of " + std::to_string(st.block_m) + " x " +
                                          std::to_string(st.block_n) + " (query rows x keys), the kernel's are " +
                                          std::to_string(shape.block_m) + " x " + std::to_string(shape.block_n));
  const TileShape narrow = tile_shape(a.head_dim, false);
  const bool wide = shape.block_m != narrow.block_m || shape.block_n != narrow.block_n;
  if (a.custom_mask != nullptr && !compiles_custom_mask(shape.mask, wide))
    throw Error(ErrorCode::kInternal, "sm90: a custom mask reached a kernel that does not read one (a wide tile, or "
                                      "no runtime mask)");
  // a.window_left is normalised by the plan: a window that hides nothing is -1 here, except
  // in cuda_graph plans (plan/graph_window.h), which the masked kernels serve.
  if (shape.mask == MaskKind::kKVLen && core::needs_mask(a.causal, a.window_left, a.window_right))
    throw Error(ErrorCode::kInternal, "sm90: a causal or window problem reached the kernel without those masks");
  if (shape.mask == MaskKind::kCausal && (!a.causal || a.window_left >= 0 || a.window_right >= 0))
    throw Error(ErrorCode::kInternal, "sm90: a problem with a window or without causal reached the causal-only kernel");
  if (a.logits_soft_cap > 0.0f && !compiles_soft_cap(shape.mask))
    throw Error(ErrorCode::kInternal, "sm90: a soft-capped problem reached a kernel compiled without the soft cap");
  // The K/V element a kernel reads is compiled in: an fp8 cache on a 16-bit kernel (or the
  // reverse) would be read as the wrong type.
  if (shape.fp8_kv != is_fp8(a.kv_dtype))
    throw Error(ErrorCode::kInternal, std::string("sm90: K/V of dtype ") + dtype_name(a.kv_dtype) +
                                          " reached a kernel " +
                                          (shape.fp8_kv ? "for fp8 K/V" : "for K/V in q's dtype"));
  if (shape.paged && shape.gather_only && !shape.fp8_kv && pages_by_tma(a.page_size))
    throw Error(ErrorCode::kInternal, "sm90: pages of " + std::to_string(a.page_size) +
                                          " (TMA pages) reached a kernel that only gathers pages");
  p.num_qo_heads = a.num_qo_heads;
  p.qo_heads_div = core::FastDivmod::make(std::max(1, p.num_qo_heads));
  p.group_div = core::FastDivmod::make(std::max(1, a.num_qo_heads / a.num_kv_heads));
  p.items = st.items;
  p.num_items = st.num_items;
  p.num_units = st.num_items * a.num_qo_heads;
  if (!st.items) {
    p.single_qo_len = static_cast<int>(a.total_qo_tokens);
    p.single_kv_len = a.max_kv_len;
  }
  if (p.num_units == 0 || a.total_qo_tokens == 0) {
    p.num_units = 0;
    return p;
  }

  p.tma_q = make_token_major_map({a.q, a.dtype, a.total_qo_tokens, a.num_qo_heads, a.head_dim, a.q_stride_n,
                                  a.q_stride_h},
                                 shape.block_m, "q");
  if (!shape.paged && st.total_kv_tokens > 0) {
    p.tma_k = make_token_major_map({a.k, a.dtype, st.total_kv_tokens, a.num_kv_heads, a.head_dim, a.k_stride_n,
                                    a.k_stride_h},
                                   shape.block_n, "k");
    p.tma_v = make_token_major_map({a.v, a.dtype, st.total_kv_tokens, a.num_kv_heads, a.head_dim, a.v_stride_n,
                                    a.v_stride_h},
                                   shape.block_n, "v");
  }
  // The epilogue stores 16 bytes of a row at a time. GPU validation asks this of every
  // dimension longer than 1; along a dimension of extent 1 the stride only ever multiplies
  // index 0.
  const bool tokens = a.total_qo_tokens > 1, heads = a.num_qo_heads > 1;
  if (reinterpret_cast<uintptr_t>(a.o) % 16 != 0 || (tokens && a.o_stride_n % 8 != 0) ||
      (heads && a.o_stride_h % 8 != 0))
    throw Error(ErrorCode::kInvalidArgument, "out: strides " + std::to_string(a.o_stride_n) + ", " +
                                                 std::to_string(a.o_stride_h) +
                                                 " elements; backend 'sm90' needs 16-byte aligned rows (a 16-byte "
                                                 "aligned pointer and strides that are multiples of 8 elements)");
  p.o = a.o;
  p.o_stride_n = a.o_stride_n;
  p.o_stride_h = a.o_stride_h;
  p.lse = a.lse;
  p.lse_stride_n = a.lse_stride_n;
  p.lse_stride_h = a.lse_stride_h;
  p.sinks = a.sinks;

  p.k = a.k;
  p.v = a.v;
  p.k_stride_page = a.k_stride_page;
  p.k_stride_n = a.k_stride_n;
  p.k_stride_h = a.k_stride_h;
  p.v_stride_page = a.v_stride_page;
  p.v_stride_n = a.v_stride_n;
  p.v_stride_h = a.v_stride_h;
  p.page_indices = a.page_indices;
  p.page_size = a.page_size;
  p.page_shift = -1;
  if (shape.paged && a.page_size > 0 && (a.page_size & (a.page_size - 1)) == 0) {
    int s = 0;
    while ((1 << s) < a.page_size) ++s;
    p.page_shift = s;
  }
  if (shape.paged) {
    if (!a.page_indices) throw Error(ErrorCode::kInternal, "sm90: paged launch without device page indices");
    // The gathers move 16-byte chunks: every row of every page must start 16-byte aligned.
    // Strides of extent-1 dimensions are never stepped along.
    const bool heads = a.num_kv_heads > 1, slots = a.page_size > 1;
    const struct {
      const char* name;
      int64_t stride;
      bool used;
    } strides[] = {{"paged_k_cache page", a.k_stride_page, true}, {"paged_k_cache token", a.k_stride_n, slots},
                   {"paged_k_cache head", a.k_stride_h, heads},   {"paged_v_cache page", a.v_stride_page, true},
                   {"paged_v_cache token", a.v_stride_n, slots},  {"paged_v_cache head", a.v_stride_h, heads}};
    for (const auto& s : strides)
      if (s.used && s.stride % 8 != 0)
        throw Error(ErrorCode::kUnsupported, std::string(s.name) + " stride is " + std::to_string(s.stride) +
                                                 " elements; the sm90 backend copies 16-byte chunks and needs a "
                                                 "multiple of 8, as the sm80 backend does; the cpu backend takes "
                                                 "any stride");
  }
  if (shape.paged && !shape.gather_only && pages_by_tma(a.page_size)) {
    // Boxes never straddle pages: a page holds whole tiles, or a tile whole pages.
    p.paged_tma_rows = std::min(a.page_size, shape.block_n);
    p.tma_k = make_paged_map({a.k, a.dtype, a.k_num_pages, a.page_size, a.num_kv_heads, a.head_dim, a.k_stride_page,
                              a.k_stride_n, a.k_stride_h},
                             p.paged_tma_rows, "paged_k_cache");
    p.tma_v = make_paged_map({a.v, a.dtype, a.v_num_pages, a.page_size, a.num_kv_heads, a.head_dim, a.v_stride_page,
                              a.v_stride_n, a.v_stride_h},
                             p.paged_tma_rows, "paged_v_cache");
  }

  p.custom_mask = a.custom_mask;
  if (a.custom_mask != nullptr) {
    if (st.items != nullptr && st.mask_offsets == nullptr)
      throw Error(ErrorCode::kInternal, "sm90: a custom mask with a work list but no mask offsets (plan without "
                                        "Options::custom_mask)");
    p.mask_offsets = st.mask_offsets;
    p.mask_bytes = st.mask_bytes;
  }
  p.causal = a.causal;
  p.window_left = a.window_left;
  p.window_right = a.window_right;
  // fp8 K: logits are (q . k8) * k_scale * sm_scale, k8 as converted (times 2^-gap for fp16
  // q: fp8_bits.h), so k_scale and the fold join sm_scale; a device k_scale joins in the kernel.
  float logit_scale = a.sm_scale;
  if (shape.fp8_kv) {
    const float fold = fp8_scale_fold(a.dtype, a.kv_dtype);
    logit_scale *= (a.k_scale_ptr != nullptr ? 1.0f : a.k_scale) * fold;
    p.kv_e5m2 = a.kv_dtype == DType::kE5M2;
    p.k_scale_ptr = a.k_scale_ptr;
    p.v_scale_ptr = a.v_scale_ptr;
    p.v_scale = (a.v_scale_ptr != nullptr ? 1.0f : a.v_scale) * fold;
  }
  if (a.logits_soft_cap > 0.0f) {
    p.softcap_pre = logit_scale / a.logits_soft_cap;
    p.scale_log2 = a.logits_soft_cap * core::kLog2e;
  } else {
    p.softcap_pre = 0.0f;
    p.scale_log2 = logit_scale * core::kLog2e;
  }

  p.num_splits = st.num_splits;
  p.partial_o = st.partial_o;
  p.partial_lse = st.partial_lse;
#if FLASHBAND_SM90_TRACE
  attach_trace(p);
#endif
  return p;
}

}  // namespace flashband::sm90
