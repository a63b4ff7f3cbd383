// sm90's dispatch, without a GPU: for every registry key and a sweep of problems, the key's
// launch runs the kernel its plan chose, and every choice of the tile rule has a compiled
// row. The real register.cpp, compiled_kernels.cpp (the table), tile_rule.cpp, plan.cpp
// (plan_sm90) and kernel_args.cpp (make_kernel_params) are compiled into this test;
// launch_prefill is a stub that records which kernel ran and then runs make_kernel_params's
// refusals. The stub is instantiated for exactly the rows of kernel_list.h, from which the
// build generates the kernels, so a launch of any other kernel fails the link.
//
// Why: a launch that quietly runs another correct kernel than the plan's (the runtime-mask
// kernel instead of a causal-only one, the narrow tile's instead of the wide one's) passes
// every oracle comparison; only its speed shows it. ctest runs this binary three times:
// with the default causal-kernel row limit and with FLASHBAND_SM90_CAUSAL_MAX_ROWS at 0
// and 100 (tests/gpu/CMakeLists.txt).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "backends/cuda/device_info.h"
#include "backends/cuda/upload.h"
#include "backends/sm90/compiled_kernels.h"
#include "backends/sm90/kernel_args.h"
#include "backends/sm90/sm90_backend.h"
#include "backends/sm90/tensor_map.h"
#include "backends/sm90/tile_rule.h"
#include "core/mask.h"
#include "dispatch/backend.h"
#include "dispatch/registry.h"
#include "flashband/error.h"
#include "plan/plan.h"

