// The cudnn backend's launch function and its registration. Every registered variant runs the
// same function: the graph in params.work decides what runs, and the key check below makes
// sure it is the graph for these params.
#include <cudnn_frontend.h>

#include <array>
#include <string>

#include "backends/cudnn/cudnn_backend.h"
#include "backends/cudnn/graph_cache.h"
#include "backends/cudnn/graph_key.h"
#include "backends/cudnn/lse_base2.h"
#include "backends/cudnn/problem_checks.h"
#include "backends/cudnn/run_state.h"
#include "dispatch/registry.h"
#include "flashband/error.h"

namespace flashband::cudnn_backend {

namespace {

int64_t qo_rows(const core::AttentionParams& p) {
  if (p.op == Op::kPagedDecode) return p.batch;
  if (p.op == Op::kSinglePrefill) return p.max_qo_len;
  return p.total_qo_tokens;
}

void launch(const core::AttentionParams& p) {
  const auto* state = static_cast<const RunState*>(p.work);
  if (state == nullptr) {
    throw Error(ErrorCode::kInternal,
                "backend 'cudnn': params.work is null; run() must pass plan.backend_state.get()");
  }
  GraphKeyContext ctx;
  ctx.return_lse = p.lse != nullptr;
  ctx.sinks = p.sinks != nullptr;
  ctx.num_pages = state->key.num_pages;
  ctx.device_id = state->key.device_id;
  const GraphKey given = make_graph_key(p, ctx);
  // Paged graphs also serve a stacked cache (twice the page stride) through the doubled table.
  const int page_multiple = page_stride_multiple(state->key, given);
  if (given != state->key && page_multiple == 0) {
    throw Error(ErrorCode::kUnsupported,
                "backend 'cudnn': this run's tensors do not match the graph its plan built (" +
                    first_difference(state->key, given) +
                    "): a batch plan builds its graph (and its ragged offsets) for contiguous q, out and "
                    "lse and the kv_layout of its options; pass tensors in that layout, or use a backend "
                    "that reads each run's strides (sm90, sm80, cpu)");
  }
  if (!state->graph || qo_rows(p) == 0) return;

  std::array<void*, kUidCount> by_uid{};
  by_uid[kUidQ] = const_cast<void*>(p.q);
  by_uid[kUidK] = const_cast<void*>(p.k);
  by_uid[kUidV] = const_cast<void*>(p.v);
  by_uid[kUidO] = p.o;
  by_uid[kUidStats] = p.lse;
  by_uid[kUidSinks] = const_cast<float*>(p.sinks);
  by_uid[kUidSeqLenQ] = state->seq_len_q;
  by_uid[kUidSeqLenKV] = state->seq_len_kv;
  by_uid[kUidRaggedQ] = state->ragged_q;
  by_uid[kUidRaggedO] = state->ragged_o;
  by_uid[kUidRaggedStats] = state->ragged_stats;
  by_uid[kUidRaggedK] = state->ragged_k;
  by_uid[kUidRaggedV] = state->ragged_v;
  int32_t* table = page_multiple == 2 ? state->page_table_x2 : state->page_table;
  by_uid[kUidPageTableK] = table;
  by_uid[kUidPageTableV] = table;

  const BuiltGraph& g = *state->graph;
  std::array<void*, kUidCount> ordered{};
  const int n = static_cast<int>(g.user_uids.size());
  for (int i = 0; i < n; ++i) {
    ordered[i] = by_uid[g.user_uids[i]];
    if (ordered[i] == nullptr) {
      throw Error(ErrorCode::kInternal,
                  "backend 'cudnn': no device pointer for graph tensor uid " + std::to_string(g.user_uids[i]));
    }
  }

  DeviceHandle& dh = device_handle(state->key.device_id);
  DeviceGuard guard(state->key.device_id);
  {
    std::lock_guard<std::mutex> lock(dh.mutex);
    const cudnnStatus_t st = cudnnSetStream(dh.handle, static_cast<cudaStream_t>(p.stream));
    if (st != CUDNN_STATUS_SUCCESS) {
      throw Error(ErrorCode::kCudaError,
                  std::string("backend 'cudnn': cudnnSetStream failed: ") + cudnnGetErrorString(st));
    }
    auto status = g.graph->execute(dh.handle, ordered.data(), n, state->cudnn_workspace);
    if (status.is_bad()) {
      throw Error(ErrorCode::kCudaError,
                  "backend 'cudnn': executing the graph failed: " + status.get_message());
    }
  }
  if (p.lse != nullptr) {
    lse_natural_to_base2(p.lse, qo_rows(p), p.num_qo_heads, p.lse_stride_n, p.lse_stride_h, p.stream);
  }
}

}  // namespace

}  // namespace flashband::cudnn_backend

namespace flashband::dispatch {

void register_cudnn_kernels(Registry& r) {
  struct Shape {
    KernelShape shape;
    core::KVStorage storage;
  };
  constexpr Shape kShapes[] = {
      {KernelShape::kPrefill, core::KVStorage::kContiguous},  // single and ragged prefill
      {KernelShape::kPrefill, core::KVStorage::kPaged},
      {KernelShape::kDecode, core::KVStorage::kPaged},
  };
  for (const Shape& s : kShapes) {
    for (DType dtype : {DType::kF16, DType::kBF16}) {
      for (int head_dim : cudnn_backend::kRegisteredHeadDims) {
        for (bool needs_mask : {false, true}) {
          VariantKey key;
          key.backend = Backend::kCUDNN;
          key.shape = s.shape;
          key.storage = s.storage;
          key.dtype = dtype;
          key.kv_dtype = dtype;
          key.head_dim = head_dim;
          key.needs_mask = needs_mask;
          key.soft_cap = false;  // refused: see check_problem
          r.add(key, &cudnn_backend::launch);
        }
      }
    }
  }
}

}  // namespace flashband::dispatch
