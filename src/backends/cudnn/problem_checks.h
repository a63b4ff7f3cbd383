// What the cudnn backend refuses before it builds anything, each with an Error(kUnsupported)
// naming the parameter. cuDNN does not promise SPEC.md's "a row that sees no key gives exactly
// 0 and -inf", so every problem that has such a row is refused here instead of computed.
// Host-only: tests/unit/cudnn_graph_key_test.cpp checks these without a GPU.
#pragma once
#include <cstdint>

#include "dispatch/cudnn_known_bad.h"
#include "plan/plan.h"

namespace flashband::cudnn_backend {

// Head dims the backend registers kernels for. cuDNN itself takes any multiple of 8 up to
// 256 (decode on compute capability 8.x only up to 128, which cuDNN refuses at build time).
inline constexpr int kRegisteredHeadDims[] = {64, 128, 256};
inline constexpr int kMaxHeadDim = 256;

// dtype, head_dim, soft cap, and per request: kv_len == 0 with queries, causal with
// qo_len > kv_len, and (single prefill, which runs without a padding mask) a window with
// qo_len > kv_len. `plan.params` must carry the semantics; `plan.kv_lens` and
// `plan.qo_indptr` the per-request lengths (single prefill may leave them empty and rely on
// params.max_qo_len / max_kv_len).
void check_problem(const detail::Plan& plan);

// Ragged offsets are int32 element offsets: refuses a problem whose largest offset
// (tokens * row stride) does not fit, naming the tensor.
void check_offset_range(const char* tensor, int64_t rows, int64_t row_stride);

// Refuses cuDNN versions older than kMinCudnnVersion and those in kKnownBadWindows that the
// problem falls into, naming the version and the reason.
void check_version(const BadWindowProblem& problem);

}  // namespace flashband::cudnn_backend
