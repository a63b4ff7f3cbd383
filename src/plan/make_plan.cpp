#include "plan/make_plan.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <string>

#include "validate/validate.h"
#include "core/mask.h"
#include "dispatch/auto_order.h"
#include "dispatch/backend.h"
#include "dispatch/select.h"
#include "plan/graph_window.h"
#include "plan/page_status.h"

namespace flashband::detail {

namespace {

[[noreturn]] void fail(const std::string& msg) { throw Error(ErrorCode::kInvalidArgument, msg); }

// Fills kv_indptr/page arrays and kv_lens from a paged index, checking every entry.
void read_pages(Plan& plan, const PagedIndex& pages, int batch) {
  if (pages.page_size < 1) fail("page_size: got " + std::to_string(pages.page_size) + ", allowed: >= 1");
  if (pages.num_pages < 0) fail("num_pages: got " + std::to_string(pages.num_pages) + ", allowed: >= 0");
  const int64_t nnz = validate::indptr("paged_kv_indptr", pages.indptr, batch);
  if (nnz > 0 && !pages.indices && !pages.device_indices)
    fail("paged_kv_indices: is null but paged_kv_indptr ends at " + std::to_string(nnz));
  if (batch > 0 && !pages.last_page_len) fail("paged_kv_last_page_len: is null, expected " + std::to_string(batch) + " entries");
  plan.page_size = pages.page_size;
  plan.num_pages = pages.num_pages;
  plan.kv_indptr.assign(pages.indptr, pages.indptr + batch + 1);
  plan.device_page_indices = pages.device_indices;
  // Device indices alone are never read here: the kernels check them as they read them.
  if (pages.indices) plan.page_indices.assign(pages.indices, pages.indices + nnz);
  for (std::size_t i = 0; i < plan.page_indices.size(); ++i) {
    const int32_t p = plan.page_indices[i];
    if (p < 0 || p >= pages.num_pages)
      fail("paged_kv_indices: entry " + std::to_string(i) + " is " + std::to_string(p) + ", allowed: [0, num_pages=" +
           std::to_string(pages.num_pages) + ")");
    plan.max_page_index = std::max(plan.max_page_index, p);
  }
  plan.last_page_len.assign(pages.last_page_len, pages.last_page_len + batch);
  plan.kv_lens.resize(batch);
  for (int b = 0; b < batch; ++b) {
    const int n = pages.indptr[b + 1] - pages.indptr[b];
    const int last = plan.last_page_len[b];
    if (n > 0 && (last < 1 || last > pages.page_size))
      fail("paged_kv_last_page_len: entry " + std::to_string(b) + " is " + std::to_string(last) + ", allowed: [1, page_size=" +
           std::to_string(pages.page_size) + "] for a request with pages");
    const int64_t kv_len = n == 0 ? 0 : int64_t{n - 1} * pages.page_size + last;
    if (kv_len > INT32_MAX)
      fail("paged_kv_indptr: request " + std::to_string(b) + " has " + std::to_string(n) + " pages of page_size " +
           std::to_string(pages.page_size) + ", kv_len " + std::to_string(kv_len) + " > 2^31 - 1");
    plan.kv_lens[b] = static_cast<int32_t>(kv_len);
  }
}

// Each request's segment of qo_len * kv_len bits padded to whole bytes (SPEC.md "Custom
// masks"; FlashInfer's segment_packbits): [batch + 1] byte offsets.
std::vector<int64_t> mask_byte_offsets(const std::vector<int32_t>& qo_indptr, const std::vector<int32_t>& kv_lens) {
  std::vector<int64_t> offsets(kv_lens.size() + 1, 0);
  for (std::size_t b = 0; b < kv_lens.size(); ++b) {
    const int64_t bits = int64_t{qo_indptr[b + 1] - qo_indptr[b]} * kv_lens[b];
    offsets[b + 1] = offsets[b] + (bits + 7) / 8;
  }
  return offsets;
}

const dispatch::BackendOps& built_ops(Backend b) {
  if (const dispatch::BackendOps* ops = dispatch::backend_ops(b)) return *ops;
  throw Error(ErrorCode::kNotBuilt, std::string("backend '") + backend_name(b) + "' is not in this build");
}

}  // namespace

std::shared_ptr<Plan> make_plan(const PlanRequest& r, const Workspace& workspace) {
  auto plan = prepare_plan(r);
  finish_plan(*plan, workspace);
  return plan;
}

std::string first_accepting(std::size_t n, bool fallback, const std::function<void(std::size_t)>& attempt) {
  std::string refusals;
  for (std::size_t i = 0; i < n; ++i) {
    try {
      attempt(i);
      return refusals;
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kUnsupported || !fallback) throw;
      refusals += std::string("\n  ") + e.what();
    }
  }
  throw Error(ErrorCode::kUnsupported, "backend 'auto': every backend that claims this problem refused it at plan time:" +
                                           refusals);
}

