#include <memory>

#include "api/bind.h"
#include "api/capture_guard.h"
#include "plan/make_plan.h"

namespace flashband {

BatchPrefillRagged::BatchPrefillRagged() : owner_(std::make_shared<char>()) {}
BatchPrefillRagged::~BatchPrefillRagged() = default;

RunInfo BatchPrefillRagged::plan(const int32_t* qo_indptr, const int32_t* kv_indptr, int batch_size,
                                 const BatchShape& shape, const Options& opts, const Workspace& workspace) {
  detail::PlanRequest r;
  r.op = Op::kRaggedPrefill;
  r.batch = batch_size;
  r.qo_indptr = qo_indptr;
  r.kv_indptr = kv_indptr;
  r.shape = shape;
  r.opts = opts;
  detail::plan_into(plan_, captured_, r, workspace, owner_);
  return detail::planned_info(*plan_);
}

RunInfo BatchPrefillRagged::run(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& out,
                                const TensorView* lse) const {
  return run(q, k, v, out, lse, plan_ ? plan_->params.stream : nullptr);
}

RunInfo BatchPrefillRagged::run(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& out,
                                const TensorView* lse, void* stream, const TensorView* sinks) const {
  return run(q, k, v, out, lse, KVScales{}, stream, sinks);
}

RunInfo BatchPrefillRagged::run(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& out,
                                const TensorView* lse, const KVScales& scales) const {
  return run(q, k, v, out, lse, scales, plan_ ? plan_->params.stream : nullptr);
}

RunInfo BatchPrefillRagged::run(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& out,
                                const TensorView* lse, const KVScales& scales, void* stream,
                                const TensorView* sinks) const {
  detail::before_run(plan_);
  core::AttentionParams a = plan_->params;
  bind::stream(a, *plan_, stream);
  bind::sinks(a, *plan_, sinks);
  bind::q_out(a, *plan_, q, out, lse, k, v);
  bind::kv_contiguous(a, *plan_, k, v);
  bind::kv_scales(a, *plan_, scales);
  RunInfo info = detail::launch(*plan_, a);
  detail::after_run(captured_, plan_, a);
  return info;
}

}  // namespace flashband
