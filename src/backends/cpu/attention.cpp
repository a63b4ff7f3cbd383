// cpu_attention: SPEC.md on the host. Work is split into items of (request, KV head, block of
// query rows); an item processes every query head of the GQA group that reads its KV head, so
// each K/V tile is converted to float once and then used by group * rows query rows. Only the
// keys visible to the block (core::rows_kv_range) are loaded, and each row only scores the
// keys of its own core::row_kv_range, so the cost scales with the band, not with kv_len. A
// custom mask then hides keys inside that range bit by bit.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/kv_address.h"
#include "backends/cpu/p_quantize.h"
#include "backends/cpu/parallel_for.h"
#include "backends/cpu/row_io.h"
#include "backends/cpu/tile_kernels.h"
#include "core/mask.h"
#include "core/state.h"
#include "flashband/error.h"

namespace flashband::cpu {
namespace {

// Query rows per work item. 64 rows times the GQA group amortise the tile conversion while
// leaving enough items to balance causal work over a few threads.
constexpr int kRowBlock = 64;

struct WorkItem {
  int request;
  int kv_head;
  int row_begin;
  int row_end;
};

// Per-thread buffers, sized once per call.
struct Scratch {
  std::vector<float> q;                    // [group * rows, D], pre-scaled queries
  std::vector<float> acc;                  // [group * rows, D], unnormalised outputs
  std::vector<core::SoftmaxState> state;   // [group * rows]
  std::vector<float> kt;                   // [D, kKeyTile], K tile transposed
  std::vector<float> v;                    // [kKeyTile, D]
  std::vector<float> s;                    // [kKeyTile], one row's logits, then weights
  std::vector<float> row;                  // [D], conversion buffer
  std::vector<float> row_max;              // [group * rows], fp8 attention's final maxima

