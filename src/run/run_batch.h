// The run() of every batch class: checks the plan, binds the run's tensors into a copy of
// the plan's launch parameters, launches, and records a CUDA graph's capture. Only the K/V
// binding differs between the classes (`bind_kv`).
#pragma once
#include "run/bind.h"
#include "run/capture_guard.h"
#include "plan/make_plan.h"
#include "run/launch.h"
#include "plan/page_status.h"

namespace flashband::detail {

template <typename BindKV>
RunInfo run_batch(const BatchState& state, const TensorView& q, const TensorView& k, const TensorView& v,
                  const TensorView& out, const TensorView* lse, const RunArgs& args, BindKV&& bind_kv) {
  before_run(state.plan);
  const Plan& plan = *state.plan;
  if (plan.page_status_owner) plan.page_status_owner->raise_if_set();
  core::AttentionParams a = plan.params;
  bind::stream(a, plan, args.stream.value_or(plan.params.stream));
  bind::sinks(a, plan, args.sinks);
  bind::custom_mask(a, plan, args.custom_mask);
  bind::q_out(a, plan, q, out, lse, k, v);
  bind_kv(a, plan);
  bind::kv_scales(a, plan, args.scales);
  RunInfo info = launch(plan, a);
  after_run(state.captured, state.plan, a);
  return info;
}

}  // namespace flashband::detail
