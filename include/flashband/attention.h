// flashband's entry points. Every one validates its input before launching anything and
// throws flashband::Error; on error no output is written. See docs/semantics.md.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "flashband/error.h"
#include "flashband/options.h"
#include "flashband/tensor.h"

namespace flashband {

// What a run did (or, returned by a batch plan(), what its runs will do): the backend and
// the kernel variant (its registry key, plus what the backend chose beyond it, e.g. sm90's
// tile as "/tile192x128"), and why that backend: "requested" for an explicit backend; for
// auto, the order it tried and why each backend before the chosen one was passed over.
struct RunInfo {
  Backend backend = Backend::kAuto;
  std::string variant;
  int num_kv_splits = 1;
  std::string selection;
};

// Caller-owned memory on the device the problem runs on (host memory for cpu); run() never
// allocates. A GPU plan keeps two things there:
// - its own arrays (index arrays, work list), which plan() writes and every run() of the
//   plan reads until the next plan();
// - its runs' scratch (split-KV partial results, cuDNN's workspace), which one run() writes
//   and reads within itself.
// Given `data` alone, both go there (arrays first), so each batch object needs its own.
// Given `plan_data` too, the arrays go there and `data` holds scratch only: batch objects
// whose runs are ordered (one stream, or streams the caller orders) may then share `data`,
// as FlashInfer's wrappers share their float workspace; each keeps its own plan_data.
struct Workspace {
  void* data = nullptr;
  std::size_t bytes = 0;
  void* plan_data = nullptr;
  std::size_t plan_bytes = 0;
};

// Upper bound of workspace any batch plan needs for these maxima (split-KV included); paged
// plans also store their page indices (max_page_indices = entries of paged_kv_indices). It
// bounds `data` alone as well as `data` beside a plan_data.
std::size_t batch_workspace_bytes(int max_batch, int64_t max_qo_tokens, int num_qo_heads,
                                  int head_dim, Device device, int64_t max_page_indices = 0);

// Upper bound of the plan's arrays for these maxima: what Workspace::plan_data needs.
// max_request_pages: pages of the longest request (cuDNN's page table holds up to twice as
// many per request: its longest length rounded up to a power of two); -1 bounds it by
// max_page_indices.
std::size_t batch_plan_bytes(int max_batch, int64_t max_qo_tokens, int num_qo_heads, int head_dim,
                             Device device, int64_t max_page_indices = 0, int64_t max_request_pages = -1);

// Dequantization scales of an fp8 K/V cache for one run (SPEC.md "Quantized KV (fp8)"):
// s = sm_scale * k_scale * (q . k8), o = v_scale * (P . v8). A tensor (one float32 element
// on the backend's device, read when the kernel runs, so a CUDA graph replays with its value
// then) wins over the float. Scales other than 1.0 need an fp8 K/V dtype.
// q_scale is fp8 attention's (SPEC.md "fp8 attention": e4m3 q, s = sm_scale * q_scale *
// k_scale * (q8 . k8)), read like the others; other than 1.0 it needs e4m3 q.
struct KVScales {
  float k_scale = 1.0f;
  float v_scale = 1.0f;
  const TensorView* k_scale_tensor = nullptr;
  const TensorView* v_scale_tensor = nullptr;
  float q_scale = 1.0f;
  const TensorView* q_scale_tensor = nullptr;
};

// q [qo_len, Hq, D]; k, v [kv_len, Hk, D] (NHD) or [Hk, kv_len, D] (HND); out like q;
// lse [qo_len, Hq] float32 when opts.return_lse, else nullptr. k and v may be fp8 (their
// dtype is the call's K/V dtype), with `scales`; sinks [Hq] float32 (attention sinks, SPEC.md)
// iff opts.sinks, else nullptr; custom_mask: the packed [qo_len, kv_len] bits, 1-D uint8 of
// ceil(qo_len * kv_len / 8) bytes (SPEC.md "Custom masks") iff opts.custom_mask, else nullptr.
RunInfo single_prefill(const TensorView& q, const TensorView& k, const TensorView& v,
                       const TensorView& out, const TensorView* lse, const Options& opts,
                       const Workspace& workspace = {}, const KVScales& scales = {},
                       const TensorView* sinks = nullptr, const TensorView* custom_mask = nullptr);

namespace detail {
struct Plan;     // plain data, src/plan/plan.h
struct Capture;  // what a CUDA graph captured, src/api/capture_guard.h
class PageStatus;  // device page indices' status word, src/plan/page_status.h

// What each batch class keeps from plan() for its runs (src/api/run_batch.h runs it).
struct BatchState {
  std::shared_ptr<const Plan> plan;
  mutable std::shared_ptr<const Capture> captured;  // Options::cuda_graph
  std::shared_ptr<const void> owner = std::make_shared<char>();  // its workspace claims; copies share it
};
}  // namespace detail

// A batch run()'s inputs besides its tensors, each unset by default.
struct RunArgs {
  KVScales scales;                    // an fp8 K/V cache's dequantization (BatchShape::kv_dtype)
  const TensorView* sinks = nullptr;  // [Hq] float32 on the plan's device, iff Options::sinks
  // Prefill only, iff Options::custom_mask: every request's packed mask bits, 1-D uint8 on the
  // plan's device, sum over requests of ceil(qo_len * kv_len / 8) bytes (SPEC.md "Custom
  // masks"); read when the kernel runs, so a CUDA graph replays over rewritten bits.
  const TensorView* custom_mask = nullptr;
  // A cudaStream_t to launch on instead of the plan's opts.stream (FlashInfer's run() takes
  // the caller's current stream); it must be ordered after the plan's copies, which plan()
  // enqueues on opts.stream. A graph that captures a run records it on this stream.
  std::optional<void*> stream;
};

// The description plan() needs besides the index arrays.
struct BatchShape {
  int num_qo_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  DType dtype = DType::kBF16;  // q's (FlashInfer's q_data_type)
  Device device = Device::kCPU;
  int device_id = 0;
  // K/V storage (FlashInfer's kv_data_type): unset is q's dtype; kE4M3 / kE5M2 with fp16 or
  // bf16 q is an fp8 cache, dequantized with run()'s KVScales. Every run's K/V must have it.
  std::optional<DType> kv_dtype;
  // The output's dtype (FlashInfer's o_data_type): unset is q's. With e4m3 q (fp8 attention,
  // K/V e4m3 too) it is required and fp16 or bf16; otherwise, if set, it must be q's.
  std::optional<DType> o_dtype;
};

// Workspaces (all three batch classes): a GPU plan keeps its index arrays and work list in the
// workspace (in plan_data when given), so each object needs its own bytes for them (a copy
// shares its original's); run() throws kInvalidArgument once a later plan (of another
// object, or a single_prefill) put its arrays or scratch over this plan's arrays, or its
// arrays where this plan's runs write scratch.
//
// CUDA graphs (all three batch classes): run() neither allocates nor synchronises, so it can
// be captured; a replay launches the captured plan's kernel and arguments over whatever the
// workspace holds then. Without Options::cuda_graph the capture is valid until the next
// plan() over its workspace. With it, a later plan() that would launch differently throws
// kUnsupported (naming what changed) instead, so a replay after a plan() that returned
// computes that plan's problem, and another object's plan() over the captured bytes throws
// kInvalidArgument for as long as the capturing object lives (keep it alive while its graph
// may replay); run() then must not be called from two threads at once on one object.

// Batch prefill over a ragged (CSR) KV: q [nnz_qo, Hq, D]; k, v [nnz_kv, Hk, D] (NHD) or
// [Hk, nnz_kv, D] (HND).
class BatchPrefillRagged {
 public:
  BatchPrefillRagged();
  ~BatchPrefillRagged();
  // Host indptr arrays of batch_size + 1 entries. Does all host work and, for GPU backends,
  // copies the plan into the workspace on opts.stream. Returns what its runs will launch.
  RunInfo plan(const int32_t* qo_indptr, const int32_t* kv_indptr, int batch_size,
               const BatchShape& shape, const Options& opts, const Workspace& workspace);
  // No allocation, no host synchronisation; launches on the plan's opts.stream unless
  // args.stream says otherwise.
  RunInfo run(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& out,
              const TensorView* lse, const RunArgs& args = {}) const;

