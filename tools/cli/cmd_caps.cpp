// `flashband caps`: the support matrix, and what this machine and build can run.
#include <cstdio>

#include "cli/commands.h"
#include "dispatch/capability_table.h"
#include "dispatch/select.h"
#include "flashband/capability.h"
#include "flashband/config.h"

namespace flashband::cli {

int cmd_caps(Args& a) {
  const bool markdown = a.flag("markdown");
  a.finish();
  if (markdown) {
    std::fputs(support_matrix_markdown().c_str(), stdout);
    return 0;
  }
  const auto m = dispatch::machine_info(Device::kCUDA, 0);
  std::printf("flashband %s; built with sm80=%d sm90=%d cudnn=%d (archs %s)\n", FLASHBAND_VERSION,
              FLASHBAND_WITH_SM80, FLASHBAND_WITH_SM90, FLASHBAND_WITH_CUDNN, FLASHBAND_CUDA_ARCHS);
  std::printf("this machine: %d CUDA device(s)", m.cuda_devices);
  if (m.cuda_devices > 0) std::printf(", cuda:0 is sm_%d", m.arch);
  if (m.cudnn_version > 0) std::printf(", cuDNN %d", m.cudnn_version);
  std::printf("\n\n%-22s %-7s %-12s %-11s %s\n", "op", "backend", "arch", "status", "here (bf16, D=128, causal, NHD)");
  for (const auto& r : dispatch::capability_table()) {
    ProblemDesc p;
    p.op = r.op;
    p.device = r.backend == Backend::kCPU ? Device::kCPU : Device::kCUDA;
    p.causal = true;
    p.page_size = 16;
    const auto v = dispatch::check_backend(p, r.backend, dispatch::machine_info(p.device, 0), dispatch::registry());
    const bool this_row = v.row == &r;
    const std::string arch = r.backend == Backend::kCPU ? "host"
                                                         : "sm_" + std::to_string(r.min_arch) + "-" + std::to_string(r.max_arch);
    std::printf("%-22s %-7s %-12s %-11s %s\n", op_name(r.op), backend_name(r.backend), arch.c_str(),
                dispatch::status_name(r.status),
                v.ok && this_row ? "runs" : (!v.ok && (this_row || !v.row) ? v.reason.c_str() : "(other arch)"));
  }
  return 0;
}

}  // namespace flashband::cli
