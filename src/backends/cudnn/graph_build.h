// Builds the cuDNN SDPA forward graph a GraphKey describes, through cudnn-frontend's graph
// API, and keeps what execution needs: the graph, the order its tensor pointers go in, and
// the workspace its execution plan asks for.
//
// How SPEC.md maps onto cuDNN (cudnn-frontend's SDPA node, COMPOSITE implementation):
//   Q/O [T, Hq, D] rows      -> dims [B, Hq, S_q, D] with strides (b, h, n, 1); ragged rows
//                               through int32 element offsets row_start * stride_n
//   K/V ragged or single      -> the same with Hk
//   K/V paged                 -> containers [num_pages, Hk, page_size, D] + page tables
//                               [B, 1, width, 1], width = ceil(s_kv / page_size)
//   per-request lengths       -> padding mask with seq_len_q / seq_len_kv [B, 1, 1, 1]
//   bottom-right causal       -> diagonal alignment BOTTOM_RIGHT, right bound 0
//   window_left = w           -> left bound w + 1 (cuDNN keeps key j iff j > p(i) - bound)
//   sm_scale                  -> attn_scale, a value baked into the graph
//   LSE                       -> Stats (natural log, fp32), rescaled to base 2 after execute
#pragma once
#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/cudnn/graph_key.h"

namespace cudnn_frontend::graph {
class Graph;
}

namespace flashband::cudnn_backend {

// The tensor ids the graphs use; launch looks pointers up by these.
enum Uid : int64_t {
  kUidQ = 1,
  kUidK,
  kUidV,
  kUidO,
  kUidStats,
  kUidSeqLenQ,
  kUidSeqLenKV,
  kUidRaggedQ,
  kUidRaggedO,
  kUidRaggedStats,
  kUidRaggedK,
  kUidRaggedV,
  kUidPageTableK,
  kUidPageTableV,
  kUidSinks,
  kUidCount,
};

struct BuiltGraph {
  GraphKey key;
  std::shared_ptr<cudnn_frontend::graph::Graph> graph;
  std::vector<int64_t> user_uids;  // the order execute() takes its pointers in
  int64_t workspace_bytes = 0;     // cuDNN's own workspace for the chosen plan
};

// Builds and compiles the graph on the device `handle` belongs to (the caller makes that
// device current). Throws Error(kUnsupported) naming the build stage, cuDNN's message and
// the key when cuDNN refuses the graph.
std::shared_ptr<const BuiltGraph> build_graph(const GraphKey& key, cudnnHandle_t handle);

// Constructs the graph for a target architecture (compute capability x 10) and runs
// cudnn-frontend's validation, which holds its SDPA support surface, without a device.
// Returns "" when the frontend accepts the graph, else its message. Compiling a plan still
// needs the device; this lets host tests prove every layout the backend builds is well formed.
std::string validate_on_host(const GraphKey& key, int sm_version);

}  // namespace flashband::cudnn_backend
