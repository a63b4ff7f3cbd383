// Support queries, answered by the same capability table and selection function that every
// run uses (src/dispatch/), so "supported?" and "what runs" cannot disagree.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "flashband/options.h"
#include "flashband/tensor.h"

namespace flashband {

enum class Op { kSinglePrefill, kRaggedPrefill, kPagedPrefill, kPagedDecode };
const char* op_name(Op op);

// Everything about a problem that decides which backend and kernel can run it.
struct ProblemDesc {
  Op op = Op::kSinglePrefill;
  DType dtype = DType::kBF16;  // q's
  std::optional<DType> kv_dtype;  // K/V storage; unset: q's (fp8: kE4M3, kE5M2)
  Device device = Device::kCPU;
  int device_id = 0;
  int head_dim = 128;
  int num_qo_heads = 1;
  int num_kv_heads = 1;
  bool causal = false;
  int window_left = -1;  // already normalised against the longest kv_len
  // Already normalised against the longest qo_len; >= 1 or -1 (the right bound 0 is causal).
  int window_right = -1;
  bool soft_cap = false;
  bool sinks = false;  // Options::sinks: attention sinks
  bool custom_mask = false;  // Options::custom_mask: packed per-request bits (SPEC.md)
  bool return_lse = false;
  KVLayout kv_layout = KVLayout::kNHD;
  int page_size = 0;  // paged ops only
  // Some query row sees no key: causal (or window_right r) with qo_len > kv_len (+ r), a
  // request with kv_len 0, or (plans assume it, never reading the bits) a custom mask.
  bool has_empty_rows = false;
  int max_kv_len = 0;  // longest kv_len over the requests (0 when unknown)
  bool qo_longer_than_kv = false;  // some request has qo_len > kv_len
  // Options::cuda_graph: runs are replayed in CUDA graphs across plans (auto's order no
  // longer depends on it; kept so callers can state it).
  bool cuda_graph = false;
  bool disable_split_kv = false;  // Options::disable_split_kv
  // PagedIndex::device_indices: runs read the page indices from a device array as it is then.
  bool device_page_indices = false;
};

struct SupportAnswer {
  bool supported = false;
  std::string reason;  // why not, naming the parameter (empty when supported)
};

// Whether `backend` can run `problem` on this machine (compute capability and build included).
SupportAnswer supports(const ProblemDesc& problem, Backend backend);
// The backend `auto` would pick, or an Error explaining why none can.
Backend select_backend(const ProblemDesc& problem);
// The support matrix, as markdown (for the README) or plain text.
std::string support_matrix_markdown();

}  // namespace flashband