  Scratch(int group, int head_dim)
      : q(static_cast<size_t>(group) * kRowBlock * head_dim),
        acc(q.size()),
        state(static_cast<size_t>(group) * kRowBlock),
        kt(static_cast<size_t>(head_dim) * kKeyTile, 0.0f),
        v(static_cast<size_t>(kKeyTile) * head_dim),
        s(kKeyTile),
        row(head_dim),
        row_max(state.size()) {}
};

// How raw dot products become base-2 logits: s2 = dot * q_scale without a soft cap (the
// scale folded into q), s2 = tanh(dot * q_scale) * cap_log2e with one; and the factor of
// every output (v_scale: o = v_scale * P.v8).
struct LogitTransform {
  float q_scale;
  float cap_log2e;  // 0 when no soft cap
  float v_scale;
};

// A scale tensor (one float in host memory here) is read now, at run time, and wins.
float scale_now(float value, const float* tensor) { return tensor ? *tensor : value; }

// k_scale (and fp8 attention's q_scale) multiplies every logit before the cap (SPEC.md), so
// it folds into q's scale.
LogitTransform make_transform(const core::AttentionParams& p) {
  const float scale = p.sm_scale * scale_now(p.k_scale, p.k_scale_ptr) * scale_now(p.q_scale, p.q_scale_ptr);
  const float v_scale = scale_now(p.v_scale, p.v_scale_ptr);
  if (p.logits_soft_cap > 0.0f)
    return {scale / p.logits_soft_cap, p.logits_soft_cap * core::kLog2e, v_scale};
  return {scale * core::kLog2e, 0.0f, v_scale};
}

std::vector<WorkItem> make_work(const core::AttentionParams& p) {
  std::vector<WorkItem> items;
  for (int b = 0; b < p.batch; ++b) {
    const int qo_len = request_qo_len(p, b);
    for (int hk = 0; hk < p.num_kv_heads; ++hk)
      for (int r = 0; r < qo_len; r += kRowBlock)
        items.push_back({b, hk, r, std::min(r + kRowBlock, qo_len)});
  }
  return items;
}

// Converts keys [t0, t0 + n) of `kv_head` into sc.kt (transposed) and sc.v.
void load_kv_tile(const core::AttentionParams& p, const RequestKV& kv, int kv_head, int t0,
                  int n, Scratch& sc) {
  const int D = p.head_dim;
  for (int j = 0; j < n; ++j) {
    load_row(p.kv_dtype, p.k, kv.k_offset(t0 + j, kv_head), D, sc.row.data());
    for (int d = 0; d < D; ++d) sc.kt[static_cast<size_t>(d) * kKeyTile + j] = sc.row[d];
    load_row(p.kv_dtype, p.v, kv.v_offset(t0 + j, kv_head), D, sc.v.data() + static_cast<size_t>(j) * D);
  }
}

// Sets the logits of keys t0 + [j0, j1) that row `row`'s custom mask hides to -inf (a hidden
// key weighs exactly 0, whatever K holds: SPEC.md). False when the row sees none of them,
// so the caller skips the block rather than meet (-inf) - (-inf) in its running maximum.
bool hide_masked_keys(const uint8_t* bits, int row, int kv_len, int t0, int j0, int j1, float* s) {
  bool any = false;
  for (int j = j0; j < j1; ++j) {
    if (core::custom_mask_bit(bits, row, kv_len, t0 + j)) {
      any = true;
    } else {
      s[j] = core::neg_inf();
    }
  }
  return any;
}

void run_item(const core::AttentionParams& p, const WorkItem& w, const LogitTransform& xf,
              Scratch& sc) {
  const int D = p.head_dim;
  const int group = p.num_qo_heads / p.num_kv_heads;
  const int rows = w.row_end - w.row_begin;
  const int qo_len = request_qo_len(p, w.request);
  const int kv_len = request_kv_len(p, w.request);
  const int64_t token0 = p.qo_indptr[w.request] + w.row_begin;
  const core::MaskSpec mask{qo_len, kv_len, p.causal, p.window_left, p.window_right};

  // Local row index x = g * rows + r: query head kv_head * group + g, row row_begin + r.
  for (int g = 0; g < group; ++g) {
    const int h = w.kv_head * group + g;
    for (int r = 0; r < rows; ++r) {
      const int x = g * rows + r;
      float* q = sc.q.data() + static_cast<size_t>(x) * D;
      load_row(p.dtype, p.q, (token0 + r) * p.q_stride_n + h * p.q_stride_h, D, q);
      for (int d = 0; d < D; ++d) q[d] *= xf.q_scale;
      std::fill_n(sc.acc.data() + static_cast<size_t>(x) * D, D, 0.0f);
      sc.state[x] = core::SoftmaxState{};
    }
  }

  const RequestKV kv(p, w.request);
  const uint8_t* bits = p.custom_mask ? p.custom_mask + p.mask_indptr[w.request] : nullptr;
  const core::KVRange band = core::rows_kv_range(mask, w.row_begin, w.row_end);
  // Calls visit(x, j0, j1) with sc.s[j0, j1) holding local row x's base-2 logits of keys
  // t0 + [j0, j1) (capped, custom-masked) and sc.v the tile's values, for every tile and row
  // that sees one of its keys.
  auto for_each_row_tile = [&](auto&& visit) {
    for (int t0 = band.first; t0 < band.last; t0 += kKeyTile) {
      const int n = std::min(kKeyTile, band.last - t0);
      load_kv_tile(p, kv, w.kv_head, t0, n, sc);
      for (int r = 0; r < rows; ++r) {
        const core::KVRange keys = core::row_kv_range(mask, w.row_begin + r);
        const int j0 = std::max(keys.first, t0) - t0;
        const int j1 = std::min(keys.last, t0 + n) - t0;
        if (j1 <= j0) continue;
        for (int g = 0; g < group; ++g) {
          const int x = g * rows + r;
          float* s = sc.s.data();
          tile_scores(sc.q.data() + static_cast<size_t>(x) * D, sc.kt.data(), D, j0, j1, s);
          if (xf.cap_log2e > 0.0f)
            for (int j = j0; j < j1; ++j) s[j] = std::tanh(s[j]) * xf.cap_log2e;
          if (bits && !hide_masked_keys(bits, w.row_begin + r, kv_len, t0, j0, j1, s)) continue;
          visit(x, j0, j1);
        }
      }
    }
  };
  auto block_max = [&](int j0, int j1) {
    float m = sc.s[j0];
    for (int j = j0 + 1; j < j1; ++j) m = std::max(m, sc.s[j]);
    return m;
  };

  // fp8 attention quantizes P against each row's final maximum (SPEC.md "fp8 attention"), so
  // a first pass finds it; the second then never rescales and P is what the spec states.
  const bool quantize_p = p.dtype == DType::kE4M3;
  if (quantize_p) {
    std::fill(sc.row_max.begin(), sc.row_max.end(), core::neg_inf());
    for_each_row_tile([&](int x, int j0, int j1) { sc.row_max[x] = std::max(sc.row_max[x], block_max(j0, j1)); });
  }
  for_each_row_tile([&](int x, int j0, int j1) {
    float* s = sc.s.data();
    float* acc = sc.acc.data() + static_cast<size_t>(x) * D;
    core::SoftmaxState& st = sc.state[x];
    const float rescale = st.rescale_to(quantize_p ? sc.row_max[x] : block_max(j0, j1));
    if (rescale != 1.0f) scale_row(acc, D, rescale);
    float sum = 0.0f;
    for (int j = j0; j < j1; ++j) {
      s[j] = st.weight(s[j]);  // a -inf logit (K = -inf) weighs 0 even while the max is -inf
      sum += s[j];  // the row sum is of the unquantized weights (SPEC.md)
      if (quantize_p) s[j] = quantize_probability(s[j]);
    }
    st.add(sum);
    accumulate_values(s, sc.v.data(), D, j0, j1, acc);
  });

  for (int g = 0; g < group; ++g) {
    const int h = w.kv_head * group + g;
    for (int r = 0; r < rows; ++r) {
      const int x = g * rows + r;
      const core::SoftmaxState& st = sc.state[x];
      // The sink joins the denominator once, after every key (SPEC.md "Attention sinks").
      float out_scale = st.output_scale(), lse = st.lse();
      core::fold_sink(core::sink_log2(p.sinks, h), out_scale, lse);
      store_row(p.o_dtype, p.o, (token0 + r) * p.o_stride_n + h * p.o_stride_h, D,
                sc.acc.data() + static_cast<size_t>(x) * D, out_scale * xf.v_scale);
      if (p.lse != nullptr) p.lse[(token0 + r) * p.lse_stride_n + h * p.lse_stride_h] = lse;
    }
  }
}

void check_params(const core::AttentionParams& p) {
  auto fail = [](const std::string& what) {
    throw Error(ErrorCode::kInternal, "cpu_attention: " + what);
  };
  if (p.num_kv_heads <= 0 || p.num_qo_heads % p.num_kv_heads != 0)
    fail("num_qo_heads " + std::to_string(p.num_qo_heads) + " is not a multiple of num_kv_heads " +
         std::to_string(p.num_kv_heads));
  if (p.head_dim <= 0) fail("head_dim " + std::to_string(p.head_dim) + " must be positive");
  if (p.batch > 0 && (p.qo_indptr == nullptr || p.kv_indptr == nullptr))
    fail("qo_indptr and kv_indptr must be set (host memory)");
  if (p.kv_storage == core::KVStorage::kPaged &&
      (p.page_size <= 0 || (p.kv_lens == nullptr && p.last_page_len == nullptr)))
    fail("paged storage needs page_size > 0 and kv_lens or last_page_len");
  if (p.window_left < -1) fail("window_left " + std::to_string(p.window_left) + " < -1");
  if (p.window_right < -1) fail("window_right " + std::to_string(p.window_right) + " < -1");
  if (p.custom_mask && (!p.mask_indptr || p.causal)) fail("a custom mask needs mask_indptr and causal=false");
}

}  // namespace

void cpu_attention(const core::AttentionParams& p) {
  check_params(p);
  const std::vector<WorkItem> items = make_work(p);
  if (items.empty()) return;
  const LogitTransform xf = make_transform(p);
  const int group = p.num_qo_heads / p.num_kv_heads;
  std::vector<Scratch> scratch;
  const int workers = worker_count(static_cast<int64_t>(items.size()));
  scratch.reserve(static_cast<size_t>(workers));
  for (int i = 0; i < workers; ++i) scratch.emplace_back(group, p.head_dim);
  parallel_for(static_cast<int64_t>(items.size()), [&](int64_t i, int worker) {
    run_item(p, items[static_cast<size_t>(i)], xf, scratch[static_cast<size_t>(worker)]);
  });
}

}  // namespace flashband::cpu
