// The capability table: op x backend x arch -> status and per-feature limits. It is the one
// source for supports(), `auto` selection, the errors naming what a backend can do, and the
// README support matrix (tools: `flashband caps --markdown`; tests/unit/readme_matrix_test).
#pragma once
#include <string>
#include <vector>

#include "flashband/capability.h"
#include "flashband/tensor.h"

namespace flashband::dispatch {

enum class Status {
  kValidated,    // the GPU test grid ran against the fp64 oracle on this arch and passed
  kDeclared,     // implemented and built, not yet validated on this arch
  kKnownBad,     // known to give wrong results on this arch: refused, never auto-selected
  kUnsupported,  // not implemented
};
const char* status_name(Status s);

struct Limits {
  std::vector<DType> dtypes;     // of q (and of K/V stored in q's dtype); kE4M3 is fp8 attention
  const char* fp8_attention_note = "";  // why kE4M3 q (fp8 attention) is not among them
  // K/V stored in another dtype than q's: the fp8 formats this backend dequantizes as it
  // reads them (SPEC.md "Quantized KV (fp8)"); where empty, kv_dtypes_note says why.
  std::vector<DType> kv_dtypes;
  const char* kv_dtypes_note = "";
  std::vector<int> head_dims;  // empty: any head_dim in [1, max_head_dim]
  int max_head_dim = 0;
  bool causal = true;
  bool window_with_causal = true;
  bool window_without_causal = true;
  bool window_right = true;  // window_right >= 1 (a two-sided band; 0 is causal)
  bool soft_cap = true;
  bool sinks = true;  // attention sinks (SPEC.md), folded in once per row
  const char* note_sinks = nullptr;  // why not, appended to the refusal
  bool custom_mask = true;  // packed custom masks (SPEC.md "Custom masks")
  const char* note_custom_mask = nullptr;  // why not, appended to the refusal
  bool lse = true;
  bool nhd = true;
  bool hnd = true;
  int min_page_size = 1;  // paged ops only
  int max_page_size = 1 << 30;
  bool page_size_pow2 = false;  // only powers of two
  bool empty_rows = true;  // query rows that see no key give exact 0 / -inf
  bool window_qo_longer_than_kv = true;  // window_left / window_right with a request whose qo_len > kv_len
  bool split_kv_control = true;  // honours Options::disable_split_kv
  // Reads page indices from the caller's device array at every run (PagedIndex::
  // device_indices) rather than copying them at plan time.
  bool device_page_indices = false;
  // cudnn rows: runtime cuDNN versions are also checked against
  // dispatch/cudnn_known_bad.h (kMinCudnnVersion, kKnownBadWindows), the one list of them.
  bool cudnn_versions = false;
};

// Features added to a row after its GPU grid passed. The row serves them (its limits say
// so), but until the GPU grid has run them on that arch a problem that uses one is only
// declared there: auto prefers a backend validated for it, and the README matrix lists it.
enum Feature : unsigned {
  kFeatureWindowRight = 1u << 0,  // window_right >= 1 (a two-sided band)
  kFeatureSinks = 1u << 1,
  kFeatureFp8KV = 1u << 2,  // K/V in e4m3 / e5m2
  kFeatureCustomMask = 1u << 3,  // a packed custom mask
};

struct CapabilityRow {
  Op op;
  Backend backend;
  int min_arch;  // compute capability x 10 (90 = sm_90); 0 for the host
  int max_arch;
  Status status;
  Limits limits;
  const char* note = "";
  unsigned unvalidated = 0;  // Feature bits served here but not yet run by the GPU grid
};

// The Feature bits a problem uses.
unsigned features_of(const ProblemDesc& problem);
// "window_right, sinks".
std::string feature_names(unsigned features);
// The row's status for this problem: a validated row is only declared for a problem that
// uses one of its unvalidated features.
Status status_for(const CapabilityRow& row, const ProblemDesc& problem);

const std::vector<CapabilityRow>& capability_table();

}  // namespace flashband::dispatch