 private:
  detail::BatchState state_;
};

// A paged KV cache: k and v [num_pages, page_size, Hk, D] (NHD) or [num_pages, Hk,
// page_size, D] (HND). A stacked cache [num_pages, 2, ...] is two views of one tensor.
struct PagedKVCache {
  TensorView k;
  TensorView v;
  static PagedKVCache from_stacked(const TensorView& kv);
};

// Host arrays describing the pages of each request (SPEC.md "Problems").
struct PagedIndex {
  const int32_t* indptr = nullptr;         // [batch + 1]
  const int32_t* indices = nullptr;        // [indptr[batch]]
  const int32_t* last_page_len = nullptr;  // [batch]
  int page_size = 0;
  int num_pages = 0;  // pages in the cache; indices are checked against it
  // FlashInfer's CUDA-graph contract: a device array of the page indices (at least
  // indptr[batch] entries) that every run reads as it is when the run executes, so a caller
  // may rewrite it in place between replays of a captured graph. plan() then copies no page
  // index, and `indices` may be null (then plan() reads none on the host). A run meeting an
  // index outside [0, pages of the cache) never dereferences it: it records the first one,
  // and the object's next plan(), run() or check() raises it. Backends that copy page
  // indices at plan time refuse it (support matrix: device page indices).
  const int32_t* device_indices = nullptr;
};

class BatchPrefillPaged {
 public:
  BatchPrefillPaged();
  ~BatchPrefillPaged();
  RunInfo plan(const int32_t* qo_indptr, const PagedIndex& pages, int batch_size,
               const BatchShape& shape, const Options& opts, const Workspace& workspace);
  RunInfo run(const TensorView& q, const PagedKVCache& kv, const TensorView& out, const TensorView* lse,
              const RunArgs& args = {}) const;  // as BatchPrefillRagged's
  // Raises the first out-of-range page index a run met in PagedIndex::device_indices (plan()
  // and run() do too); never waits for the GPU, so a run still in flight reports later.
  void check() const;

