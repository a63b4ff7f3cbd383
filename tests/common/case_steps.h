// The steps run_case (case.h) is made of, exposed for tests that combine them, e.g. running
// the same data through two entry points: build the data, run it through the public API,
// compute the oracle's reference.
#pragma once
#include <cstdint>
#include <vector>

#include "case.h"
#include "flashband/capability.h"

namespace flashband::testing {

// Throws std::invalid_argument when the case is inconsistent (lengths per request, etc.).
void validate_case(const Case& c);
// qo_len of each request: c.qo_lens, or 1 per request for decode.
std::vector<int> case_qo_lens(const Case& c);
// The scale the oracle uses: c.sm_scale or 1/sqrt(head_dim), in double.
double case_sm_scale(const Case& c);
// The Options a case passes to flashband.
Options case_options(const Case& c);
// The problem description selection sees for a case (window normalised like plan()).
ProblemDesc problem_of(const Case& c);

// One request's inputs in the oracle's layout, already rounded to the case's dtype:
// q [qo_len, Hq, D], k and v [kv_len, Hk, D].
struct RequestData {
  int qo_len = 0;
  int kv_len = 0;
  std::vector<double> q, k, v;
  std::vector<char> mask;  // [qo_len * kv_len] unpacked, when the case has a custom mask
};
// Normal(0, 1) inputs from c.seed: with the default scale 1/sqrt(D) the logits have unit
// spread, so softmax is neither flat nor one-hot.
std::vector<RequestData> make_case_data(const Case& c);

// What the public API produced, read back to the host, token-major over all requests.
struct ApiOutputs {
  std::vector<double> out;  // [total_qo, Hq, D], without c.out_token_pad
  bool padding_untouched = true;  // every padding element still NaN
  std::vector<double> lse;  // [total_qo, Hq]; empty unless c.return_lse
  RunInfo info;
  double median_ms = 0.0;   // when cfg asked for timing
};
// Lays the data out for c.entry on c.device, fills outputs with NaN, runs c through the
// public API (plan + run for batches) and copies the results back. Timed iterations, if
// any, run after the result has been read.
ApiOutputs run_api(const Case& c, const std::vector<RequestData>& data, const RunConfig& cfg = {});
// The requests' masks packed as flashband takes them: row-major bits, least significant first,
// each request's segment padded to whole bytes (FlashInfer's segment_packbits, "little").
std::vector<uint8_t> pack_case_mask(const std::vector<RequestData>& data);

// The oracle over every request, concatenated like ApiOutputs.
struct Reference {
  std::vector<double> out;
  std::vector<double> lse;
  std::vector<char> empty;    // [total_qo, Hq]: rows that see no key
  int64_t visible_pairs = 0;  // summed over heads and requests
};
// Both sides of a window as the user gives them (-1: no bound on that side).
struct Window {
  int left = -1;
  int right = -1;
};
// quantize_p: fp8 attention's emulating reference (P quantized as SPEC.md states) rather than
// the exact one.
Reference make_reference(const Case& c, const std::vector<RequestData>& data, Window window, bool quantize_p = false);
// The output's dtype: c.o_dtype, else q's.
DType case_out_dtype(const Case& c);
// api against the oracle for `ref_case` (c, or c with an input changed) with the bound of
// c's dtype: SPEC.md's 16-bit tolerances, or fp8 attention's (Frobenius <= 3e-2 against the
// exact reference, max error <= 2x the emulating reference's + the output dtype's atol).
struct Comparison;
Comparison judge_case(const Case& c, const Case& ref_case, const std::vector<RequestData>& data,
                      const ApiOutputs& api);

// Whether the case's requests see other keys under `with` than under `without`.
bool window_changes_visibility(const Case& c, Window with, Window without);

}  // namespace flashband::testing
