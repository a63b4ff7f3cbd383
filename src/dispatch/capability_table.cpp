// The rows of the capability table. Change a status to kValidated only together with the
// device run that proved it (docs/notes.md records the run).
#include "dispatch/capability_table.h"

namespace flashband::dispatch {

const char* status_name(Status s) {
  switch (s) {
    case Status::kValidated: return "validated";
    case Status::kDeclared: return "declared";
    case Status::kKnownBad: return "known-bad";
    case Status::kUnsupported: return "unsupported";
  }
  return "?";
}

namespace {

constexpr Op kAllOps[] = {Op::kSinglePrefill, Op::kRaggedPrefill, Op::kPagedPrefill, Op::kPagedDecode};

Limits cpu_limits() {
  Limits l;
  l.dtypes = {DType::kF16, DType::kBF16, DType::kF32};
  l.max_head_dim = 512;
  return l;
}

Limits sm80_limits() {
  Limits l;
  l.dtypes = {DType::kF16, DType::kBF16};
  l.head_dims = {64, 128, 256};
  return l;
}

Limits sm90_limits() {
  Limits l = sm80_limits();
  return l;
}

Limits cudnn_limits() {
  Limits l;
  l.dtypes = {DType::kF16, DType::kBF16};
  l.head_dims = {64, 128, 256};
  l.soft_cap = false;  // cuDNN's SDPA node has no tanh soft cap that composes with its masks
  return l;
}

std::vector<CapabilityRow> build_table() {
  std::vector<CapabilityRow> rows;
  for (Op op : kAllOps) {
    rows.push_back({op, Backend::kCPU, 0, 0, Status::kValidated, cpu_limits(), 0, 0,
                    "reference backend; CI runs its full grid"});
  }
  for (Op op : kAllOps) {
    rows.push_back({op, Backend::kSM80, 80, 89, Status::kDeclared, sm80_limits(), 0, 0,
                    "built for sm_80; no Ampere machine to validate on"});
    rows.push_back({op, Backend::kSM80, 90, 90, Status::kDeclared, sm80_limits(), 0, 0,
                    "sm_90a build of the portable kernels"});
  }
  for (Op op : {Op::kSinglePrefill, Op::kRaggedPrefill, Op::kPagedPrefill}) {
    rows.push_back({op, Backend::kSM90, 90, 90, Status::kDeclared, sm90_limits(), 0, 0,
                    "TMA + wgmma, warp-specialised"});
  }
  rows.push_back({Op::kPagedDecode, Backend::kSM90, 90, 90, Status::kUnsupported, {}, 0, 0,
                  "decode is memory-bound: served by sm80's decode kernel"});
  for (Op op : kAllOps) {
    rows.push_back({op, Backend::kCUDNN, 80, 120, Status::kDeclared, cudnn_limits(), 0, 0,
                    "cuDNN SDPA graphs through cudnn-frontend"});
  }
  return rows;
}

}  // namespace

const std::vector<CapabilityRow>& capability_table() {
  static const std::vector<CapabilityRow> table = build_table();
  return table;
}

const std::vector<Backend>& auto_preference(Device device) {
  static const std::vector<Backend> host = {Backend::kCPU};
  static const std::vector<Backend> cuda = {Backend::kSM90, Backend::kCUDNN, Backend::kSM80};
  return device == Device::kCPU ? host : cuda;
}

}  // namespace flashband::dispatch
