// select(): the one pure function that decides which backend and kernel variant run a
// problem. supports(), `auto`, every run and the CLI all call it, so they cannot disagree.
#pragma once
#include <string>

#include "dispatch/capability_table.h"
#include "dispatch/registry.h"
#include "flashband/error.h"

namespace flashband::dispatch {

// What selection needs to know about the machine; gathered once by machine_info().
struct MachineInfo {
  int cuda_devices = 0;
  int arch = 0;            // compute capability x 10 of the problem's device, 0 if none
  int cudnn_version = 0;   // runtime cuDNN version (e.g. 91900), 0 if not loaded
};
MachineInfo machine_info(Device device, int device_id);

VariantKey variant_for(const ProblemDesc& problem, Backend backend);

struct Verdict {
  bool ok = false;
  ErrorCode code = ErrorCode::kUnsupported;
  std::string reason;      // names the parameter, the value and what is allowed
  const CapabilityRow* row = nullptr;
  const KernelEntry* kernel = nullptr;
};

// Can `backend` (not auto) run `problem` here?
// `table` is a parameter so tests can pose capabilities no shipped backend has.
Verdict check_backend(const ProblemDesc& problem, Backend backend, const MachineInfo& machine,
                      const Registry& registry,
                      const std::vector<CapabilityRow>& table = capability_table());

struct Selection {
  Backend backend;
  const KernelEntry* kernel;
  Status status;
};

// Every backend that may run the problem, in the order `auto` tries them (validated before
// declared, fastest first); for an explicit request just that backend. Throws like select()
// when there is none. A backend can still refuse at plan time (cuDNN refusing a graph):
// `auto` then moves on to the next candidate (detail::finish_plan). For auto, `passed_over`
// (if given) receives why each backend of auto's order that cannot run it was passed over,
// one "backend 'x' ..." reason per line.
std::vector<Selection> candidates(const ProblemDesc& problem, Backend requested, const MachineInfo& machine,
                                  const Registry& registry,
                                  const std::vector<CapabilityRow>& table = capability_table(),
                                  std::string* passed_over = nullptr);

// Resolves `requested` (auto or explicit) or throws flashband::Error whose message names
// the parameter and the backends that could run the problem.
Selection select(const ProblemDesc& problem, Backend requested, const MachineInfo& machine,
                 const Registry& registry,
                 const std::vector<CapabilityRow>& table = capability_table());

}  // namespace flashband::dispatch
