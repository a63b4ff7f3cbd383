#include "backends/cudnn/graph_key.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <sstream>

#include "core/mask.h"
#include "flashband/error.h"
#include "flashband/options.h"

namespace flashband::cudnn_backend {

namespace {

uint32_t float_bits(float f) {
  uint32_t bits = 0;
  std::memcpy(&bits, &f, sizeof(bits));
  return bits;
}

GraphLayout layout_of(Op op) {
  switch (op) {
    case Op::kSinglePrefill: return GraphLayout::kDense;
    case Op::kRaggedPrefill: return GraphLayout::kRagged;
    case Op::kPagedPrefill: return GraphLayout::kPaged;
    case Op::kPagedDecode: return GraphLayout::kDecode;
  }
  throw Error(ErrorCode::kInternal, "cudnn graph key: unknown op " + std::to_string(static_cast<int>(op)));
}

// Visits every field with its name; the one list that ==, hash, to_string and
// first_difference share, so a new field cannot be missed by one of them.
template <typename F>
void for_each_field(const GraphKey& k, F&& f) {
  f("device", static_cast<int64_t>(k.device_id));
  f("layout", static_cast<int64_t>(k.layout));
  f("dtype", static_cast<int64_t>(k.dtype));
  f("batch", static_cast<int64_t>(k.batch));
  f("num_qo_heads", static_cast<int64_t>(k.num_qo_heads));
  f("num_kv_heads", static_cast<int64_t>(k.num_kv_heads));
  f("head_dim", static_cast<int64_t>(k.head_dim));
  f("s_q", k.s_q);
  f("s_kv", k.s_kv);
  f("q_stride_n", k.q_stride_n);
  f("q_stride_h", k.q_stride_h);
  f("o_stride_n", k.o_stride_n);
  f("o_stride_h", k.o_stride_h);
  f("k_stride_page", k.k_stride_page);
  f("k_stride_n", k.k_stride_n);
  f("k_stride_h", k.k_stride_h);
  f("v_stride_page", k.v_stride_page);
  f("v_stride_n", k.v_stride_n);
  f("v_stride_h", k.v_stride_h);
  f("lse_stride_n", k.lse_stride_n);
  f("lse_stride_h", k.lse_stride_h);
  f("page_size", static_cast<int64_t>(k.page_size));
  f("num_pages", static_cast<int64_t>(k.num_pages));
  f("page_table_width", static_cast<int64_t>(k.page_table_width));
  f("causal", static_cast<int64_t>(k.causal));
  f("window_left", static_cast<int64_t>(k.window_left));
  f("window_right", static_cast<int64_t>(k.window_right));
  f("scale_bits", static_cast<int64_t>(k.scale_bits));
  f("soft_cap_bits", static_cast<int64_t>(k.soft_cap_bits));
  f("return_lse", static_cast<int64_t>(k.return_lse));
  f("sinks", static_cast<int64_t>(k.sinks));
}

std::string field_value(const GraphKey& k, const char* name, int64_t v) {
  if (std::strcmp(name, "layout") == 0) return graph_layout_name(k.layout);
  if (std::strcmp(name, "dtype") == 0) return dtype_name(k.dtype);
  if (std::strcmp(name, "scale_bits") == 0 || std::strcmp(name, "soft_cap_bits") == 0) {
    float f = 0.0f;
    const uint32_t bits = static_cast<uint32_t>(v);
    std::memcpy(&f, &bits, sizeof(f));
    std::ostringstream os;
    os.precision(9);
    os << f;
    return os.str();
  }
  return std::to_string(v);
}

}  // namespace

const char* graph_layout_name(GraphLayout layout) {
  switch (layout) {
    case GraphLayout::kDense: return "dense";
    case GraphLayout::kRagged: return "ragged";
    case GraphLayout::kPaged: return "paged";
    case GraphLayout::kDecode: return "decode";
  }
  return "?";
}

float GraphKey::sm_scale() const {
  float f = 0.0f;
  std::memcpy(&f, &scale_bits, sizeof(f));
  return f;
}

bool GraphKey::operator==(const GraphKey& o) const {
  // Compare field by field through the shared list (no memcmp: padding bytes are undefined).
  bool equal = true;
  int64_t mine[64];
  int n = 0;
  for_each_field(*this, [&](const char*, int64_t v) { mine[n++] = v; });
  int i = 0;
  for_each_field(o, [&](const char*, int64_t v) { equal = equal && mine[i++] == v; });
  return equal;
}

std::string GraphKey::to_string() const {
  std::string s;
  for_each_field(*this, [&](const char* name, int64_t v) {
    if (!s.empty()) s += ' ';
    s += name;
    s += '=';
    s += field_value(*this, name, v);
  });
  return s;
}

std::size_t GraphKey::hash() const {
  // FNV-1a over the field values.
  uint64_t h = 1469598103934665603ull;
  for_each_field(*this, [&](const char*, int64_t v) {
    uint64_t x = static_cast<uint64_t>(v);
    for (int b = 0; b < 8; ++b) {
      h ^= (x >> (8 * b)) & 0xffu;
      h *= 1099511628211ull;
    }
  });
  return static_cast<std::size_t>(h);
}

std::string first_difference(const GraphKey& planned, const GraphKey& given) {
  int64_t mine[64];
  const char* names[64];
  int n = 0;
  for_each_field(planned, [&](const char* name, int64_t v) {
    names[n] = name;
    mine[n++] = v;
  });
  std::string diff;
  int i = 0;
  for_each_field(given, [&](const char* name, int64_t v) {
    if (diff.empty() && mine[i] != v) {
      diff = std::string(name) + ": planned " + field_value(planned, names[i], mine[i]) + ", got " +
             field_value(given, name, v);
    }
    ++i;
  });
  return diff;
}

int page_stride_multiple(const GraphKey& planned, const GraphKey& given) {
  if (!planned.paged() || planned.k_stride_page <= 0 || planned.v_stride_page <= 0) return 0;
  for (int m = 1; m <= kPageStrideMultiples; ++m) {
    if (given.k_stride_page != m * planned.k_stride_page || given.v_stride_page != m * planned.v_stride_page) continue;
    GraphKey unit = given;
    unit.k_stride_page = planned.k_stride_page;
    unit.v_stride_page = planned.v_stride_page;
    if (unit == planned) return m;
  }
  return 0;
}

int64_t bucket_length(int64_t max_len) {
  int64_t b = 1;
  while (b < max_len) b <<= 1;
  return b;
}

GraphKey make_graph_key(const core::AttentionParams& p, const GraphKeyContext& ctx) {
  GraphKey k;
  k.device_id = ctx.device_id;
  k.layout = layout_of(p.op);
  k.dtype = p.dtype;
  k.batch = p.batch;
  k.num_qo_heads = p.num_qo_heads;
  k.num_kv_heads = p.num_kv_heads;
  k.head_dim = p.head_dim;

  switch (k.layout) {
    case GraphLayout::kDense:
      k.s_q = p.max_qo_len;
      k.s_kv = p.max_kv_len;
      break;
    case GraphLayout::kRagged:
      k.s_q = bucket_length(p.max_qo_len);
      k.s_kv = bucket_length(p.max_kv_len);
      break;
    case GraphLayout::kPaged:
    case GraphLayout::kDecode:
      k.s_q = k.layout == GraphLayout::kDecode ? 1 : bucket_length(p.max_qo_len);
      k.page_size = p.page_size;
      k.num_pages = ctx.num_pages;
      if (p.page_size > 0) {
        // cuDNN requires width == ceil(s_kv / page_size), so s_kv is a whole number of pages.
        const int64_t kv = bucket_length(p.max_kv_len);
        k.page_table_width = static_cast<int>((kv + p.page_size - 1) / p.page_size);
        k.s_kv = static_cast<int64_t>(k.page_table_width) * p.page_size;
      }
      break;
  }

  // A stride along an extent of 1 is never used to address anything, and DLPack producers
  // disagree about its value; the key stores 0 there so such views still match their plan.
  auto used = [](int64_t stride, int64_t extent) { return extent > 1 ? stride : 0; };
  // Rows of Q/O/LSE: one per request in decode, the exact query length in single prefill;
  // ragged and paged prefill address rows through offsets, so their stride always counts.
  const int64_t q_rows = k.layout == GraphLayout::kDecode  ? p.batch
                         : k.layout == GraphLayout::kDense ? p.max_qo_len
                                                           : 2;
  const int64_t kv_rows = k.layout == GraphLayout::kDense   ? p.max_kv_len
                          : k.layout == GraphLayout::kRagged ? 2
                                                             : p.page_size;
  k.q_stride_n = used(p.q_stride_n, q_rows);
  k.q_stride_h = used(p.q_stride_h, p.num_qo_heads);
  k.o_stride_n = used(p.o_stride_n, q_rows);
  k.o_stride_h = used(p.o_stride_h, p.num_qo_heads);
  k.k_stride_n = used(p.k_stride_n, kv_rows);
  k.k_stride_h = used(p.k_stride_h, p.num_kv_heads);
  k.v_stride_n = used(p.v_stride_n, kv_rows);
  k.v_stride_h = used(p.v_stride_h, p.num_kv_heads);
  if (k.paged()) {
    k.k_stride_page = p.k_stride_page;
    k.v_stride_page = p.v_stride_page;
  }
  k.return_lse = ctx.return_lse;
  k.sinks = ctx.sinks;
  if (ctx.return_lse) {
    k.lse_stride_n = used(p.lse_stride_n, q_rows);
    k.lse_stride_h = used(p.lse_stride_h, p.num_qo_heads);
  }

  k.causal = p.causal;
  // A window that hides nothing within s_kv builds the unwindowed graph; a cuda_graph plan
  // passes such windows on (plan/graph_window.h), and its graph is then the eager one.
  k.window_left = core::normalize_window(p.window_left, static_cast<int>(std::min<int64_t>(k.s_kv, INT_MAX)));
  // The same for window_right within s_q (decode's 1: a right bound never clips a decode row).
  k.window_right = core::normalize_window_right(p.window_right, static_cast<int>(std::min<int64_t>(k.s_q, INT_MAX)));
  k.scale_bits = float_bits(p.sm_scale);
  k.soft_cap_bits = float_bits(p.logits_soft_cap);
  return k;
}

void fill_canonical_strides(core::AttentionParams& p, KVLayout kv_layout, int64_t total_kv_tokens) {
  const int64_t hq = p.num_qo_heads, hk = p.num_kv_heads, d = p.head_dim;
  auto fill = [](int64_t& s, int64_t v) {
    if (s == 0) s = v;
  };
  fill(p.q_stride_n, hq * d);
  fill(p.q_stride_h, d);
  fill(p.o_stride_n, hq * d);
  fill(p.o_stride_h, d);
  fill(p.lse_stride_n, hq);
  fill(p.lse_stride_h, 1);
  const bool paged = p.op == Op::kPagedPrefill || p.op == Op::kPagedDecode;
  const bool nhd = kv_layout == KVLayout::kNHD;
  int64_t page = 0, n = 0, h = 0;
  if (paged) {
    const int64_t ps = p.page_size;
    page = ps * hk * d;
    n = nhd ? hk * d : d;
    h = nhd ? d : ps * d;
  } else {
    n = nhd ? hk * d : d;
    h = nhd ? d : total_kv_tokens * d;
  }
  if (paged) {
    fill(p.k_stride_page, page);
    fill(p.v_stride_page, page);
  }
  fill(p.k_stride_n, n);
  fill(p.k_stride_h, h);
  fill(p.v_stride_n, n);
  fill(p.v_stride_h, h);
}

}  // namespace flashband::cudnn_backend