namespace flashband {

// ---- what the compiled sources call that needs a GPU or another backend ----
namespace cuda {
int multiprocessor_count(int) { return 132; }
int current_device() { return 0; }
int max_shared_memory_per_block(int) { return 227 * 1024; }
// Index arrays only take their place in the workspace: nothing is uploaded here.
std::size_t IndexBlob::append(const void*, std::size_t bytes) {
  const std::size_t offset = align_up(bytes_.size());
  bytes_.resize(align_up(offset + bytes));
  return offset;
}
void upload_async(void*, const IndexBlob&, void*) {}
}  // namespace cuda
namespace dispatch {
// The registry of this test holds sm90's keys alone.
const std::vector<const BackendOps*>& built_backend_ops() {
  static const BackendOps sm90_ops = {Backend::kSM90, register_sm90_kernels, detail::plan_sm90};
  static const std::vector<const BackendOps*> ops = {&sm90_ops};
  return ops;
}
}  // namespace dispatch

namespace sm90 {
CUtensorMap make_paged_map(const PagedPool&, int, const char*) { throw Error(ErrorCode::kInternal, "stub"); }
CUtensorMap make_token_major_map(const TokenMajorTensor&, int, const char*) {
  throw Error(ErrorCode::kInternal, "stub");
}
}  // namespace sm90

namespace {

// One compiled kernel.
struct KernelId {
  DType dtype;
  int head_dim;
  bool paged, wide;
  sm90::MaskKind mask;
  bool fp8_kv;
  auto tie() const {
    return std::make_tuple(static_cast<int>(dtype), head_dim, paged, wide, static_cast<int>(mask), fp8_kv);
  }
  bool operator<(const KernelId& o) const { return tie() < o.tie(); }
  std::string name() const {
    const char* m = mask == sm90::MaskKind::kAny ? "runtime-mask" : mask == sm90::MaskKind::kCausal ? "causal" : "kv-len";
    return std::string(dtype == DType::kF16 ? "f16" : "bf16") + " D=" + std::to_string(head_dim) +
           (paged ? " paged" : " contiguous") + (wide ? " wide " : " narrow ") + m + (fp8_kv ? " fp8 K/V" : "");
  }
};

// What the last launch ran.
struct Ran {
  int calls = 0;
  KernelId kernel{};
  int block_m = 0, block_n = 0;
  bool gather_only = false;
  std::string refused;
};
Ran g_ran;

}  // namespace

namespace sm90 {
template <DType kDType, int kHeadDim, bool kPaged, bool kWide, MaskKind kMask, bool kFp8KV>
void launch_prefill(const core::AttentionParams& a) {
  ++g_ran.calls;
  g_ran.kernel = {kDType, kHeadDim, kPaged, kWide, kMask, kFp8KV};
  g_ran.block_m = TileConfig<kHeadDim, kWide>::kBlockM;
  g_ran.block_n = TileConfig<kHeadDim, kWide>::kBlockN;
  g_ran.gather_only = kPagedGatherOnly<kHeadDim, kWide> || kFp8KV;  // as shared_storage.h kGatherOnly
  PlanState st = plan_state(a);  // without work items make_kernel_params stops after its checks
  st.items = nullptr;
  st.num_items = 0;
  try {
    (void)make_kernel_params(a, st, {g_ran.block_m, g_ran.block_n, kPaged, kMask, g_ran.gather_only, kFp8KV});
  } catch (const Error& e) {
    g_ran.refused = e.what();
  }
}
}  // namespace sm90

#define FLASHBAND_SM90_KERNEL(DTYPE, HEAD_DIM, STORAGE, TILE, MASK, KV) \
  template void FLASHBAND_SM90_LAUNCH_OF(DTYPE, HEAD_DIM, STORAGE, TILE, MASK, KV)(const core::AttentionParams&);
#include "backends/sm90/kernel_list.h"
#undef FLASHBAND_SM90_KERNEL

namespace {

KernelId id_of(const sm90::CompiledKernel& k) {
  return {k.dtype, k.head_dim, k.storage == core::KVStorage::kPaged, k.wide, k.mask, k.fp8_kv};
}

// Whether a tile has a kernel compiled without masks (the rule's choice for problems
// without a mask or soft cap).
bool has_kvlen_kernel(int head_dim, bool wide) { return wide || sm90::narrow_folds_mask(head_dim); }

struct Sweep {
  int checked = 0;
  std::vector<std::string> failures;  // the first few
  int failed = 0;
  std::set<KernelId> reached;
};

// The plan make_plan() would hand plan_sm90 for this problem; page_size 0 for contiguous
// K/V, pages numbered from first_page in request order.
detail::Plan problem_plan(DType dt, int D, int page_size, const std::vector<int>& qo, const std::vector<int>& kv,
                          bool causal, int window_in, float cap, int first_page = 0, int qo_heads = 4,
                          int kv_heads = 2) {
  const bool paged = page_size > 0;
  detail::Plan plan;
  const int B = static_cast<int>(qo.size());
  plan.batch = B;
  plan.qo_indptr = {0};
  for (int q : qo) plan.qo_indptr.push_back(plan.qo_indptr.back() + q);
  plan.kv_lens.assign(kv.begin(), kv.end());
  plan.kv_indptr = {0};
  if (paged) {
    plan.page_size = page_size;
    int page = 0;
    for (int b = 0; b < B; ++b) {
      const int pages = (kv[b] + page_size - 1) / page_size;
      for (int p = 0; p < pages; ++p) plan.page_indices.push_back(first_page + page++);
      plan.kv_indptr.push_back(plan.kv_indptr.back() + pages);
      plan.last_page_len.push_back(kv[b] == 0 ? 0 : (kv[b] - 1) % page_size + 1);
    }
    plan.num_pages = first_page + page;
    plan.max_page_index = first_page + page - 1;
  } else {
    for (int k : kv) plan.kv_indptr.push_back(plan.kv_indptr.back() + k);
  }
  const int max_kv = *std::max_element(kv.begin(), kv.end());
  const int max_qo = *std::max_element(qo.begin(), qo.end());
  core::AttentionParams& a = plan.params;
  a.op = paged ? Op::kPagedPrefill : (B == 1 ? Op::kSinglePrefill : Op::kRaggedPrefill);
  a.dtype = dt;
  a.kv_dtype = dt;
  a.batch = B;
  a.num_qo_heads = qo_heads;
  a.num_kv_heads = kv_heads;
  a.head_dim = D;
  a.kv_storage = paged ? core::KVStorage::kPaged : core::KVStorage::kContiguous;
  a.page_size = paged ? page_size : 0;
  a.causal = causal;
  a.window_left = core::normalize_window(window_in, max_kv);  // as plan() does
  a.logits_soft_cap = cap;
  a.max_qo_len = max_qo;
  a.max_kv_len = max_kv;
  a.total_qo_tokens = plan.qo_indptr[B];
  return plan;
}

// The planner's workspace for every plan of this file (nothing is uploaded).
const Workspace& test_workspace() {
  static const std::unique_ptr<unsigned char[]> bytes(new unsigned char[size_t{256} << 20]);
  static const Workspace ws{bytes.get(), size_t{256} << 20};
  return ws;
}

// The registry key make_plan() would look up for the planned problem.
dispatch::VariantKey key_of(const core::AttentionParams& a) {
  dispatch::VariantKey key;
  key.backend = Backend::kSM90;
  key.shape = dispatch::KernelShape::kPrefill;
  key.storage = a.kv_storage;
  key.dtype = a.dtype;
  key.kv_dtype = a.kv_dtype;
  key.head_dim = a.head_dim;
  key.needs_mask = core::needs_mask(a.causal, a.window_left, a.window_right);
  key.soft_cap = a.logits_soft_cap > 0.0f;
  return key;
}

// kv_dt: the K/V dtype (dt, or an fp8 format on paged K/V).
void check_one(Sweep& sw, const dispatch::Registry& reg, DType dt, DType kv_dt, int D, int page_size,
               const std::vector<int>& qo, const std::vector<int>& kv, bool causal, int window_in, float cap) {
  const bool paged = page_size > 0;
  detail::Plan plan = problem_plan(dt, D, page_size, qo, kv, causal, window_in, cap);
  core::AttentionParams& a = plan.params;
  a.kv_dtype = kv_dt;
  const int B = static_cast<int>(qo.size());

  const dispatch::VariantKey key = key_of(a);
  const std::string what = key.to_string() + " qo " + std::to_string(qo[0]) + (B > 1 ? "+" : "") + " kv " +
                           std::to_string(kv[0]) + " window " + std::to_string(a.window_left) +
                           (paged ? " page " + std::to_string(page_size) : "");
  ++sw.checked;
  std::string why;
  const dispatch::KernelEntry* e = reg.find(key);
  if (e == nullptr) {
    why = " no registry entry";
  } else {
    plan.variant = key.to_string();
    try {
      detail::plan_sm90(plan, test_workspace());
    } catch (const Error& err) {
      ++sw.failed;
      if (sw.failures.size() < 20) sw.failures.push_back(what + ": plan refused: " + err.what());
      return;
    }
    const sm90::PlanState& st = sm90::plan_state(a);
    g_ran = Ran{};
    e->launch(a);
    const KernelId& k = g_ran.kernel;
    const bool ran_causal = k.mask == sm90::MaskKind::kCausal;
    if (g_ran.calls != 1) why += " launches " + std::to_string(g_ran.calls);
    if (!g_ran.refused.empty()) why += " refused: " + g_ran.refused;
    if (g_ran.block_m != st.block_m || g_ran.block_n != st.block_n)
      why += " ran the " + std::to_string(g_ran.block_m) + "x" + std::to_string(g_ran.block_n) + " tile, planned " +
             std::to_string(st.block_m) + "x" + std::to_string(st.block_n);
    if (k.dtype != dt || k.head_dim != D || k.paged != paged || k.fp8_kv != is_fp8(kv_dt)) why += " ran " + k.name();
    const bool planned_causal = st.kernel->mask == sm90::MaskKind::kCausal;
    if (ran_causal != planned_causal)
      why += std::string(" ran the ") + (ran_causal ? "causal-only" : "other") + " kernel, planned the " +
             (planned_causal ? "causal-only" : "other");
    if (id_of(*st.kernel).tie() != k.tie()) why += " ran " + k.name() + ", planned " + st.kernel->name;
    if ((plan.variant.find("/causal") != std::string::npos) != planned_causal) why += " variant " + plan.variant;
    const bool masked = sm90::takes_runtime_mask_kernels(key.needs_mask, key.soft_cap);
    if (masked && k.mask == sm90::MaskKind::kKVLen) why += " a masked key ran a kernel without masks";
    // fp8 K/V has the runtime-mask rows only (kernel_list.h).
    if (!masked && (k.mask == sm90::MaskKind::kKVLen) != (has_kvlen_kernel(D, k.wide) && !k.fp8_kv))
      why += " an unmasked key ran " + k.name();
    if (why.empty()) sw.reached.insert(k);
  }
  if (!why.empty()) {
    ++sw.failed;
    if (sw.failures.size() < 20) sw.failures.push_back(what + ":" + why);
  }
}

// Every key, over requests of 1 to 20000 query rows (single, ragged batches, random ones),
// keys equal to, past, under and far past the query rows, with and without causal,
// windows and a soft cap, on contiguous K/V and on gathered and TMA pages. Run once per
// process.
const Sweep& sweep() {
  static const Sweep result = [] {
    Sweep sw;
    dispatch::Registry reg;
    dispatch::register_sm90_kernels(reg);
    std::vector<std::vector<int>> qos;
    for (int n : {1, 63, 64, 65, 128, 129, 192, 193, 300, 512, 640, 704, 768, 896, 1000, 1023, 1024, 2048, 2049,
                  3071, 3072, 4095, 4096, 6143, 6144, 6145, 8192, 8193, 12000, 16384, 20000})
      qos.push_back({n});
    qos.push_back({6300, 100});
    qos.push_back({1, 8191});
    qos.push_back({8300, 30});
    qos.push_back({16, 16, 16});
    std::mt19937 rng(7);
    for (int i = 0; i < 16; ++i) {
      std::vector<int> q;
      const int b = 1 + static_cast<int>(rng() % 5);
      for (int j = 0; j < b; ++j) q.push_back(1 + static_cast<int>(rng() % (rng() % 2 ? 20000 : 900)));
      qos.push_back(q);
    }
    for (DType dt : {DType::kF16, DType::kBF16})
      for (int D : {64, 128, 256})
        for (int page_size : {0, 16, 128})  // contiguous, gathered pages, TMA pages
          for (const auto& qo : qos)
            for (int kv_mode = 0; kv_mode < 4; ++kv_mode) {
              std::vector<int> kv;
              for (int q : qo)
                kv.push_back(kv_mode == 0 ? q : kv_mode == 1 ? q + 57 : kv_mode == 2 ? std::max(1, q / 2) : q + 3000);
              for (bool causal : {false, true})
                for (int window : {-1, 0, 100, 1500, 1 << 30})  // the last hides nothing: normalised away
                  for (float cap : {0.0f, 5.0f})
                    check_one(sw, reg, dt, dt, D, page_size, qo, kv, causal, window, cap);
            }
    // fp8 K/V: paged only (gathered and power-of-two pages >= 64, which fp8 gathers too),
    // both formats, a shorter list of requests.
    for (DType dt : {DType::kF16, DType::kBF16})
      for (DType kv_dt : {DType::kE4M3, DType::kE5M2})
        for (int D : {64, 128, 256})
          for (int page_size : {1, 16, 128})
            for (std::size_t i = 0; i < qos.size(); i += 3)
              for (bool causal : {false, true})
                for (int window : {-1, 0, 1500})
                  for (float cap : {0.0f, 5.0f})
                    check_one(sw, reg, dt, kv_dt, D, page_size, qos[i], qos[i], causal, window, cap);
    return sw;
  }();
  return result;
}

TEST(Sm90Dispatch, EachKeysLaunchRunsThePlansKernel) {
  const Sweep& sw = sweep();
  EXPECT_GT(sw.checked, 20000);
  EXPECT_EQ(sw.failed, 0) << "of " << sw.checked;
  for (const std::string& f : sw.failures) ADD_FAILURE() << f;
}

// Every compiled kernel runs for some problem: none is dead code, and a launch that never
// picks a kernel (a new one, say) fails here. With the knob at 0 the causal-only kernels
// are off.
TEST(Sm90Dispatch, EveryCompiledKernelRunsForSomeProblem) {
  const Sweep& sw = sweep();
  const bool causal_off = sm90::causal_kernel_max_rows() == 0;
  std::set<KernelId> compiled;
  for (const sm90::CompiledKernel& k : sm90::compiled_kernels())
    if (!(causal_off && k.mask == sm90::MaskKind::kCausal)) compiled.insert(id_of(k));
  EXPECT_GE(compiled.size(), 24u);
  for (const KernelId& k : compiled) EXPECT_TRUE(sw.reached.count(k)) << "never launched: " << k.name();
  for (const KernelId& k : sw.reached) EXPECT_TRUE(compiled.count(k)) << "launched but not expected: " << k.name();
}

// The K/V element is compiled in: make_kernel_params refuses an fp8 cache on a 16-bit kernel
// and a 16-bit cache on an fp8 kernel (either would read the bytes as the other type).
TEST(Sm90Dispatch, KernelsRefuseTheOtherKVElement) {
  for (bool fp8_plan : {false, true}) {
    detail::Plan plan = problem_plan(DType::kBF16, 128, 16, {100}, {300}, true, -1, 0.0f);
    plan.params.kv_dtype = fp8_plan ? DType::kE4M3 : DType::kBF16;
    plan.variant = "test";
    detail::plan_sm90(plan, test_workspace());
    const sm90::CompiledKernel* other =
        sm90::find_kernel(DType::kBF16, 128, core::KVStorage::kPaged, false, sm90::MaskKind::kAny, !fp8_plan);
    ASSERT_NE(other, nullptr);
    g_ran = Ran{};
    other->launch(plan.params);
    EXPECT_NE(g_ran.refused.find("reached a kernel for"), std::string::npos) << g_ran.refused;
  }
}

// A two-sided band (window_left and window_right, not causal) rides the runtime-mask
// kernels (no kernel of its own) and its work list visits the band's KV tiles only, on both
// sides, so its cost follows the band rather than kv_len.
TEST(Sm90Dispatch, TwoSidedBandRunsTheMaskedKernelOverTheBandsTiles) {
  constexpr int kLen = 8192, kLeft = 128, kRight = 128;
  for (int D : {64, 128, 256})
    for (int page_size : {0, 16}) {
      detail::Plan plan = problem_plan(DType::kBF16, D, page_size, {kLen, kLen}, {kLen, kLen}, false, kLeft, 0.0f);
      core::AttentionParams& a = plan.params;
      a.window_right = core::normalize_window_right(kRight, kLen);
      ASSERT_EQ(a.window_right, kRight);
      const dispatch::VariantKey key = key_of(a);
      ASSERT_TRUE(key.needs_mask);
      plan.variant = key.to_string();
      detail::plan_sm90(plan, test_workspace());
      const sm90::PlanState& st = sm90::plan_state(a);
      SCOPED_TRACE("D " + std::to_string(D) + " page_size " + std::to_string(page_size) + " tile " +
                   std::to_string(st.block_m) + "x" + std::to_string(st.block_n));
      EXPECT_EQ(st.kernel->mask, sm90::MaskKind::kAny);
      int64_t tiles = 0;
      for (const sm90::WorkItem& it : st.host_items) {
        // The rows' band, [row0 - left, row_end - 1 + right], in whole tiles and no more.
        const int row0 = it.m_block * st.block_m, row_end = std::min(row0 + st.block_m, kLen);
        EXPECT_GE(it.n_begin, std::max(0, row0 - kLeft) / st.block_n);
        EXPECT_LE(it.n_end, (std::min(kLen, row_end + kRight) + st.block_n - 1) / st.block_n);
        tiles += it.n_end - it.n_begin;
      }
      const int64_t query_tiles = 2 * ((kLen + st.block_m - 1) / st.block_m);
      EXPECT_LE(tiles, query_tiles * ((st.block_m + kLeft + kRight) / st.block_n + 2));
      g_ran = Ran{};
      dispatch::Registry reg;
      dispatch::register_sm90_kernels(reg);
      reg.find(key)->launch(a);
      EXPECT_EQ(g_ran.calls, 1);
      EXPECT_TRUE(g_ran.refused.empty()) << g_ran.refused;
    }
}

// A custom mask (issue 66) rides the narrow tiles' runtime-mask kernels: a problem with one
// never gets a causal-only or kv_len-only kernel, nor a wide tile (those do not read its
// bits, and every oracle case of a dense mask would still pass), whatever its window, soft
// cap, lengths, storage and head dim; make_kernel_params refuses those pairs too; and each
// work item carries its own request's byte offset into the bits (empty requests included).
TEST(Sm90Dispatch, CustomMaskRunsTheRuntimeMaskKernelWithEachItemsOffset) {
  static const unsigned char kBits[16] = {};  // never read: the stub launch stops at its checks
  dispatch::Registry reg;
  dispatch::register_sm90_kernels(reg);
  int checked = 0;
  const std::vector<std::vector<int>> qos = {{1}, {64}, {200}, {3000}, {9000}, {17, 30, 0, 5, 3}, {64, 64, 64, 64}};
  for (DType dt : {DType::kF16, DType::kBF16})
    for (int D : {64, 128, 256})
      for (int page_size : {0, 16, 128})
        for (const auto& qo : qos)
          for (int extra_kv : {0, 57, 4096})
            for (int window : {-1, 0, 100})
              for (float cap : {0.0f, 5.0f}) {
                std::vector<int> kv;
                for (int q : qo) kv.push_back(q + extra_kv);
                detail::Plan plan = problem_plan(dt, D, page_size, qo, kv, false, window, cap);
                plan.opts.custom_mask = true;
                plan.mask_indptr = {0};
                for (std::size_t b = 0; b < qo.size(); ++b)
                  plan.mask_indptr.push_back(plan.mask_indptr.back() + (int64_t{qo[b]} * kv[b] + 7) / 8);
                core::AttentionParams& a = plan.params;
                dispatch::VariantKey key = key_of(a);
                key.needs_mask = true;  // as select.cpp's variant_for with a custom mask
                plan.variant = key.to_string();
                const std::string what = key.to_string() + " qo " + std::to_string(qo[0]) + " kv +" +
                                         std::to_string(extra_kv) + " page " + std::to_string(page_size);
                detail::plan_sm90(plan, test_workspace());
                const sm90::PlanState& st = sm90::plan_state(a);
                ++checked;
                EXPECT_EQ(st.kernel->mask, sm90::MaskKind::kAny) << what << ": planned " << st.kernel->name;
                EXPECT_FALSE(st.kernel->wide) << what << ": planned " << st.kernel->name;
                EXPECT_EQ(st.mask_bytes, plan.mask_indptr.back()) << what;
                ASSERT_EQ(st.host_mask_offsets.size(), st.host_items.size()) << what;
                for (std::size_t i = 0; i < st.host_items.size(); ++i) {
                  const sm90::WorkItem& it = st.host_items[i];
                  int b = 0;  // the request whose rows hold the item's
                  while (!(plan.qo_indptr[b] <= it.qo_start && it.qo_start < plan.qo_indptr[b + 1])) ++b;
                  ASSERT_EQ(st.host_mask_offsets[i], plan.mask_indptr[b]) << what << " item " << i;
                }
                a.custom_mask = kBits;
                g_ran = Ran{};
                const dispatch::KernelEntry* e = reg.find(key);
                ASSERT_NE(e, nullptr) << what;
                e->launch(a);
                EXPECT_EQ(g_ran.calls, 1) << what;
                EXPECT_EQ(g_ran.kernel.mask, sm90::MaskKind::kAny) << what << ": ran " << g_ran.kernel.name();
                EXPECT_TRUE(g_ran.refused.empty()) << what << ": " << g_ran.refused;
              }
  EXPECT_GT(checked, 2000);

  // custom_mask_sm90_test.cpp's split cases (one query tile, few heads, thousands of keys)
  // are planned with KV splits, so they test the merge.
  for (int D : {64, 128, 256})
    for (int page_size : {0, 5, 16, 64})
      for (const auto& [q, k, heads] : {std::tuple{64, 4064, 4}, std::tuple{100, 6000, 2}}) {
        detail::Plan plan = problem_plan(DType::kF16, D, page_size, {q}, {k}, false, -1, 0.0f, 0, heads, 1);
        plan.opts.custom_mask = true;
        plan.mask_indptr = {0, (int64_t{q} * k + 7) / 8};
        plan.variant = "test";
        detail::plan_sm90(plan, test_workspace());
        EXPECT_GT(sm90::plan_state(plan.params).num_splits, 1) << "D " << D << " page " << page_size << " q " << q;
      }

  // The launch refuses by name a custom mask on a kernel without the runtime mask, or on a
  // wide tile's (a plan made without the mask picks the 176-key tile here).
  for (bool masked_plan : {true, false}) {
    detail::Plan plan = problem_plan(DType::kBF16, 128, 0, {300}, {3000}, false, -1, 0.0f);
    plan.opts.custom_mask = masked_plan;
    if (masked_plan) plan.mask_indptr = {0, 300 * 3000 / 8};
    plan.variant = "test";
    detail::plan_sm90(plan, test_workspace());
    plan.params.custom_mask = kBits;
    const sm90::PlanState& st = sm90::plan_state(plan.params);
    ASSERT_EQ(st.block_n, masked_plan ? 128 : 176);
    for (sm90::MaskKind m : {sm90::MaskKind::kKVLen, sm90::MaskKind::kCausal, sm90::MaskKind::kAny}) {
      if (m == sm90::MaskKind::kAny && st.block_n == 128) continue;  // the one kernel that reads masks
      try {
        (void)sm90::make_kernel_params(plan.params, st, {st.block_m, st.block_n, false, m, false});
        ADD_FAILURE() << "a custom mask was let through to the " << sm90::mask_kind_name(m) << " kernel, tile "
                      << st.block_n;
      } catch (const Error& err) {
        EXPECT_NE(std::string(err.what()).find("custom mask"), std::string::npos) << err.what();
      }
    }
  }
}

// Options::cuda_graph compares plans by what their launch reads (plan/launch_signature.h):
// sm90's host state by value, so a new plan of the same launch (other pages, a new state
// object) matches, and one whose TMA maps or work list differ does not.
TEST(Sm90Dispatch, StateSignatureListsTheLaunchsValues) {
  auto planned = [](int page_size, const std::vector<int>& kv, int first_page) {
    detail::Plan plan = problem_plan(DType::kBF16, 128, page_size, {100, 37}, kv, true, -1, 0.0f, first_page);
    plan.variant = "test";
    detail::plan_sm90(plan, test_workspace());
    return detail::state_signature_sm90(plan);
  };
  const std::string paged = planned(16, {300, 700}, 0);
  EXPECT_NE(paged.find("sm90.num_items="), std::string::npos) << paged;
  EXPECT_EQ(planned(16, {300, 700}, 50), paged);
  // Contiguous K/V: the TMA maps' token count.
  EXPECT_NE(planned(0, {300, 700}, 0).find(";sm90.total_kv_tokens=1000;"), std::string::npos);
  EXPECT_NE(planned(0, {300, 800}, 0).find(";sm90.total_kv_tokens=1100;"), std::string::npos);
}


// The tile rule alone, over head dims x storage and page sizes x masks x lengths x heads x
// split limits: each (tile, mask kind) it picks is a row of the compiled table, for both
// dtypes. A rule change that picks a kernel kernel_list.h lacks fails here, before any
// plan does.
TEST(Sm90KernelTable, EveryRuleChoiceHasACompiledRow) {
  int checked = 0;
  std::map<std::string, std::string> missing;  // kernel -> the first problem that picks it
  std::vector<int> lengths;
  for (int n = 1; n <= (1 << 17); n *= 2)
    for (int d : {-1, 0, 1}) lengths.push_back(std::max(1, n + d));
  for (int n : {176, 192, 704, 768, 896, 1000, 3000, 6144, 12000}) lengths.push_back(n);
  for (int D : sm90::kHeadDims)
    for (int page_size : {0, 1, 8, 16, 48, 64, 96, 128, 256, 1024})
      for (int rows : lengths)
        for (int keys : {rows, rows + 57, std::max(1, rows / 3), rows + 3000})
          for (bool causal : {false, true})
            for (int window : {-1, 0, 100, 4096})
              for (bool cap : {false, true})
                for (int heads : {1, 8, 64})
                  for (int max_splits : {1, sm90::kMaxKVSplits}) {
                    const int32_t qo_indptr[2] = {0, rows}, kv_start[1] = {0}, kv_lens[1] = {keys};
                    sm90::WorkListInput in;
                    in.batch = 1;
                    in.qo_indptr = qo_indptr;
                    in.kv_start = kv_start;
                    in.kv_lens = kv_lens;
                    in.causal = causal;
                    in.window_left = core::normalize_window(window, keys);
                    in.num_qo_heads = heads;
                    in.num_sms = 132;
                    const bool paged = page_size > 0;
                    for (bool fp8 : {false, true}) {  // fp8 K/V: paged only (capability table)
                      if (fp8 && !paged) continue;
                      in.fp8_kv = fp8;
                      const sm90::KernelChoice c = sm90::choose_kernel(in, D, paged, page_size, cap, max_splits);
                      for (DType dt : {DType::kF16, DType::kBF16}) {
                        ++checked;
                        if (!sm90::find_kernel(dt, D, paged ? core::KVStorage::kPaged : core::KVStorage::kContiguous,
                                               c.wide, c.mask, fp8))
                          missing.emplace(std::string(dt == DType::kF16 ? "f16" : "bf16") + " D=" +
                                              std::to_string(D) + (paged ? " paged" : " contiguous") +
                                              (c.wide ? " wide " : " narrow ") + sm90::mask_kind_name(c.mask) +
                                              (fp8 ? " fp8 K/V" : ""),
                                          "rows " + std::to_string(rows) + " keys " + std::to_string(keys) +
                                              " page " + std::to_string(page_size));
                      }
                    }
                  }
  EXPECT_GT(checked, 1000000);
  for (const auto& [kernel, problem] : missing)
    ADD_FAILURE() << "the rule picks a kernel with no compiled row: " << kernel << " (" << problem << ", ...)";
}

// ---- golden choices: what the planner and the launch chose, by problem ----
// For a sweep of problems (both dtypes, every head dim, contiguous K/V and pages of 1 to
// 256 rows, causal / windows / soft cap, 1 to 128k query rows, batches, GQA ratios), one
// line each: the plan's variant, tile and kernel choice, splits, work list (hashed), and
// the kernel its launch ran with the shape it passed to make_kernel_params. The lines of
// each dtype / head dim / page size are hashed and compared with sm90_choices.golden, so a
// change of any choice fails here. Intended changes rewrite the file: run with
// FLASHBAND_SM90_CHOICES_DUMP=<file> before and after the change and diff the lines, then
// FLASHBAND_SM90_CHOICES_UPDATE=1 (for the default knob, 0 and 100) to rewrite the hashes.

uint64_t fnv1a(uint64_t h, const void* data, std::size_t n) {
  const auto* b = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}
constexpr uint64_t kFnvBasis = 14695981039346656037ull;

std::string join(const std::vector<int>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

// One problem's choices, as a line.
std::string choice_line(const dispatch::Registry& reg, DType dt, int D, int page_size, const std::vector<int>& qo,
                        const std::vector<int>& kv, bool causal, int window_in, float cap, int qo_heads,
                        int kv_heads) {
  detail::Plan plan = problem_plan(dt, D, page_size, qo, kv, causal, window_in, cap, 0, qo_heads, kv_heads);
  core::AttentionParams& a = plan.params;
  const dispatch::VariantKey key = key_of(a);
  std::ostringstream line;
  line << key.to_string() << " page=" << page_size << " qo=" << join(qo) << " kv=" << join(kv)
       << " heads=" << qo_heads << "/" << kv_heads << " causal=" << causal << " window=" << window_in
       << " cap=" << cap << " ->";
  const dispatch::KernelEntry* e = reg.find(key);
  if (e == nullptr) return line.str() + " no entry";
  plan.variant = key.to_string();
  try {
    detail::plan_sm90(plan, test_workspace());
  } catch (const Error& err) {
    return line.str() + " plan refused: " + err.what();
  }
  const sm90::PlanState& st = sm90::plan_state(a);
  uint64_t items = kFnvBasis;
  items = fnv1a(items, st.host_items.data(), st.host_items.size() * sizeof(sm90::WorkItem));
  g_ran = Ran{};
  e->launch(a);
  const KernelId& k = g_ran.kernel;
  line << " variant=" << plan.variant << " tile=" << st.block_m << "x" << st.block_n
       << " splits=" << st.num_splits << " items=" << st.num_items << " list=" << std::hex << items << std::dec
       << " work=" << a.num_work_items << "/" << a.num_kv_splits << " ran=" << g_ran.calls << ":" << k.name()
       << " shape=" << g_ran.block_m << "x" << g_ran.block_n << (k.paged ? ",paged" : "") << ","
       << sm90::mask_kind_name(k.mask) << (g_ran.gather_only ? ",gather" : "");
  if (!g_ran.refused.empty()) line << " refused: " << g_ran.refused;
  return line.str();
}

// group ("f16 D=64 page=16") -> the group's lines, in sweep order.
std::map<std::string, std::vector<std::string>> golden_sweep() {
  dispatch::Registry reg;
  dispatch::register_sm90_kernels(reg);
  std::vector<std::vector<int>> qos;
  for (int n : {1, 2, 63, 64, 65, 127, 128, 129, 191, 192, 193, 512, 640, 704, 768, 896, 1000, 1023, 1024, 1025,
                2047, 2048, 2049, 3072, 4095, 4096, 4097, 6144, 8191, 8192, 8193, 12000, 16384, 32768, 65536,
                131072})
    qos.push_back({n});
  qos.push_back({6300, 100});
  qos.push_back({1, 8191});
  qos.push_back({8300, 30});
  qos.push_back({16, 16, 16});
  qos.push_back(std::vector<int>(64, 1));       // decode-like: one row per request
  qos.push_back(std::vector<int>(8, 16384));   // 128k rows in a batch
  qos.push_back({131072, 7});
  std::mt19937 rng(11);
  for (int i = 0; i < 12; ++i) {
    std::vector<int> q;
    const int b = 1 + static_cast<int>(rng() % 6);
    for (int j = 0; j < b; ++j) q.push_back(1 + static_cast<int>(rng() % (rng() % 2 ? 40000 : 1500)));
    qos.push_back(q);
  }
  const int heads[][2] = {{4, 2}, {32, 8}, {16, 16}, {64, 1}, {28, 4}};
  std::map<std::string, std::vector<std::string>> groups;
  for (DType dt : {DType::kF16, DType::kBF16})
    for (int D : {64, 128, 256})
      for (int page_size : {0, 1, 16, 48, 64, 128, 256}) {
        std::vector<std::string>& lines =
            groups[std::string(dt == DType::kF16 ? "f16" : "bf16") + " D=" + std::to_string(D) +
                   " page=" + std::to_string(page_size)];
        for (std::size_t i = 0; i < qos.size(); ++i) {
          const std::vector<int>& qo = qos[i];
          const auto& h = heads[i % 5];
          for (int kv_mode = 0; kv_mode < 4; ++kv_mode) {
            std::vector<int> kv;
            for (int q : qo)
              kv.push_back(kv_mode == 0 ? q : kv_mode == 1 ? q + 57 : kv_mode == 2 ? std::max(1, q / 2) : q + 3000);
            for (bool causal : {false, true})
              for (int window : {-1, 0, 100, 1500, 1 << 30})
                for (float cap : {0.0f, 5.0f})
                  lines.push_back(choice_line(reg, dt, D, page_size, qo, kv, causal, window, cap, h[0], h[1]));
          }
        }
      }
  return groups;
}

TEST(Sm90Dispatch, ChoicesMatchGolden) {
  const auto groups = golden_sweep();
  const std::string knob = std::to_string(sm90::causal_kernel_max_rows());
  if (const char* dump = std::getenv("FLASHBAND_SM90_CHOICES_DUMP")) {
    std::ofstream out(dump);
    for (const auto& [g, lines] : groups)
      for (const std::string& l : lines) out << l << "\n";
  }
  std::map<std::string, std::string> got;  // "max_rows=K group" -> "count hash"
  for (const auto& [g, lines] : groups) {
    uint64_t h = kFnvBasis;
    for (const std::string& l : lines) h = fnv1a(h, l.c_str(), l.size() + 1);
    std::ostringstream v;
    v << lines.size() << " " << std::hex << h;
    got["max_rows=" + knob + " " + g] = v.str();
  }
  std::map<std::string, std::string> want;
  std::vector<std::string> other_knobs;  // lines of the file for other knob values, kept on update
  {
    std::ifstream in(FLASHBAND_SM90_CHOICES_GOLDEN);
    std::string l;
    while (std::getline(in, l)) {
      if (l.empty() || l[0] == '#') continue;
      const std::size_t colon = l.find(": ");
      if (colon == std::string::npos) continue;
      const std::string k = l.substr(0, colon);
      if (k.rfind("max_rows=" + knob + " ", 0) == 0)
        want[k] = l.substr(colon + 2);
      else
        other_knobs.push_back(l);
    }
  }
  if (std::getenv("FLASHBAND_SM90_CHOICES_UPDATE")) {
    std::ofstream out(FLASHBAND_SM90_CHOICES_GOLDEN);
    out << "# sm90_dispatch_test.cpp ChoicesMatchGolden: problems and hash of their choice lines, by group\n";
    for (const std::string& l : other_knobs) out << l << "\n";
    for (const auto& [k, v] : got) out << k << ": " << v << "\n";
    GTEST_SKIP() << "rewrote " << FLASHBAND_SM90_CHOICES_GOLDEN << " for max_rows=" << knob;
  }
  ASSERT_FALSE(want.empty()) << "no golden choices for max_rows=" << knob << " in " << FLASHBAND_SM90_CHOICES_GOLDEN;
  EXPECT_EQ(got.size(), want.size());
  for (const auto& [k, v] : got) EXPECT_EQ(v, want[k]) << k << " (FLASHBAND_SM90_CHOICES_DUMP=<file> lists its lines)";
}

}  // namespace
}  // namespace flashband
