// Options shared by every entry point; names follow FlashInfer so switching is a rename.
#pragma once
#include <optional>

namespace flashband {

enum class KVLayout { kNHD, kHND };
enum class Backend { kAuto, kCPU, kSM80, kSM90, kCUDNN };

const char* kv_layout_name(KVLayout layout);
const char* backend_name(Backend backend);
// Parses "auto", "cpu", "sm80", "sm90", "cudnn"; throws flashband::Error otherwise.
Backend parse_backend(const char* name);

struct Options {
  bool causal = false;
  int window_left = -1;                 // -1: no window; w >= 0: keys p(i)-w .. (see SPEC.md)
  // -1: no right bound; r >= 0: keys .. p(i)+r (SPEC.md). causal is window_right = 0, so with
  // causal=true only -1 and 0 are accepted (a larger r would contradict it).
  int window_right = -1;
  // Runs pass a float32 [num_qo_heads] sinks tensor (attention sinks, SPEC.md): required by
  // run() iff set, so that the plan (and auto) picks a backend that honours them.
  bool sinks = false;
  // Runs pass a custom mask (SPEC.md "Custom masks"): a 1-D uint8 tensor of every request's
  // packed bits, segment_packbits's little-endian layout; required by run() iff set, so that
  // the plan (and auto) picks a backend that honours it. Prefill only; causal must be false
  // (put the causal bits into the mask).
  bool custom_mask = false;
  float logits_soft_cap = 0.0f;         // 0: off; cap > 0: cap * tanh(s / cap)
  std::optional<float> sm_scale;        // default 1/sqrt(head_dim)
  bool return_lse = false;              // when true, an lse output must be given
  KVLayout kv_layout = KVLayout::kNHD;
  Backend backend = Backend::kAuto;
  void* stream = nullptr;               // cudaStream_t for GPU backends; ignored by nothing:
                                        // a non-null stream on the cpu backend is an error
  // Batch classes only (FlashInfer's use_cuda_graph): a run() captured in a CUDA graph stays
  // valid across later plan() calls, because a plan() that would launch differently (other
  // lengths that change the kernel's arguments, another batch size, a page past the captured
  // cache) throws instead; see plan/launch_signature.h and api/capture_guard.h. Without it a
  // captured run replays the plan it captured, valid only until the next plan() over its
  // workspace. single_prefill refuses it (it plans every call). auto's paged decode takes
  // sm80 either way (docs/semantics.md).
  bool cuda_graph = false;
  // FlashInfer's disable_split_kv: no split-KV, so one CTA reduces each row over its whole
  // key range and no merge runs. Results then no longer depend on how the planner cut the
  // keys, which varies with the other requests of a batch (sm80's results become
  // independent of them; sm90's tile choice still follows the batch). cpu never splits;
  // cudnn refuses it (the capability table), since cuDNN picks its own engines.
  bool disable_split_kv = false;
};

}  // namespace flashband
