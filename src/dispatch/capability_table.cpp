// The rows of the capability table. Change a status to kValidated, or clear a row's
// unvalidated feature bit, only together with the device run that proved it (recorded in
// docs/findings.md, F34).
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

unsigned features_of(const ProblemDesc& p) {
  unsigned f = 0;
  if (p.window_right >= 1) f |= kFeatureWindowRight;
  if (p.sinks) f |= kFeatureSinks;
  if (p.kv_dtype && (*p.kv_dtype == DType::kE4M3 || *p.kv_dtype == DType::kE5M2)) f |= kFeatureFp8KV;
  if (p.custom_mask) f |= kFeatureCustomMask;
  return f;
}

std::string feature_names(unsigned features) {
  std::string s;
  auto add = [&](unsigned bit, const char* name) {
    if (features & bit) s += (s.empty() ? "" : ", ") + std::string(name);
  };
  add(kFeatureWindowRight, "window_right");
  add(kFeatureSinks, "sinks");
  add(kFeatureFp8KV, "fp8 KV");
  add(kFeatureCustomMask, "custom_mask");
  return s;
}

Status status_for(const CapabilityRow& row, const ProblemDesc& p) {
  if (row.status == Status::kValidated && (row.unvalidated & features_of(p)) != 0) return Status::kDeclared;
  return row.status;
}

