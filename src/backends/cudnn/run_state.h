// RunState: what a cudnn plan leaves for launch, owned by plan.backend_state. The lead's run()
// sets params.work = plan.backend_state.get(), so launch finds the graph and the device
// arrays through params alone, without allocating or touching the host arrays.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "backends/cudnn/graph_build.h"
#include "backends/cudnn/graph_key.h"

namespace flashband::cudnn_backend {

struct RunState {
  GraphKey key;                              // as planned; launch compares the params' key to it
  std::shared_ptr<const BuiltGraph> graph;   // null when the problem has no query rows
  // Device arrays in the caller's workspace (null when the graph does not use them).
  int32_t* seq_len_q = nullptr;
  int32_t* seq_len_kv = nullptr;
  int32_t* ragged_q = nullptr;
  int32_t* ragged_o = nullptr;
  int32_t* ragged_stats = nullptr;
  int32_t* ragged_k = nullptr;
  int32_t* ragged_v = nullptr;
  int32_t* page_table = nullptr;     // page indices, for the planned page stride
  int32_t* page_table_x2 = nullptr;  // 2 * page indices, for a stacked cache (twice the stride)
  void* cudnn_workspace = nullptr;
  std::size_t cudnn_workspace_bytes = 0;
};

}  // namespace flashband::cudnn_backend
