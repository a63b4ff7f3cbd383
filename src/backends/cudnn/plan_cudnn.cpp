// detail::plan_cudnn: refuses what cuDNN cannot honour, builds (or fetches) the graph, and
// copies the per-request arrays the graph reads into the caller's workspace.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "backends/cuda/pinned_staging.h"
#include "backends/cudnn/cudnn_backend.h"
#include "backends/cudnn/cudnn_version.h"
#include "backends/cudnn/graph_cache.h"
#include "backends/cudnn/graph_key.h"
#include "backends/cudnn/page_table.h"
#include "backends/cudnn/problem_checks.h"
#include "backends/cudnn/run_state.h"
#include "backends/cudnn/workspace_layout.h"
#include "flashband/error.h"
#include "plan/plan.h"
#include "plan/workspace_regions.h"

namespace flashband::cudnn_backend {

namespace {

int64_t kv_tokens_of(const detail::Plan& plan) {
  if (plan.params.op == Op::kSinglePrefill) return plan.params.max_kv_len;
  return plan.total_kv_tokens;
}

// Rows of Q/O/LSE the launch covers.
int64_t qo_rows_of(const core::AttentionParams& p) {
  if (p.op == Op::kPagedDecode) return p.batch;
  if (p.op == Op::kSinglePrefill) return p.max_qo_len;
  return p.total_qo_tokens;
}

int compute_capability(int device) {
  int major = 0, minor = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
    throw Error(ErrorCode::kCudaError,
                "backend 'cudnn': cannot read the compute capability of device " + std::to_string(device));
  }
  return major * 10 + minor;
}

// The key of the graph `plan` needs, after every refusal that does not need a device.
GraphKey planned_key(const detail::Plan& plan) {
  check_problem(plan);
  core::AttentionParams p = plan.params;
  fill_canonical_strides(p, plan.opts.kv_layout, kv_tokens_of(plan));
  GraphKeyContext ctx;
  ctx.return_lse = plan.opts.return_lse;
  ctx.sinks = plan.opts.sinks;  // the tensor itself arrives at run
  ctx.num_pages = plan.num_pages;
  ctx.device_id = plan.shape.device_id;
  const GraphKey key = make_graph_key(p, ctx);

  if (key.ragged_q()) {
    const int64_t rows = p.total_qo_tokens;
    check_offset_range("q", rows, key.q_stride_n);
    check_offset_range("out", rows, key.o_stride_n);
    if (key.return_lse) check_offset_range("lse", rows, key.lse_stride_n);
  }
  if (key.ragged_kv()) {
    check_offset_range("k", plan.total_kv_tokens, key.k_stride_n);
    check_offset_range("v", plan.total_kv_tokens, key.v_stride_n);
  }
  // (A plan with no query rows builds nothing, so an empty cache is fine there.)
  if (key.paged() && qo_rows_of(p) > 0 && (key.page_size <= 0 || key.num_pages <= 0)) {
    throw Error(ErrorCode::kInternal, "cudnn plan: paged problem with page_size " +
                                          std::to_string(key.page_size) + " and num_pages " +
                                          std::to_string(key.num_pages));
  }
  if (key.paged() && key.num_pages > std::numeric_limits<int32_t>::max() / kPageStrideMultiples) {
    throw Error(ErrorCode::kUnsupported, "backend 'cudnn' does not support num_pages " +
                                             std::to_string(key.num_pages) + " (at most 2^30 - 1)");
  }
  return key;
}

void check_version_for(const GraphKey& key) {
  BadWindowProblem facts;
  facts.version = runtime_version();
  facts.sm = compute_capability(key.device_id);
  facts.causal = key.causal;
  facts.window_left = key.window_left;
  facts.s_kv = key.s_kv;
  facts.ragged = key.ragged_q() || key.ragged_kv();
  facts.sinks = key.sinks;
  check_version(facts);
}

// The int32 arrays of the index block, laid out as workspace_layout() says.
std::vector<int32_t> stage_indices(const detail::Plan& plan, const GraphKey& key,
                                   const WorkspaceLayout& l) {
  std::vector<int32_t> s(l.index_bytes / sizeof(int32_t), 0);
  auto at = [&](std::size_t byte_offset) { return s.data() + byte_offset / sizeof(int32_t); };
  const int batch = key.batch;
  const bool decode = key.layout == GraphLayout::kDecode;
  if (l.seq_len_q != kAbsent) {
    for (int b = 0; b < batch; ++b) {
      at(l.seq_len_q)[b] = decode ? 1 : plan.qo_indptr[b + 1] - plan.qo_indptr[b];
      at(l.seq_len_kv)[b] = plan.kv_lens[b];
    }
  }
  auto offsets = [&](std::size_t field, const std::vector<int32_t>& indptr, int64_t stride) {
    if (field == kAbsent) return;
    for (int b = 0; b <= batch; ++b) at(field)[b] = static_cast<int32_t>(indptr[b] * stride);
  };
  offsets(l.ragged_q, plan.qo_indptr, key.q_stride_n);
  offsets(l.ragged_o, plan.qo_indptr, key.o_stride_n);
  offsets(l.ragged_stats, plan.qo_indptr, key.lse_stride_n);
  offsets(l.ragged_k, plan.kv_indptr, key.k_stride_n);
  offsets(l.ragged_v, plan.kv_indptr, key.v_stride_n);
  if (l.page_table != kAbsent) {
    const int w = key.page_table_width;
    int32_t* table = at(l.page_table);
    fill_page_table(plan.kv_indptr, plan.page_indices, batch, w, table);
    int32_t* x2 = at(l.page_table_x2);
    for (std::size_t i = 0; i < static_cast<std::size_t>(batch) * w; ++i) x2[i] = 2 * table[i];
  }
  return s;
}

char* aligned_base(void* data) {
  const auto addr = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t aligned = (addr + kWorkspaceAlign - 1) / kWorkspaceAlign * kWorkspaceAlign;
  return static_cast<char*>(data) + (aligned - addr);
}

// Where the index block and cuDNN's workspace go: one after the other in `data`, or the
// block in plan_data and cuDNN's workspace (scratch of one run) in `data`.
struct Placement {
  char* index_base = nullptr;
  char* cudnn_base = nullptr;
  bool fits = false;
  std::string need;
};

Placement place(const WorkspaceLayout& l, const Workspace& ws) {
  Placement at;
  if (ws.plan_data == nullptr) {
    const std::size_t need = required_bytes(l);
    at.fits = need == 0 || (ws.data != nullptr && ws.bytes >= need);
    at.need = std::to_string(need) + " bytes";
    if (need > 0 && at.fits) {
      at.index_base = aligned_base(ws.data);
      at.cudnn_base = at.index_base + l.cudnn;
    }
    return at;
  }
  const std::size_t index_need = l.index_bytes > 0 ? l.index_bytes + kWorkspaceAlign - 1 : 0;
  const std::size_t cudnn_need = l.cudnn_bytes > 0 ? l.cudnn_bytes + kWorkspaceAlign - 1 : 0;
  at.fits = ws.plan_bytes >= index_need && (cudnn_need == 0 || (ws.data != nullptr && ws.bytes >= cudnn_need));
  at.need = std::to_string(index_need) + " bytes of plan_data and " + std::to_string(cudnn_need) + " bytes of data";
  if (at.fits) {
    if (index_need > 0) at.index_base = aligned_base(ws.plan_data);
    if (cudnn_need > 0) at.cudnn_base = aligned_base(ws.data);
  }
  return at;
}

}  // namespace

