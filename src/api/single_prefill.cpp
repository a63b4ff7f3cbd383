// single_prefill: a batch of one request, planned and run in one call.
#include "run/bind.h"
#include "validate/validate.h"
#include "plan/make_plan.h"
#include "run/launch.h"
#include "plan/workspace_claim.h"

namespace flashband {

RunInfo single_prefill(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& out,
                       const TensorView* lse, const Options& opts, const Workspace& workspace,
                       const KVScales& scales, const TensorView* sinks, const TensorView* custom_mask) {
  if (opts.cuda_graph)
    throw Error(ErrorCode::kInvalidArgument,
                "cuda_graph: got true, allowed: false for single_prefill, which plans on every call (the "
                "option is for the batch classes, whose run() may be captured once and replayed across plans)");
  validate::dims({"q", q}, 3, "[qo_len, num_qo_heads, head_dim]");
  const bool nhd = opts.kv_layout == KVLayout::kNHD;
  const char* layout = nhd ? "[kv_len, num_kv_heads, head_dim] (NHD)" : "[num_kv_heads, kv_len, head_dim] (HND)";
  validate::dims({"k", k}, 3, layout);
  validate::dims({"v", v}, 3, layout);
  validate::dim_equals({"v", v}, nhd ? 0 : 1, k.shape[nhd ? 0 : 1], "kv_len of k");
  validate::q_dtype({"q", q});
  validate::fits_int32({"q", q}, 0, "qo_len");
  validate::fits_int32({"q", q}, 1, "num_qo_heads");
  validate::fits_int32({"q", q}, 2, "head_dim");
  validate::fits_int32({"k", k}, nhd ? 0 : 1, "kv_len");
  validate::fits_int32({"k", k}, nhd ? 1 : 0, "num_kv_heads");

  const int32_t qo_indptr[2] = {0, static_cast<int32_t>(q.shape[0])};
  const int32_t kv_indptr[2] = {0, static_cast<int32_t>(k.shape[nhd ? 0 : 1])};
  detail::PlanRequest r;
  r.op = Op::kSinglePrefill;
  r.batch = 1;
  r.qo_indptr = qo_indptr;
  r.kv_indptr = kv_indptr;
  r.shape = {static_cast<int>(q.shape[1]), static_cast<int>(k.shape[nhd ? 1 : 0]), static_cast<int>(q.shape[2]),
             q.dtype, q.device, q.device_id};
  // An fp8 k is the call's K/V dtype; any other must match q (bind says so by name).
  if (is_fp8(k.dtype)) r.shape.kv_dtype = k.dtype;
  // fp8 attention's output dtype is out's (FlashInfer's o_dtype); otherwise out must match q.
  if (q.dtype == DType::kE4M3) r.shape.o_dtype = validate::o_dtype(q.dtype, out.dtype, "out");
  r.opts = opts;

  // The tensors are known here: validate and bind them before the backend plans, so a
  // backend that bakes strides into its plan (cudnn's graphs) sees the real ones.
  auto plan = detail::prepare_plan(r);
  bind::q_out(plan->params, *plan, q, out, lse, k, v);
  bind::kv_contiguous(plan->params, *plan, k, v);
  bind::kv_scales(plan->params, *plan, scales);
  bind::sinks(plan->params, *plan, sinks);
  bind::custom_mask(plan->params, *plan, custom_mask);
  // The plan's arrays go into the workspace like a batch plan's (plan/workspace_claim.h).
  const bool device = q.device == Device::kCUDA;
  if (device) detail::check_workspace_free(workspace, {});
  detail::finish_plan(*plan, workspace);
  if (device) plan->claim = detail::claim_workspace(workspace, {}, false);
  return detail::launch(*plan, plan->params);
}

}  // namespace flashband