namespace {

constexpr Op kAllOps[] = {Op::kSinglePrefill, Op::kRaggedPrefill, Op::kPagedPrefill, Op::kPagedDecode};

Limits cpu_limits() {
  Limits l;
  // kE4M3 q: fp8 attention, with e4m3 K/V and P quantized as SPEC.md states (validate::kv_dtype).
  l.dtypes = {DType::kF16, DType::kBF16, DType::kF32, DType::kE4M3};
  l.kv_dtypes = {DType::kE4M3, DType::kE5M2};  // with fp16 / bf16 q (validate::kv_dtype)
  l.max_head_dim = 512;
  return l;
}

// cudnn's graphs do not bind a custom mask yet (issue 66); sm80's kernels
// (kernels/prefill_mask_*.cu) and sm90's runtime-mask rows (custom_mask.h) read the bits.
constexpr const char* kNoMaskKernels = ": not bound in its graphs yet, issue 66; cpu, sm80 and sm90 serve it";

Limits sm80_limits() {
  Limits l;
  l.dtypes = {DType::kF16, DType::kBF16};
  // Its mma.sync kernels are 16-bit; fp8 mma exists only from sm_89 on.
  l.fp8_attention_note = "no fp8 tensor cores before sm_89, and its mma.sync kernels are 16-bit (issue 60)";
  l.kv_dtypes = {DType::kE4M3, DType::kE5M2};  // kernels/fp8kv_*.cu (not yet run on a GPU: F45)
  l.head_dims = {64, 128, 256};
  l.device_page_indices = true;  // its kernels read page_indices through a pointer, checked
  return l;
}

// sm_86 and sm_89 give a block 99 KB of shared memory against 163 KB on sm_80 and sm_87:
// enough for sm80's D = 64 and 128 prefill tiles (64 / 96 KB) and D = 64 decode (66 KB),
// not for D = 256 prefill (160 KB) or D = 128 / 256 decode (100 / 136 KB).
// tests/unit/sm80_smem_fit_test.cpp holds these rows to the tiles' sizes.
Limits sm80_limits_99kb(Op op) {
  Limits l = sm80_limits();
  l.head_dims = op == Op::kPagedDecode ? std::vector<int>{64} : std::vector<int>{64, 128};
  // The fp8 tiles (deeper decode pipelines) are not held to 99 KB by sm80_smem_fit_test.
  l.kv_dtypes.clear();
  l.kv_dtypes_note = "its fp8 K/V tiles are not checked against this arch's 99 KB of shared memory";
  return l;
}

// fp8 K/V: the paged producer converts gathered fp8 rows to q's type on their way into the
// stage buffers wgmma reads (producer.h gather_tile_fp8). Single and ragged prefill load
// contiguous K/V with TMA boxes, which land fp8 bytes unconverted: refused there, so auto
// takes sm80's fp8 kernels.
Limits sm90_limits(Op op) {
  Limits l = sm80_limits();
  l.device_page_indices = false;  // its planner reads the page indices to build TMA work
  l.fp8_attention_note = "fp8 attention kernels not written yet, issue 60";
  if (op != Op::kPagedPrefill) {
    l.kv_dtypes.clear();
    l.kv_dtypes_note = "its single and ragged prefill load contiguous K/V by TMA, with no fp8 conversion on the way "
                       "to wgmma; its paged prefill and sm80 serve fp8 K/V (issue 65)";
  }
  l.custom_mask = true;  // the runtime-mask kernels read the bits (custom_mask.h)
  l.note_custom_mask = nullptr;
  return l;
}

Limits cudnn_limits(Op op, int min_arch) {
  const bool decode_before_sm90 = op == Op::kPagedDecode && min_arch < 90;
  Limits l;
  l.dtypes = {DType::kF16, DType::kBF16};
  // Where a cuDNN fp8 SDPA graph could serve SPEC.md's fp8 attention, by cudnn-frontend's
  // support surface (sdpa_support_surface.h, fp8 forward): not before Hopper; on Hopper it
  // writes fp8 output only and masks causal top-left only.
  l.fp8_attention_note =
      min_arch < 90    ? "cuDNN's fp8 SDPA needs Hopper or newer"
      : min_arch == 90 ? "cuDNN's fp8 SDPA on Hopper writes fp8 output only (fp16/bf16 output needs Blackwell and "
                         "cuDNN 9.13) and has no bottom-right causal mask"
                       : "not wired yet: flashband builds no cuDNN fp8 SDPA graph (issue 60)";
  // Not yet known whether its SDPA graph takes 16-bit q with fp8 K/V (issue 65).
  l.kv_dtypes_note = "no cuDNN graph with fp16/bf16 q and fp8 K/V is built (issue 65)";
  // cuDNN documents decode on compute capability 8.x for head dims up to 128 only.
  l.head_dims = decode_before_sm90 ? std::vector<int>{64, 128} : std::vector<int>{64, 128, 256};
  l.soft_cap = false;     // cuDNN's score modifier does not combine with its padding/band masks
  l.empty_rows = false;   // cuDNN does not promise exact 0 / -inf for rows that see no key
  // Its band mask is wrong for rows left of key 0 when qo_len > kv_len (bottom-right alignment).
  l.window_qo_longer_than_kv = false;
  l.page_size_pow2 = true;  // its paged-cache load needs a power-of-two block size
  l.split_kv_control = false;  // cuDNN picks its engines, which may cut the keys themselves
  l.cudnn_versions = true;
  l.custom_mask = false;
  l.note_custom_mask = kNoMaskKernels;
  // Sinks go into the graph as cudnn-frontend's sink_token (cuDNN >= 9.13: the version
  // before is a known-bad window, dispatch/cudnn_known_bad.h).
  l.sinks = true;
  return l;
}

std::vector<CapabilityRow> build_table() {
  std::vector<CapabilityRow> rows;
  for (Op op : kAllOps) {
    rows.push_back({op, Backend::kCPU, 0, 0, Status::kValidated, cpu_limits(),
                    "reference backend; CI runs its full grid"});
  }
  for (Op op : kAllOps) {
    const char* kDeclared = "built for sm_80; no Ampere or Ada machine to validate on";
    rows.push_back({op, Backend::kSM80, 80, 80, Status::kDeclared, sm80_limits(), kDeclared});
    rows.push_back({op, Backend::kSM80, 86, 86, Status::kDeclared, sm80_limits_99kb(op), kDeclared});
    rows.push_back({op, Backend::kSM80, 87, 87, Status::kDeclared, sm80_limits(), kDeclared});
    rows.push_back({op, Backend::kSM80, 89, 89, Status::kDeclared, sm80_limits_99kb(op), kDeclared});
    rows.push_back({op, Backend::kSM80, 90, 90, Status::kValidated, sm80_limits(),
                    "sm_90a build of the portable kernels; GPU grid passed on H200 (docs/findings.md F34)"});
  }
  for (Op op : {Op::kSinglePrefill, Op::kRaggedPrefill, Op::kPagedPrefill}) {
    rows.push_back({op, Backend::kSM90, 90, 90, Status::kValidated, sm90_limits(op),
                    "TMA + wgmma, warp-specialised; GPU grid passed on H200 (docs/findings.md F34)"});
  }
  rows.push_back({Op::kPagedDecode, Backend::kSM90, 90, 90, Status::kUnsupported, {},
                  "decode is memory-bound: served by sm80's decode kernel"});
  for (Op op : kAllOps) {
    rows.push_back({op, Backend::kCUDNN, 80, 89, Status::kDeclared, cudnn_limits(op, 80),
                    "cuDNN SDPA graphs through cudnn-frontend"});
    rows.push_back({op, Backend::kCUDNN, 90, 90, Status::kValidated, cudnn_limits(op, 90),
                    "cuDNN SDPA graphs; GPU grid passed on H200 with cuDNN 9.19 (docs/findings.md F34)"});
    rows.push_back({op, Backend::kCUDNN, 100, 120, Status::kDeclared, cudnn_limits(op, 100),
                    "cuDNN SDPA graphs through cudnn-frontend"});
  }
  // Decode has no custom mask, as FlashInfer's decode has none: paged prefill serves one.
  for (CapabilityRow& r : rows) {
    if (r.op != Op::kPagedDecode) continue;
    r.limits.custom_mask = false;
    r.limits.note_custom_mask = ": paged decode takes no custom mask (nor does FlashInfer's); use paged prefill";
    if (r.backend == Backend::kCUDNN) {
      // cudnn-frontend refuses a sink_token in its decode mode ("decode only mode, i.e. s_q ==
      // 1, not supported with sink_token", seen by validating on the host with 9.19).
      r.limits.sinks = false;
      r.limits.note_sinks = ": cuDNN's decode mode (s_q = 1) takes no sink token; sm80 and cpu serve sinks in decode";
    }
  }
  // Served and compiled, but their GPU grids have not run (findings F45): clear a bit
  // together with the run that validates it (tests/gpu/attention_grid_test.cpp Band,
  // tests/gpu/sinks_test.cpp, tests/gpu/sm80_fp8_kv_test.cpp, sm90_fp8_kv_test.cpp, fp8_kv_grid_test.cpp,
  // tests/gpu/custom_mask_test.cpp).
  for (CapabilityRow& r : rows) {
    if (r.backend == Backend::kSM80 || r.backend == Backend::kSM90) r.unvalidated = kFeatureWindowRight | kFeatureSinks;
    if (r.backend == Backend::kSM80) r.unvalidated |= kFeatureFp8KV | kFeatureCustomMask;
    // tests/gpu/custom_mask_sm90_test.cpp, sm90_fp8_kv_test.cpp
    if (r.backend == Backend::kSM90) r.unvalidated |= kFeatureCustomMask | kFeatureFp8KV;
    if (r.backend == Backend::kCUDNN) r.unvalidated = kFeatureWindowRight | kFeatureSinks;
  }
  return rows;
}

}  // namespace

const std::vector<CapabilityRow>& capability_table() {
  static const std::vector<CapabilityRow> table = build_table();
  return table;
}

}  // namespace flashband::dispatch