void finish_plan(Plan& p, const Workspace& workspace) {
  const auto data = reinterpret_cast<uintptr_t>(workspace.data);
  const auto plan_data = reinterpret_cast<uintptr_t>(workspace.plan_data);
  if (p.shape.device == Device::kCUDA && data % 16 != 0)
    fail("workspace: GPU pointer " + std::to_string(data) + " is not 16-byte aligned");
  if (p.shape.device == Device::kCUDA && plan_data % 16 != 0)
    fail("workspace: plan_data " + std::to_string(plan_data) + " is not 16-byte aligned");
  if (plan_data == 0 && workspace.plan_bytes != 0)
    fail("workspace: plan_bytes is " + std::to_string(workspace.plan_bytes) + " without a plan_data");
  // The plan's arrays must not sit in the scratch its own runs write.
  if (plan_data != 0 && data != 0 && plan_data < data + workspace.bytes && data < plan_data + workspace.plan_bytes)
    fail("workspace: plan_data overlaps data; the plan's arrays need bytes of their own");
  // A backend may still refuse here (cuDNN refusing a graph); `auto` then tries the next one
  // from a clean copy of the parameters.
  const core::AttentionParams base = p.params;
  const std::string passed_over = p.selection;
  const std::string refused = first_accepting(p.candidates.size(), p.opts.backend == Backend::kAuto, [&](std::size_t i) {
    p.backend = p.candidates[i].backend;
    p.kernel = *p.candidates[i].kernel;
    p.params = base;
    p.backend_state.reset();
    p.variant = p.kernel.key.to_string();
    built_ops(p.backend).plan(p, workspace);
    if (!p.params.work && p.backend_state) p.params.work = p.backend_state.get();
    // Only the cuda_graph guard compares signatures: other plans skip building it. Only
    // backends whose launch reads backend_state have one (cpu and sm80 launch from params).
    const auto signature = built_ops(p.backend).state_signature;
    if (p.opts.cuda_graph && signature) p.state_signature = signature(p);
  });
  if (p.opts.backend == Backend::kAuto) {
    p.chosen_by_auto = true;
    std::string order;
    for (Backend b : p.auto_rule->order) order += std::string(order.empty() ? "" : ", ") + backend_name(b);
    p.selection = "auto (rule " + std::string(p.auto_rule->name) + ": preference " + order + ") chose " +
                  backend_name(p.backend) +
                  (passed_over.empty() && refused.empty() ? "" : "; passed over:" + passed_over + refused);
  }
}

