// The cudnn backend: cuDNN's fused SDPA forward through cudnn-frontend graphs, one graph per
// GraphKey (graph_key.h), built at plan time and cached process-wide (graph_cache.h).
// dispatch::register_cudnn_kernels and detail::plan_cudnn (below, listed in backend_ops.cpp)
// connect it to the public API; this header adds what the glue needs to
// size workspaces and what tests need to observe the cache.
//
// Glue contract:
// - plan_cudnn(plan, ws) needs plan.params' semantics (op, dtype, batch, heads, head_dim,
//   causal, normalised window_left and window_right (kept in cuda_graph plans; the graph key
//   normalises them),
//   logits_soft_cap, sm_scale, max_qo_len, max_kv_len, total_qo_tokens, page_size, stream),
//   plan.opts.return_lse / kv_layout, plan.shape.device_id,
//   plan.qo_indptr / kv_indptr / kv_lens / page_indices / num_pages / total_kv_tokens.
//   Strides left 0 in plan.params are taken as the canonical contiguous layout
//   (fill_canonical_strides); set them before plan_cudnn when the tensors are known (single
//   prefill, a stacked paged cache).
// - plan_cudnn stores a RunState in plan.backend_state and sets plan.params.work to it; run()
//   must pass params.work = plan.backend_state.get(). Launch reads nothing else of the plan;
//   params.qo_indptr / kv_indptr / page_indices / last_page_len are left null, params.kv_lens
//   points at the device copy of the KV lengths.
// - Launch rebuilds the GraphKey from the params it gets (strides of the actual tensors, LSE
//   requested or not) and throws Error(kUnsupported) naming the first field that differs from
//   the planned graph, so a view with other strides is refused, never computed wrongly.
#pragma once
#include <cstddef>
#include <string>

#include "flashband/attention.h"
#include "plan/plan.h"

namespace flashband::cudnn_backend {

// Page-table width (pages per request row) of the graph a paged plan with this longest KV
// length uses: ceil(bucket_length(max_kv_len) / page_size), at most 2 * ceil(max_kv_len /
// page_size).
int page_table_width(int max_kv_len, int page_size);

// Upper bound of the workspace a cudnn plan needs: its int32 index arrays for `batch`
// requests (sequence lengths, ragged offsets, and two page tables of `page_table_width` pages
// per request when paged; pass 0 for ragged) plus `cudnn_graph_bytes` of cuDNN's own workspace, with alignment
// slack. cuDNN's own need is only known once the graph is built (0 for the fp16/bf16 SDPA
// forward engines of cuDNN 9.x measured so far); plan_workspace_bytes gives the exact total.
std::size_t cudnn_workspace_bytes(int batch, int page_table_width, std::size_t cudnn_graph_bytes = 0);

// The exact workspace plan_cudnn(plan, ...) will need, building (or fetching) the graph.
// Takes a plan in the state plan_cudnn expects.
std::size_t plan_workspace_bytes(const detail::Plan& plan);

// Observability for tests: graphs in the cache and graphs built since start (graph_cache.h).
std::size_t graph_cache_size();
std::size_t graph_builds();

}  // namespace flashband::cudnn_backend

// Connects the backend to dispatch (backend_ops.cpp).
namespace flashband {
namespace detail {
struct Plan;
void plan_cudnn(Plan& plan, const Workspace& workspace);
std::string state_signature_cudnn(const Plan& plan);
}  // namespace detail
namespace dispatch {
class Registry;
void register_cudnn_kernels(Registry& r);
}  // namespace dispatch
}  // namespace flashband
