// Paged batch prefill and paged decode: the same plan and binding; decode has one query per
// request and a decode-shaped kernel (the selection's KernelShape).
#include <memory>

#include "run/run_batch.h"

namespace flashband {

PagedKVCache PagedKVCache::from_stacked(const TensorView& kv) {
  if (kv.ndim != 5 || kv.shape[1] != 2)
    throw Error(ErrorCode::kInvalidArgument, "paged_kv_cache: stacked cache must be [num_pages, 2, ...] with 5 "
                                             "dimensions, got " + kv.shape_string());
  PagedKVCache c;
  for (int which = 0; which < 2; ++which) {
    TensorView t;
    t.dtype = kv.dtype;
    t.device = kv.device;
    t.device_id = kv.device_id;
    t.ndim = 4;
    t.data = static_cast<char*>(kv.data) + which * kv.strides[1] * static_cast<int64_t>(dtype_size(kv.dtype));
    t.shape[0] = kv.shape[0];
    t.strides[0] = kv.strides[0];
    for (int d = 1; d < 4; ++d) {
      t.shape[d] = kv.shape[d + 1];
      t.strides[d] = kv.strides[d + 1];
    }
    (which == 0 ? c.k : c.v) = t;
  }
  return c;
}

namespace {

RunInfo run_paged(const detail::BatchState& state, const TensorView& q, const PagedKVCache& kv, const TensorView& out,
                  const TensorView* lse, const RunArgs& args) {
  return detail::run_batch(state, q, kv.k, kv.v, out, lse, args,
                           [&](core::AttentionParams& a, const detail::Plan& plan) { bind::kv_paged(a, plan, kv); });
}

// The object's status word for device page indices, made by its first plan that gives them
// (a graph captures its address, so later plans keep it); a plan first raises what an
// earlier run recorded there.
std::shared_ptr<detail::PageStatus> page_status_for(std::shared_ptr<detail::PageStatus>& held, const PagedIndex& pages,
                                                    const BatchShape& shape) {
  if (!pages.device_indices || shape.device != Device::kCUDA) return nullptr;
  if (held) {
    held->raise_if_set();
  } else {
    held = std::make_shared<detail::PageStatus>(shape.device_id);
  }
  return held;
}

RunInfo plan_paged(detail::BatchState& state, std::shared_ptr<detail::PageStatus>& page_status, Op op,
                   const int32_t* qo_indptr, const PagedIndex& pages, int batch_size, const BatchShape& shape,
                   const Options& opts, const Workspace& workspace) {
  detail::PlanRequest r;
  r.op = op;
  r.batch = batch_size;
  r.qo_indptr = qo_indptr;
  r.pages = &pages;
  r.shape = shape;
  r.opts = opts;
  r.page_status = page_status_for(page_status, pages, shape);
  detail::plan_into(state.plan, state.captured, r, workspace, state.owner);
  return detail::planned_info(*state.plan);
}

}  // namespace

BatchPrefillPaged::BatchPrefillPaged() = default;
BatchPrefillPaged::~BatchPrefillPaged() = default;

RunInfo BatchPrefillPaged::plan(const int32_t* qo_indptr, const PagedIndex& pages, int batch_size,
                                const BatchShape& shape, const Options& opts, const Workspace& workspace) {
  return plan_paged(state_, page_status_, Op::kPagedPrefill, qo_indptr, pages, batch_size, shape, opts, workspace);
}

RunInfo BatchPrefillPaged::run(const TensorView& q, const PagedKVCache& kv, const TensorView& out,
                               const TensorView* lse, const RunArgs& args) const {
  return run_paged(state_, q, kv, out, lse, args);
}

BatchDecodePaged::BatchDecodePaged() = default;
BatchDecodePaged::~BatchDecodePaged() = default;

RunInfo BatchDecodePaged::plan(const PagedIndex& pages, int batch_size, const BatchShape& shape, const Options& opts,
                               const Workspace& workspace) {
  return plan_paged(state_, page_status_, Op::kPagedDecode, nullptr, pages, batch_size, shape, opts, workspace);
}

RunInfo BatchDecodePaged::run(const TensorView& q, const PagedKVCache& kv, const TensorView& out,
                              const TensorView* lse, const RunArgs& args) const {
  const detail::Plan* plan = state_.plan.get();
  if (plan && q.ndim == 3 && q.shape[0] != plan->batch)
    throw Error(ErrorCode::kInvalidArgument, "q: decode expects [batch_size=" + std::to_string(plan->batch) +
                                                 ", num_qo_heads, head_dim], got " + q.shape_string());
  return run_paged(state_, q, kv, out, lse, args);
}

void BatchPrefillPaged::check() const {
  if (page_status_) page_status_->raise_if_set();
}

void BatchDecodePaged::check() const {
  if (page_status_) page_status_->raise_if_set();
}

}  // namespace flashband
