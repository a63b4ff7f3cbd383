// cuDNN versions the cudnn backend must not use, as data: selection checks the loaded cuDNN
// against them, the support matrix lists them (both in every build, so the data lives in
// dispatch), and plan_cudnn refuses a problem that falls into one. Versions are
// cudnnGetVersion() numbers (9.10.2 -> 91002). Every row comes from the SDPA forward support
// surface of cudnn-frontend 1.32 (include/cudnn_frontend/node/sdpa_support_surface.h), which
// rejects the same combinations with the reasons quoted here.
#pragma once

namespace flashband::cudnn_backend {

// Oldest cuDNN the backend accepts: a sliding window without causal masking (left bound
// only) needs 9.10.2, and 9.10.0/9.10.1 are broken for every fp16/bf16 SDPA forward.
inline constexpr int kMinCudnnVersion = 91002;

// Which problems a known-bad window affects.
enum class BadScope {
  kAllForward,           // every fp16/bf16 SDPA forward graph
  kNonCausalWindowLong,  // window_left >= 0, not causal, graph s_kv > 1024
  kRaggedBeforeSm90,     // ragged (THD) Q/K/V on compute capability < 9.0
  kSinks,                // attention sinks (a sink_token input)
};

struct KnownBadWindow {
  int first;  // inclusive
  int last;   // inclusive
  BadScope scope;
  const char* reason;
};

inline constexpr KnownBadWindow kKnownBadWindows[] = {
    {91000, 91001, BadScope::kAllForward,
     "cuDNN 9.10.0/9.10.1: SDPA fp16/bf16 forward has known bugs (fixed in 9.10.2)"},
    {91400, 91400, BadScope::kNonCausalWindowLong,
     "cuDNN 9.14.0: non-causal sliding window with s_kv > 1024 is wrong (fixed in 9.14.1)"},
    {0, 91800, BadScope::kRaggedBeforeSm90,
     "cuDNN before 9.18.1: ragged (THD) layouts need compute capability 9.0 or newer"},
    // cudnn-frontend's SDPA node refuses a sink_token before 9.13
    // (scaled_dot_product_flash_attention.h, "SDPA with sink_token is not supported before 9.13").
    {0, 91299, BadScope::kSinks, "cuDNN before 9.13.0: SDPA takes no sink token (attention sinks)"},
};

constexpr bool in_window(const KnownBadWindow& w, int version) {
  return version >= w.first && version <= w.last;
}

// The facts about a problem that the windows above depend on.
struct BadWindowProblem {
  int version = 0;        // cudnnGetVersion()
  int sm = 0;             // compute capability * 10, e.g. 90
  bool causal = false;
  int window_left = -1;
  long long s_kv = 0;     // the graph's KV extent
  bool ragged = false;    // any ragged offsets (ragged or paged prefill)
  bool sinks = false;     // attention sinks
};

constexpr bool applies(const KnownBadWindow& w, const BadWindowProblem& p) {
  if (!in_window(w, p.version)) return false;
  switch (w.scope) {
    case BadScope::kAllForward: return true;
    case BadScope::kNonCausalWindowLong: return !p.causal && p.window_left >= 0 && p.s_kv > 1024;
    case BadScope::kRaggedBeforeSm90: return p.ragged && p.sm > 0 && p.sm < 90;
    case BadScope::kSinks: return p.sinks;
  }
  return false;
}

// The first known-bad window the problem falls into, or nullptr.
constexpr const KnownBadWindow* find_known_bad(const BadWindowProblem& p) {
  for (const KnownBadWindow& w : kKnownBadWindows) {
    if (applies(w, p)) return &w;
  }
  return nullptr;
}

}  // namespace flashband::cudnn_backend
