#include "backends/cudnn/problem_checks.h"

#include <limits>
#include <string>

#include "backends/cudnn/cudnn_version.h"
#include "flashband/error.h"

namespace flashband::cudnn_backend {

namespace {

[[noreturn]] void refuse(const std::string& message) {
  throw Error(ErrorCode::kUnsupported, "backend 'cudnn' " + message);
}

}  // namespace

void check_problem(const detail::Plan& plan) {
  const core::AttentionParams& p = plan.params;
  if (p.dtype != DType::kF16 && p.dtype != DType::kBF16) {
    refuse(std::string("does not support dtype ") + dtype_name(p.dtype) + " (supports f16, bf16)");
  }
  if (p.head_dim <= 0 || p.head_dim % 8 != 0 || p.head_dim > kMaxHeadDim) {
    refuse("does not support head_dim " + std::to_string(p.head_dim) +
           " (cuDNN needs a multiple of 8 up to 256; registered: 64, 128, 256)");
  }
  if (p.logits_soft_cap != 0.0f) {
    // cuDNN's score modifier (where a tanh cap would go) cannot be combined with its padding
    // or diagonal-band masks, so a capped result could not honour SPEC.md's masks.
    refuse("does not support logits_soft_cap " + std::to_string(p.logits_soft_cap) +
           " (only 0: cuDNN cannot combine a score modifier with its masks)");
  }

  const bool decode = p.op == Op::kPagedDecode;
  if (plan.opts.sinks && p.max_qo_len <= 1) {
    // A graph with s_q = 1 is cuDNN's decode mode, which takes no sink token.
    refuse("does not support sinks with at most one query row per request (max qo_len " +
           std::to_string(p.max_qo_len) + "): cuDNN's decode mode takes no sink token (use 'sm90', 'sm80' or 'cpu')");
  }
  const int batch = p.batch;
  const bool have_qo = static_cast<int>(plan.qo_indptr.size()) == batch + 1;
  const bool have_kv = static_cast<int>(plan.kv_lens.size()) == batch;
  if (!have_kv && !(batch == 1 && p.op == Op::kSinglePrefill)) {
    throw Error(ErrorCode::kInternal, "cudnn plan: plan.kv_lens has " +
                                          std::to_string(plan.kv_lens.size()) + " entries, batch is " +
                                          std::to_string(batch));
  }
  for (int b = 0; b < batch; ++b) {
    const int64_t qo_len = decode    ? 1
                           : have_qo ? plan.qo_indptr[b + 1] - plan.qo_indptr[b]
                                     : p.max_qo_len;
    const int64_t kv_len = have_kv ? plan.kv_lens[b] : p.max_kv_len;
    if (qo_len == 0) continue;  // no rows, nothing to mask
    const std::string where = batch == 1 ? std::string() : " in request " + std::to_string(b);
    if (kv_len == 0) {
      refuse("does not support kv_len 0 with qo_len " + std::to_string(qo_len) + where +
             ": the fully masked rows must be exactly 0 with LSE -inf, which cuDNN does not "
             "guarantee (use 'cpu', 'sm80' or 'sm90')");
    }
    if (p.causal && qo_len > kv_len) {
      refuse("does not support causal with qo_len " + std::to_string(qo_len) + " > kv_len " +
             std::to_string(kv_len) + where +
             ": the first rows see no key and must be exactly 0 with LSE -inf, which cuDNN does "
             "not guarantee (use 'cpu', 'sm80' or 'sm90')");
    }
    if (p.op == Op::kSinglePrefill && p.window_left >= 0 && qo_len > kv_len) {
      // Single prefill runs without a padding mask, where cuDNN needs s_q <= s_kv for a band.
      refuse("does not support window_left " + std::to_string(p.window_left) + " with qo_len " +
             std::to_string(qo_len) + " > kv_len " + std::to_string(kv_len) + " in single prefill");
    }
  }
}

void check_offset_range(const char* tensor, int64_t rows, int64_t row_stride) {
  const int64_t limit = std::numeric_limits<int32_t>::max();
  if (rows > 0 && row_stride > 0 && rows > limit / row_stride) {
    refuse(std::string("does not support ") + tensor + " with " + std::to_string(rows) +
           " rows of stride " + std::to_string(row_stride) +
           ": cuDNN's int32 ragged offsets would overflow (at most 2^31 - 1 elements)");
  }
}

void check_version(const BadWindowProblem& problem) {
  if (problem.version < kMinCudnnVersion) {
    refuse("needs cuDNN " + version_string(kMinCudnnVersion) + " or newer; the loaded library is " +
           version_string(problem.version));
  }
  if (const KnownBadWindow* w = find_known_bad(problem)) {
    refuse("refuses this problem on the loaded cuDNN " + version_string(problem.version) + ": " +
           w->reason);
  }
}

}  // namespace flashband::cudnn_backend
