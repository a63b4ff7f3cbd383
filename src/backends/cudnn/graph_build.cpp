#include "backends/cudnn/graph_build.h"

#include <cudnn_frontend.h>

#include <exception>
#include <string>

#include "backends/cudnn/cudnn_version.h"
#include "flashband/error.h"

namespace flashband::cudnn_backend {

namespace {

namespace fe = cudnn_frontend;
using TensorPtr = std::shared_ptr<fe::graph::Tensor_attributes>;

[[noreturn]] void refuse(const char* stage, const std::string& why, const GraphKey& key) {
  throw Error(ErrorCode::kUnsupported, "backend 'cudnn': cuDNN " + version_string(runtime_version()) + " " +
                                           why + " (at " + stage + "; graph " + key.to_string() + ")");
}

void check(fe::error_t status, const char* stage, const GraphKey& key) {
  if (status.is_bad()) refuse(stage, "refused the graph: " + status.get_message(), key);
}

// A zero stride in the key marks an extent of 1 (see GraphKey); any 16-byte multiple works
// there, and the head dim is one (cuDNN needs head_dim % 8 == 0).
int64_t or_default(int64_t stride, int64_t fallback) { return stride != 0 ? stride : fallback; }

TensorPtr index_tensor(fe::graph::Graph& g, const char* name, Uid uid, int64_t n) {
  return g.tensor(fe::graph::Tensor_attributes()
                      .set_name(name)
                      .set_uid(uid)
                      .set_dim({n, 1, 1, 1})
                      .set_stride({1, 1, 1, 1})
                      .set_data_type(fe::DataType_t::INT32));
}

// Dims and strides of a [B, H, S, D] view of rows with the given row (n) and head (h)
// strides. Ragged rows get their batch offset from a ragged-offset tensor, so the batch
// stride only matters for B = 1 (dense) and decode, where a request is one row.
struct View {
  std::vector<int64_t> dim;
  std::vector<int64_t> stride;
};
View rows_view(const GraphKey& key, int64_t heads, int64_t s, int64_t last, int64_t stride_n,
               int64_t stride_h) {
  const int64_t d = key.head_dim;
  const int64_t n = or_default(stride_n, d);
  const int64_t h = or_default(stride_h, d);
  const int64_t b = key.layout == GraphLayout::kDecode ? n : s * n + heads * h;
  return {{key.batch, heads, s, last}, {b, h, n, 1}};
}

// The graph's tensors and SDPA node, not yet validated or compiled. `sm_version` > 0 fixes
// the target architecture instead of asking the current device (host-only validation).
std::shared_ptr<BuiltGraph> construct(const GraphKey& key, int sm_version) {
  const fe::DataType_t io = key.dtype == DType::kF16 ? fe::DataType_t::HALF : fe::DataType_t::BFLOAT16;
  const int64_t b = key.batch, hq = key.num_qo_heads, hk = key.num_kv_heads, d = key.head_dim;
  const int64_t s_q = key.s_q, s_kv = key.s_kv;

  auto built = std::make_shared<BuiltGraph>();
  built->key = key;
  built->graph = std::make_shared<fe::graph::Graph>();
  fe::graph::Graph& g = *built->graph;
  g.set_io_data_type(io)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  if (sm_version > 0) g.set_sm_version(sm_version);  // before any node copies the context

  try {
    // Q and O.
    const View qv = rows_view(key, hq, s_q, d, key.q_stride_n, key.q_stride_h);
    auto q_attr = fe::graph::Tensor_attributes().set_name("Q").set_uid(kUidQ).set_dim(qv.dim).set_stride(
        qv.stride);
    TensorPtr ragged_q, ragged_o, ragged_stats;
    if (key.ragged_q()) {
      ragged_q = index_tensor(g, "ragged_q", kUidRaggedQ, b + 1);
      ragged_o = index_tensor(g, "ragged_o", kUidRaggedO, b + 1);
      if (key.return_lse) ragged_stats = index_tensor(g, "ragged_stats", kUidRaggedStats, b + 1);
      q_attr.set_ragged_offset(ragged_q);
    }
    TensorPtr q = g.tensor(q_attr);

    // K and V.
    TensorPtr k, v;
    if (key.paged()) {
      const std::vector<int64_t> dim = {int64_t{kPageStrideMultiples} * key.num_pages, hk, key.page_size, d};
      const int64_t kn = or_default(key.k_stride_n, d), kh = or_default(key.k_stride_h, d);
      const int64_t vn = or_default(key.v_stride_n, d), vh = or_default(key.v_stride_h, d);
      k = g.tensor(fe::graph::Tensor_attributes().set_name("K_pages").set_uid(kUidK).set_dim(dim).set_stride(
          {key.k_stride_page, kh, kn, 1}));
      v = g.tensor(fe::graph::Tensor_attributes().set_name("V_pages").set_uid(kUidV).set_dim(dim).set_stride(
          {key.v_stride_page, vh, vn, 1}));
    } else {
      const View kv = rows_view(key, hk, s_kv, d, key.k_stride_n, key.k_stride_h);
      const View vv = rows_view(key, hk, s_kv, d, key.v_stride_n, key.v_stride_h);
      auto k_attr = fe::graph::Tensor_attributes().set_name("K").set_uid(kUidK).set_dim(kv.dim).set_stride(
          kv.stride);
      auto v_attr = fe::graph::Tensor_attributes().set_name("V").set_uid(kUidV).set_dim(vv.dim).set_stride(
          vv.stride);
      if (key.ragged_kv()) {
        k_attr.set_ragged_offset(index_tensor(g, "ragged_k", kUidRaggedK, b + 1));
        v_attr.set_ragged_offset(index_tensor(g, "ragged_v", kUidRaggedV, b + 1));
      }
      k = g.tensor(k_attr);
      v = g.tensor(v_attr);
    }

    auto sdpa = fe::graph::SDPA_attributes()
                    .set_name("flashband_sdpa")
                    .set_generate_stats(key.return_lse)
                    .set_attn_scale(key.sm_scale())
                    // One implementation for every graph, so what runs does not depend on
                    // which features happen to be enabled (AUTO would switch engines).
                    .set_implementation(fe::AttentionImplementation_t::COMPOSITE);
    if (key.causal) {
      sdpa.set_diagonal_alignment(fe::DiagonalAlignment_t::BOTTOM_RIGHT).set_diagonal_band_right_bound(0);
    }
    if (key.window_right >= 0) {
      // cuDNN keeps key j iff j <= p(i) + right_bound (bottom-right): window_right itself.
      sdpa.set_diagonal_alignment(fe::DiagonalAlignment_t::BOTTOM_RIGHT).set_diagonal_band_right_bound(key.window_right);
    }
    if (key.window_left >= 0) {
      // cuDNN keeps key j iff j > p(i) - left_bound, i.e. j >= p(i) - window_left.
      sdpa.set_diagonal_alignment(fe::DiagonalAlignment_t::BOTTOM_RIGHT)
          .set_diagonal_band_left_bound(key.window_left + 1);
    }
    if (key.sinks) {
      // One logit per query head in the scaled-logit (natural-log) domain, as SPEC.md's
      // sinks: cuDNN's softmax takes it into the row maximum and adds exp(sink - max) to the
      // denominator, contributing no value, and its stats (the LSE) include it.
      sdpa.set_sink_token(g.tensor(fe::graph::Tensor_attributes()
                                       .set_name("sinks")
                                       .set_uid(kUidSinks)
                                       .set_dim({1, hq, 1, 1})
                                       .set_stride({hq, 1, 1, 1})
                                       .set_data_type(fe::DataType_t::FLOAT)));
    }
    if (key.padding_mask()) {
      sdpa.set_padding_mask(true)
          .set_seq_len_q(index_tensor(g, "seq_len_q", kUidSeqLenQ, b))
          .set_seq_len_kv(index_tensor(g, "seq_len_kv", kUidSeqLenKV, b));
    }
    if (key.paged()) {
      const int64_t w = key.page_table_width;
      auto table = [&](const char* name, Uid uid) {
        return g.tensor(fe::graph::Tensor_attributes()
                            .set_name(name)
                            .set_uid(uid)
                            .set_dim({b, 1, w, 1})
                            .set_stride({w, w, 1, 1})
                            .set_data_type(fe::DataType_t::INT32));
      };
      sdpa.set_paged_attention_k_table(table("page_table_k", kUidPageTableK))
          .set_paged_attention_v_table(table("page_table_v", kUidPageTableV))
          .set_paged_attention_max_seq_len_kv(static_cast<int>(s_kv));
    }

    auto [o, stats] = g.sdpa(q, k, v, sdpa);
    const View ov = rows_view(key, hq, s_q, d, key.o_stride_n, key.o_stride_h);
    o->set_output(true).set_uid(kUidO).set_data_type(io).set_dim(ov.dim).set_stride(ov.stride);
    if (ragged_o) o->set_ragged_offset(ragged_o);
    if (key.return_lse) {
      const int64_t ln = or_default(key.lse_stride_n, hq), lh = or_default(key.lse_stride_h, 1);
      const int64_t lb = key.layout == GraphLayout::kDecode ? ln : s_q * ln + hq * lh;
      stats->set_output(true)
          .set_uid(kUidStats)
          .set_data_type(fe::DataType_t::FLOAT)
          .set_dim({b, hq, s_q, 1})
          .set_stride({lb, lh, ln, 1});
      if (ragged_stats) stats->set_ragged_offset(ragged_stats);
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    // The frontend throws for combinations it has no implementation for.
    refuse("graph construction", std::string("refused the graph: ") + e.what(), key);
  }
  return built;
}

}  // namespace

std::shared_ptr<const BuiltGraph> build_graph(const GraphKey& key, cudnnHandle_t handle) {
  std::shared_ptr<BuiltGraph> built = construct(key, 0);
  fe::graph::Graph& g = *built->graph;
  check(g.validate(), "validate", key);
  check(g.build_operation_graph(handle), "build_operation_graph", key);
  check(g.create_execution_plans({fe::HeurMode_t::A}), "create_execution_plans", key);
  check(g.check_support(), "check_support", key);
  check(g.build_plans(fe::BuildPlanPolicy_t::HEURISTICS_CHOICE), "build_plans", key);
  check(g.get_workspace_size(built->workspace_bytes), "get_workspace_size", key);
  built->user_uids = g.get_variant_pack_uids_sorted();
  for (int64_t uid : built->user_uids) {
    if (uid < kUidQ || uid >= kUidCount) {
      throw Error(ErrorCode::kInternal, "backend 'cudnn': the built graph wants a tensor with uid " +
                                            std::to_string(uid) + " that flashband does not provide");
    }
  }
  return built;
}

std::string validate_on_host(const GraphKey& key, int sm_version) {
  try {
    std::shared_ptr<BuiltGraph> built = construct(key, sm_version);
    fe::error_t status = built->graph->validate();
    return status.is_good() ? std::string() : status.get_message();
  } catch (const Error& e) {
    return e.what();
  }
}

}  // namespace flashband::cudnn_backend
