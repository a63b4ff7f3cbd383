#include "run/run_batch.h"

namespace flashband {

BatchPrefillRagged::BatchPrefillRagged() = default;
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
  detail::plan_into(state_.plan, state_.captured, r, workspace, state_.owner);
  return detail::planned_info(*state_.plan);
}

RunInfo BatchPrefillRagged::run(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& out,
                                const TensorView* lse, const RunArgs& args) const {
  return detail::run_batch(state_, q, k, v, out, lse, args, [&](core::AttentionParams& a, const detail::Plan& plan) {
    bind::kv_contiguous(a, plan, k, v);
  });
}

}  // namespace flashband
