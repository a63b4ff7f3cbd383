#include "dispatch/auto_order.h"

#include "flashband/error.h"

namespace flashband::dispatch {

const std::vector<AutoRule>& auto_rules() {
  static const std::vector<AutoRule> rules = {
      {"host", Device::kCPU, OpClass::kAny, GraphMatch::kAny, 0, 1000, {Backend::kCPU},
       "the only host backend"},
      // sm90 has no decode kernel (its row refuses); it stays first so that one, once
      // written and measured, is tried before the others.
      {"decode", Device::kCUDA, OpClass::kDecode, GraphMatch::kAny, 0, 1000,
       {Backend::kSM90, Backend::kSM80, Backend::kCUDNN},
       "F25: a new cuDNN graph costs ~40 ms of plan() against sm80's ~0.1 ms, and sm80's kernel "
       "gives up at most 22% (B = 1, kv 32k; H200 and H100); under cuda_graph cuDNN refuses "
       "padded batches"},
      {"prefill", Device::kCUDA, OpClass::kAny, GraphMatch::kAny, 0, 1000,
       {Backend::kSM90, Backend::kCUDNN, Backend::kSM80},
       "Standings (H200, 2026-12-04): sm90 0.96-1.17x the best cuDNN on dense rows, 1.36-4.1x "
       "on windows and chunks; sm80 0.97-1.12x FlashAttention-2, below both"},
  };
  return rules;
}

bool rule_matches(const AutoRule& rule, const ProblemDesc& p, int arch) {
  if (rule.device != p.device) return false;
  const bool decode = p.op == Op::kPagedDecode;
  if (rule.ops == OpClass::kDecode && !decode) return false;
  if (rule.ops == OpClass::kPrefill && decode) return false;
  if (rule.graph == GraphMatch::kEager && p.cuda_graph) return false;
  if (rule.graph == GraphMatch::kGraph && !p.cuda_graph) return false;
  return p.device == Device::kCPU || (arch >= rule.min_arch && arch <= rule.max_arch);
}

const AutoRule& auto_rule(const ProblemDesc& p, int arch) {
  for (const AutoRule& r : auto_rules())
    if (rule_matches(r, p, arch)) return r;
  // The table's last rule of each device matches every problem of it (auto_order_test.cpp).
  throw Error(ErrorCode::kInternal, "auto: no rule of auto_order.cpp matches this problem");
}

}  // namespace flashband::dispatch
