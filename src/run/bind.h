// Validates run()-time tensors against a plan and writes their pointers and strides into
// the launch parameters. Everything here runs before launch, so an error leaves every
// output untouched.
#pragma once
#include "core/params.h"
#include "flashband/attention.h"
#include "plan/plan.h"

namespace flashband::bind {

// q, out [tokens >= qo_indptr[batch], Hq, D]; lse [tokens, Hq] float32 iff return_lse.
void q_out(core::AttentionParams& a, const detail::Plan& plan, const TensorView& q, const TensorView& out,
           const TensorView* lse, const TensorView& k, const TensorView& v);
// k, v [tokens >= kv_indptr[batch], Hk, D] (NHD) or [Hk, tokens, D] (HND).
void kv_contiguous(core::AttentionParams& a, const detail::Plan& plan, const TensorView& k, const TensorView& v);
// k, v [num_pages, page_size, Hk, D] (NHD) or [num_pages, Hk, page_size, D] (HND).
void kv_paged(core::AttentionParams& a, const detail::Plan& plan, const PagedKVCache& kv);
// The fp8 dequantization scales (after the K/V binding, which fixes nothing but checks the
// plan's K/V dtype): scales other than 1.0, or tensors, only with an fp8 K/V dtype.
void kv_scales(core::AttentionParams& a, const detail::Plan& plan, const KVScales& scales);
// sinks [num_qo_heads] float32, contiguous, on the plan's device; given iff opts.sinks.
void sinks(core::AttentionParams& a, const detail::Plan& plan, const TensorView* sinks);
// The packed custom mask: 1-D uint8 of plan.mask_indptr[batch] bytes, contiguous, on the
// plan's device; given iff opts.custom_mask (SPEC.md "Custom masks").
void custom_mask(core::AttentionParams& a, const detail::Plan& plan, const TensorView* mask);
// The stream run() launches on (a cudaStream_t; none for the cpu backend).
void stream(core::AttentionParams& a, const detail::Plan& plan, void* stream);

}  // namespace flashband::bind