int page_table_width(int max_kv_len, int page_size) {
  if (page_size <= 0) return 0;
  return static_cast<int>((bucket_length(max_kv_len) + page_size - 1) / page_size);
}

std::size_t cudnn_workspace_bytes(int batch, int page_table_width, std::size_t cudnn_graph_bytes) {
  // The most any layout takes: two length arrays, five offset arrays, the two page tables,
  // each padded to 16 bytes, then cuDNN's region aligned to kWorkspaceAlign, plus base slack.
  const std::size_t b = batch > 0 ? static_cast<std::size_t>(batch) : 0;
  const std::size_t w = page_table_width > 0 ? static_cast<std::size_t>(page_table_width) : 0;
  const std::size_t ints = 2 * b + 5 * (b + 1) + kPageStrideMultiples * b * w;
  return ints * sizeof(int32_t) + 9 * 16 + kWorkspaceAlign + cudnn_graph_bytes + kWorkspaceAlign;
}

std::size_t plan_workspace_bytes(const detail::Plan& plan) {
  const GraphKey key = planned_key(plan);
  if (qo_rows_of(plan.params) == 0) return 0;
  check_version_for(key);
  const auto graph = cached_graph(key);
  return required_bytes(workspace_layout(key, static_cast<std::size_t>(graph->workspace_bytes)));
}

}  // namespace flashband::cudnn_backend