 private:
  detail::BatchState state_;
  std::shared_ptr<detail::PageStatus> page_status_;  // made by the first plan with device_indices
};

// One query per request: q and out [batch, Hq, D].
class BatchDecodePaged {
 public:
  BatchDecodePaged();
  ~BatchDecodePaged();
  RunInfo plan(const PagedIndex& pages, int batch_size, const BatchShape& shape,
               const Options& opts, const Workspace& workspace);
  RunInfo run(const TensorView& q, const PagedKVCache& kv, const TensorView& out, const TensorView* lse,
              const RunArgs& args = {}) const;  // as BatchPrefillRagged's
  // Raises the first out-of-range page index a run met in PagedIndex::device_indices (plan()
  // and run() do too); never waits for the GPU, so a run still in flight reports later.
  void check() const;

 private:
  detail::BatchState state_;
  std::shared_ptr<detail::PageStatus> page_status_;  // made by the first plan with device_indices
};

// Merges two partial results over disjoint keys: v [n, H, D], s [n, H] (base-2 LSE, float32).
void merge_state(const TensorView& v_a, const TensorView& s_a, const TensorView& v_b,
                 const TensorView& s_b, const TensorView& v_out, const TensorView& s_out,
                 void* stream = nullptr);
// Merges num_states partial results: v [n, num_states, H, D], s [n, num_states, H].
void merge_states(const TensorView& v, const TensorView& s, const TensorView& v_out,
                  const TensorView& s_out, void* stream = nullptr);

}  // namespace flashband
