// One test/benchmark case: a problem description that can be built on random data, run
// through flashband's public API on any backend and device, and judged against the fp64
// oracle with SPEC.md's tolerances. Shared by the unit tests, the GPU tests and the CLI.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "flashband/attention.h"

namespace flashband::testing {

enum class EntryPoint { kSingle, kRagged, kPaged, kDecode };
const char* entry_point_name(EntryPoint e);

struct Case {
  EntryPoint entry = EntryPoint::kSingle;
  std::vector<int> qo_lens = {1};  // one per request; decode ignores it (1 each)
  std::vector<int> kv_lens = {1};
  int num_qo_heads = 1;
  int num_kv_heads = 1;
  int head_dim = 64;
  DType dtype = DType::kF16;
  // fp8 K/V (SPEC.md "Quantized KV (fp8)"): unset stores K and V in `dtype`. fp8 data span
  // the format's range, largest finite values and subnormals included (make_case_data).
  std::optional<DType> kv_dtype;
  float k_scale = 1.0f;
  float v_scale = 1.0f;
  // Pass the scales as one-element float32 tensors on the device (the floats then 1.0).
  bool scale_tensors = false;
  // fp8 attention (SPEC.md "fp8 attention"): dtype kE4M3 makes q, K and V e4m3 (normal /
  // scale, so the dequantized inputs have unit spread), judged by fp8 attention's bound.
  // o_dtype is the output's (fp16 or bf16, required then); q_scale q's descale; outliers
  // makes one element in 64 sixteen times larger (a wide per-tensor range).
  std::optional<DType> o_dtype;
  float q_scale = 1.0f;
  bool outliers = false;
  bool causal = false;
  int window_left = -1;
  int window_right = -1;  // with causal only -1 or 0 (SPEC.md)
  float logits_soft_cap = 0.0f;
  std::optional<float> sm_scale;
  // Attention sinks, one per query head (natural-log domain), or empty for none.
  std::vector<float> sinks;
  // Custom mask (SPEC.md "Custom masks"): set, each request gets a random [qo_len, kv_len]
  // matrix from the seed with this share of allowed keys (row 0 of a request with 3 rows or
  // more hides every key, so the empty-row rule is met), packed as segment_packbits does.
  std::optional<double> mask_density;
  // With mask_density set: a tree-verify mask instead of a random one (speculative decoding's
  // verify step). Keys before the last qo_len are a prefix every row sees; row i then sees
  // draft token d (key kv_len - qo_len + d) iff d is i or an ancestor of i in a random tree
  // (parent of i drawn from [-1, i)). Needs qo_len <= kv_len.
  bool mask_tree = false;
  bool return_lse = true;
  KVLayout layout = KVLayout::kNHD;
  int page_size = 16;        // paged and decode
  bool stacked_kv = false;   // paged: one [P, 2, ...] tensor
  // Elements after each token's Hq x D outputs (the output's token stride is Hq * D +
  // out_token_pad); they must stay unwritten. On a GPU the pad must keep rows 16-byte
  // aligned (a multiple of 8 two-byte elements).
  int out_token_pad = 0;
  // GPU only (ragged, paged, decode): K and V past element 2^31 (and byte 2^32) of their
  // tensors, with poison wherever a 32-bit offset would land instead. Paged caches: every
  // page, behind that many poison pages. Ragged (indptr starts at 0, so the first token
  // stays at offset 0): NHD stretches the token stride until the longest request's last
  // token lies 2^31 past its first, HND the head stride until every head but the first
  // lies past 2^31. The poison is NaN. GiBs of device memory a case.
  bool far_kv = false;
  Backend backend = Backend::kCPU;
  Device device = Device::kCPU;
  uint64_t seed = 1;

  std::string name() const;  // short, unique, usable as a test name
};

struct RunConfig {
  bool check = true;       // compare against the oracle
  int warmup_iters = 0;    // > 0 with timed_iters: time the run
  int timed_iters = 0;
};

struct CaseResult {
  bool passed = false;       // check requested and every bound held
  std::string failure;       // first violated bound, human readable
  double max_abs_err = 0.0;  // over outputs
  double frob_rel_err = 0.0;
  double lse_max_err = 0.0;
  bool window_guard_ok = true;  // windowed and unwindowed references differ by > 0.1
  // With a sink above 0: the references with and without sinks differ by > 0.1 (out or LSE).
  bool sink_guard_ok = true;
  // With a custom mask: the references with and without it differ by > 0.1.
  bool mask_guard_ok = true;
  RunInfo info;
  double median_ms = 0.0;     // when timed
  int64_t visible_pairs = 0;  // summed over heads and requests
};

// Builds inputs (normal random, scaled so softmax is neither flat nor one-hot), fills
// outputs with NaN, runs the case through the public API and, if asked, checks it.
// Exceptions from flashband propagate to the caller.
CaseResult run_case(const Case& c, const RunConfig& cfg = {});

}  // namespace flashband::testing