namespace flashband::detail {

// The graph key field by field, then every RunState member launch reads. A new member
// fails this until it is listed (unless it fits into padding).
static_assert(sizeof(cudnn_backend::RunState) == 288, "state_signature_cudnn: list the new RunState member");

std::string state_signature_cudnn(const Plan& plan) {
  const auto* st = static_cast<const cudnn_backend::RunState*>(plan.backend_state.get());
  if (!st) return {};
  std::string s;
  const std::string key = st->key.to_string();  // "name=value" fields separated by spaces
  for (std::size_t i = 0; i < key.size();) {
    const std::size_t end = std::min(key.find(' ', i), key.size());
    s += "cudnn." + key.substr(i, end - i) + ";";
    i = end + 1;
  }
  auto ptr = [&](const char* name, const void* p) {
    s += std::string("cudnn.") + name + "=" + std::to_string(reinterpret_cast<std::uintptr_t>(p)) + ";";
  };
  ptr("graph", st->graph.get());
  ptr("seq_len_q", st->seq_len_q);
  ptr("seq_len_kv", st->seq_len_kv);
  ptr("ragged_q", st->ragged_q);
  ptr("ragged_o", st->ragged_o);
  ptr("ragged_stats", st->ragged_stats);
  ptr("ragged_k", st->ragged_k);
  ptr("ragged_v", st->ragged_v);
  ptr("page_table", st->page_table);
  ptr("page_table_x2", st->page_table_x2);
  ptr("cudnn_workspace", st->cudnn_workspace);
  s += "cudnn.workspace_bytes=" + std::to_string(st->cudnn_workspace_bytes) + ";";
  return s;
}

void plan_cudnn(Plan& plan, const Workspace& workspace) {
  using namespace cudnn_backend;
  core::AttentionParams& p = plan.params;
  auto state = std::make_shared<RunState>();
  state->key = planned_key(plan);
  const GraphKey& key = state->key;

  // Launch reads only params.work; the host index arrays must not be mistaken for device ones.
  p.qo_indptr = nullptr;
  p.kv_indptr = nullptr;
  p.page_indices = nullptr;
  p.last_page_len = nullptr;
  p.kv_lens = nullptr;

  if (qo_rows_of(p) > 0) {
    check_version_for(key);
    state->graph = cached_graph(key);
    const WorkspaceLayout l = workspace_layout(key, static_cast<std::size_t>(state->graph->workspace_bytes));
    const Placement at = place(l, workspace);
    if (!at.fits) {
      throw Error(ErrorCode::kInvalidArgument,
                  "workspace: backend 'cudnn' needs " + at.need + " (" + std::to_string(l.index_bytes) +
                      " for index arrays, " + std::to_string(l.cudnn_bytes) + " for cuDNN), " +
                      WorkspaceRegions(workspace).got());
    }
    if (at.index_base != nullptr || at.cudnn_base != nullptr) {
      char* base = at.index_base;
      auto ptr = [&](std::size_t off) {
        return off == kAbsent ? nullptr : reinterpret_cast<int32_t*>(base + off);
      };
      state->seq_len_q = ptr(l.seq_len_q);
      state->seq_len_kv = ptr(l.seq_len_kv);
      state->ragged_q = ptr(l.ragged_q);
      state->ragged_o = ptr(l.ragged_o);
      state->ragged_stats = ptr(l.ragged_stats);
      state->ragged_k = ptr(l.ragged_k);
      state->ragged_v = ptr(l.ragged_v);
      state->page_table = ptr(l.page_table);
      state->page_table_x2 = ptr(l.page_table_x2);
      state->cudnn_workspace = l.cudnn_bytes > 0 ? at.cudnn_base : nullptr;
      state->cudnn_workspace_bytes = l.cudnn_bytes;
      if (l.index_bytes > 0) {
        const std::vector<int32_t> staged = stage_indices(plan, key, l);
        DeviceGuard guard(key.device_id);
        cuda::copy_to_device_async(base, staged.data(), l.index_bytes, p.stream);
      }
      p.kv_lens = state->seq_len_kv;
    }
  }
  p.work = state.get();
  plan.backend_state = state;
}

}  // namespace flashband::detail