std::shared_ptr<Plan> prepare_plan(const PlanRequest& r) {
  validate::options(r.opts);
  validate::heads(r.shape.num_qo_heads, r.shape.num_kv_heads, r.shape.head_dim);
  validate::stream_for_device(r.opts.stream, r.shape.device);
  if (r.shape.dtype != DType::kF16 && r.shape.dtype != DType::kBF16 && r.shape.dtype != DType::kF32 &&
      r.shape.dtype != DType::kE4M3)
    fail(std::string("q_data_type: got ") + dtype_name(r.shape.dtype) +
         ", allowed: float16, bfloat16, float32, float8_e4m3fn (fp8 attention)" +
         (is_fp8(r.shape.dtype) ? "; an fp8 cache with 16-bit q takes kv_data_type" : ""));
  const DType kv_dtype = r.shape.kv_dtype.value_or(r.shape.dtype);
  validate::kv_dtype(r.shape.dtype, kv_dtype);
  const DType o_dtype = validate::o_dtype(r.shape.dtype, r.shape.o_dtype, "o_data_type");

  auto plan = std::make_shared<Plan>();
  Plan& p = *plan;
  p.shape = r.shape;
  p.opts = r.opts;
  p.batch = r.batch;

  if (r.op == Op::kPagedDecode) {
    if (r.batch < 0) fail("batch_size: got " + std::to_string(r.batch) + ", allowed: >= 0");
    p.qo_indptr.resize(r.batch + 1);
    for (int b = 0; b <= r.batch; ++b) p.qo_indptr[b] = b;
  } else {
    validate::indptr("qo_indptr", r.qo_indptr, r.batch);
    p.qo_indptr.assign(r.qo_indptr, r.qo_indptr + r.batch + 1);
  }
  if (r.op == Op::kPagedPrefill || r.op == Op::kPagedDecode) {
    if (!r.pages) fail("paged_kv: missing page index");
    read_pages(p, *r.pages, r.batch);
    if (p.device_page_indices && r.page_status) {
      p.page_status_owner = r.page_status;
      p.page_status = r.page_status->device_word();
    }
  } else {
    p.total_kv_tokens = validate::indptr("kv_indptr", r.kv_indptr, r.batch);
    p.kv_indptr.assign(r.kv_indptr, r.kv_indptr + r.batch + 1);
    p.kv_lens.resize(r.batch);
    for (int b = 0; b < r.batch; ++b) p.kv_lens[b] = p.kv_indptr[b + 1] - p.kv_indptr[b];
  }

  // The right bound: causal is window_right 0 (validate refused causal with a wider one),
  // so a plan carries it once, as causal, and window_right only when it is >= 1.
  const int right = r.opts.causal ? 0 : r.opts.window_right;
  int max_qo = 0, max_kv = 0;
  bool empty_rows = false, qo_longer = false;
  for (int b = 0; b < r.batch; ++b) {
    const int qo = p.qo_indptr[b + 1] - p.qo_indptr[b];
    const int kv = p.kv_lens[b];
    max_qo = std::max(max_qo, qo);
    max_kv = std::max(max_kv, kv);
    // Row 0 sees no key when its right bound p(0) + right lies left of key 0.
    if (qo > 0 && (kv == 0 || (right >= 0 && int64_t{qo} > int64_t{kv} + right))) empty_rows = true;
    if (qo > kv) qo_longer = true;
  }
  // The plan never reads the bits (they are run()'s, maybe on the device): any row may be empty.
  if (r.opts.custom_mask) {
    empty_rows = true;
    p.mask_indptr = mask_byte_offsets(p.qo_indptr, p.kv_lens);
  }
  // A window is a no-op only when it is one for every request of the batch. Under
  // cuda_graph it stays (plan/graph_window.h): dropping it would change the kernel once the
  // requests outgrow it, and so the launch that a captured graph holds. The same holds for
  // window_right against the longest qo_len.
  const int window = r.opts.cuda_graph ? graph_window(r.opts.window_left, max_kv)
                                       : core::normalize_window(r.opts.window_left, max_kv);
  const bool causal = right == 0;
  const int window_right = right < 1                ? -1
                           : r.opts.cuda_graph      ? graph_window(right, max_qo)
                                                    : core::normalize_window_right(right, max_qo);

  ProblemDesc& d = p.problem;
  d.op = r.op;
  d.dtype = r.shape.dtype;
  d.kv_dtype = kv_dtype;
  d.device = r.shape.device;
  d.device_id = r.shape.device_id;
  d.head_dim = r.shape.head_dim;
  d.num_qo_heads = r.shape.num_qo_heads;
  d.num_kv_heads = r.shape.num_kv_heads;
  d.causal = causal;
  d.window_left = window;
  d.window_right = window_right;
  d.soft_cap = r.opts.logits_soft_cap > 0.0f;
  d.sinks = r.opts.sinks;
  d.custom_mask = r.opts.custom_mask;
  d.return_lse = r.opts.return_lse;
  d.kv_layout = r.opts.kv_layout;
  d.page_size = p.page_size;
  d.has_empty_rows = empty_rows;
  d.max_kv_len = max_kv;
  d.qo_longer_than_kv = qo_longer;
  d.cuda_graph = r.opts.cuda_graph;
  d.disable_split_kv = r.opts.disable_split_kv;
  d.device_page_indices = r.pages && r.pages->device_indices;

  const auto machine = dispatch::machine_info(d.device, d.device_id);
  p.candidates = dispatch::candidates(d, r.opts.backend, machine, dispatch::registry(),
                                     dispatch::capability_table(), &p.selection);
  if (r.opts.backend != Backend::kAuto) p.selection = "requested";
  else p.auto_rule = &dispatch::auto_rule(d, machine.arch);
  p.backend = p.candidates.front().backend;
  p.kernel = *p.candidates.front().kernel;

  core::AttentionParams& a = p.params;
  a.op = r.op;
  a.dtype = d.dtype;
  a.o_dtype = o_dtype;
  a.kv_dtype = kv_dtype;
  a.batch = r.batch;
  a.num_qo_heads = d.num_qo_heads;
  a.num_kv_heads = d.num_kv_heads;
  a.head_dim = d.head_dim;
  a.kv_storage = (r.op == Op::kPagedPrefill || r.op == Op::kPagedDecode) ? core::KVStorage::kPaged
                                                                         : core::KVStorage::kContiguous;
  a.page_size = p.page_size;
  a.causal = d.causal;
  a.window_left = window;
  a.window_right = window_right;
  a.logits_soft_cap = r.opts.logits_soft_cap;
  a.sm_scale = r.opts.sm_scale ? *r.opts.sm_scale : 1.0f / std::sqrt(static_cast<float>(d.head_dim));
  a.max_qo_len = max_qo;
  a.max_kv_len = max_kv;
  a.total_qo_tokens = p.qo_indptr[r.batch];
  a.stream = r.opts.stream;
  p.opts.sm_scale = a.sm_scale;
  // Kernels fold the scale into tanh's argument (s * sm_scale / cap); a cap so small that
  // this overflows float32 would turn 0 * inf into NaN.
  if (a.logits_soft_cap > 0.0f && !std::isfinite(a.sm_scale / a.logits_soft_cap))
    fail("logits_soft_cap: got " + std::to_string(a.logits_soft_cap) + ", too small for sm_scale " +
         std::to_string(a.sm_scale) + " (sm_scale / logits_soft_cap overflows float32)");
  return plan;
}

RunInfo planned_info(const Plan& plan) {
  RunInfo info;
  info.backend = plan.backend;
  info.variant = plan.variant;
  info.num_kv_splits = plan.params.num_kv_splits;
  info.selection = plan.selection;
  return info;
}

}  // namespace flashband::detail
