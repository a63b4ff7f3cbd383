// Entry points agree with each other on the same data (SPEC.md: every entry point computes
// the same thing; decode is prefill with qo_len 1), and merging partial results over split
// keys equals attending over all keys at once (SPEC.md "Merging partial states").
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "case_steps.h"
#include "compare.h"
#include "dtype_values.h"

namespace flashband::testing {
namespace {

// |a - b| <= atol + rtol * |b| element-wise; equal infinities (masked LSE) agree.
void expect_agree(const std::vector<double>& a, const std::vector<double>& b, double atol, double rtol,
                  const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] == b[i]) continue;
    const double e = std::fabs(a[i] - b[i]);
    ASSERT_TRUE(e <= atol + rtol * std::fabs(b[i])) << what << ": element " << i << " is " << a[i] << " vs " << b[i];
  }
}

void expect_same_result(const ApiOutputs& got, const ApiOutputs& want, DType dtype, const std::string& what) {
  const Tolerance tol = tolerance_for(dtype);
  expect_agree(got.out, want.out, tol.atol, tol.rtol, what + " out");
  expect_agree(got.lse, want.lse, tol.lse, 0.0, what + " lse");
}

// Rows [begin, end) of a token-major array with `row` elements per token.
std::vector<double> rows(const std::vector<double>& x, int64_t begin, int64_t end, int64_t row) {
  return std::vector<double>(x.begin() + begin * row, x.begin() + end * row);
}

Case batch_case(DType dtype, bool causal, int window, float cap) {
  Case c;
  c.entry = EntryPoint::kRagged;
  c.qo_lens = {37, 0, 64, 5, 1};
  c.kv_lens = {100, 7, 64, 0, 300};
  c.num_qo_heads = 8;
  c.num_kv_heads = 2;
  c.head_dim = 64;
  c.dtype = dtype;
  c.causal = causal;
  c.window_left = window;
  c.logits_soft_cap = cap;
  return c;
}

struct Semantics {
  bool causal;
  int window;
  float cap;
};
const Semantics kSemantics[] = {{false, -1, 0.0f}, {true, -1, 0.0f}, {true, 31, 0.0f}, {false, 17, 0.0f},
                                {true, 5, 1.5f}};

TEST(Consistency, RaggedAndPagedMatchSinglePrefillPerRequest) {
  for (DType dtype : {DType::kF16, DType::kBF16, DType::kF32})
    for (const Semantics& s : kSemantics) {
      Case ragged = batch_case(dtype, s.causal, s.window, s.cap);
      const std::vector<RequestData> data = make_case_data(ragged);
      const ApiOutputs r = run_api(ragged, data);
      Case paged = ragged;
      paged.entry = EntryPoint::kPaged;
      paged.page_size = 5;
      paged.layout = KVLayout::kHND;
      const ApiOutputs p = run_api(paged, data);
      const std::string name = ragged.name();
      expect_same_result(p, r, dtype, name + ": paged vs ragged");

      const int Hq = ragged.num_qo_heads, D = ragged.head_dim;
      int64_t token = 0;
      for (std::size_t b = 0; b < data.size(); ++b) {
        const int qo = data[b].qo_len;
        if (qo > 0) {
          Case single = ragged;
          single.entry = EntryPoint::kSingle;
          single.qo_lens = {qo};
          single.kv_lens = {data[b].kv_len};
          const ApiOutputs one = run_api(single, {data[b]});
          ApiOutputs slice;
          slice.out = rows(r.out, token, token + qo, int64_t{Hq} * D);
          slice.lse = rows(r.lse, token, token + qo, Hq);
          expect_same_result(slice, one, dtype, name + ": ragged request " + std::to_string(b) + " vs single");
        }
        token += qo;
      }
    }
}

TEST(Consistency, DecodeEqualsPagedPrefillWithQoLen1) {
  for (int page_size : {1, 16})
    for (KVLayout layout : {KVLayout::kNHD, KVLayout::kHND})
      for (const Semantics& s : kSemantics) {
        Case decode;
        decode.entry = EntryPoint::kDecode;
        decode.kv_lens = {77, 1, 0, 200, 16};
        decode.num_qo_heads = 8;
        decode.num_kv_heads = 4;
        decode.head_dim = 128;
        decode.dtype = DType::kBF16;
        decode.page_size = page_size;
        decode.layout = layout;
        decode.causal = s.causal;
        decode.window_left = s.window;
        decode.logits_soft_cap = s.cap;
        const std::vector<RequestData> data = make_case_data(decode);
        Case prefill = decode;
        prefill.entry = EntryPoint::kPaged;
        prefill.qo_lens.assign(decode.kv_lens.size(), 1);
        expect_same_result(run_api(decode, data), run_api(prefill, data), decode.dtype,
                           decode.name() + ": decode vs paged prefill");
      }
}

// A request restricted to keys [begin, end): a non-causal, unwindowed problem over a subset
// of keys is exactly the partial state SPEC.md merges.
RequestData key_slice(const RequestData& r, int begin, int end, int kv_row) {
  RequestData s;
  s.qo_len = r.qo_len;
  s.kv_len = end - begin;
  s.q = r.q;
  s.k = rows(r.k, begin, end, kv_row);
  s.v = rows(r.v, begin, end, kv_row);
  return s;
}

Case merge_case(DType dtype, int kv_len) {
  Case c;
  c.entry = EntryPoint::kSingle;
  c.qo_lens = {13};
  c.kv_lens = {kv_len};
  c.num_qo_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 64;
  c.dtype = dtype;
  return c;
}

// Host tensors holding partial results as the merge functions take them.
struct HostState {
  HostArray v, s;
};
HostState host_state(DType dtype, const ApiOutputs& o) {
  HostState h{HostArray(dtype, static_cast<int64_t>(o.out.size())), HostArray(DType::kF32, static_cast<int64_t>(o.lse.size()))};
  for (std::size_t i = 0; i < o.out.size(); ++i) h.v.set(static_cast<int64_t>(i), o.out[i]);
  for (std::size_t i = 0; i < o.lse.size(); ++i) h.s.set(static_cast<int64_t>(i), o.lse[i]);
  return h;
}
std::vector<double> to_doubles(const HostArray& a) {
  std::vector<double> x(static_cast<std::size_t>(a.numel()));
  for (int64_t i = 0; i < a.numel(); ++i) x[static_cast<std::size_t>(i)] = a.get(i);
  return x;
}

TEST(Consistency, MergeStateOfTwoKeyHalvesEqualsTheWhole) {
  for (DType dtype : {DType::kF32, DType::kBF16})
    for (int kv_len : {100, 0})
      for (int split : {0, 37, 100}) {
        if (split > kv_len) continue;
        const Case whole_case = merge_case(dtype, kv_len);
        const std::vector<RequestData> data = make_case_data(whole_case);
        const int n = 13, H = whole_case.num_qo_heads, D = whole_case.head_dim;
        const int kv_row = whole_case.num_kv_heads * D;
        const ApiOutputs whole = run_api(whole_case, data);
        Case a_case = merge_case(dtype, split), b_case = merge_case(dtype, kv_len - split);
        HostState a = host_state(dtype, run_api(a_case, {key_slice(data[0], 0, split, kv_row)}));
        HostState b = host_state(dtype, run_api(b_case, {key_slice(data[0], split, kv_len, kv_row)}));

        HostArray v_out(dtype, int64_t{n} * H * D), s_out(DType::kF32, int64_t{n} * H);
        v_out.fill_nan();
        s_out.fill_nan();
        auto view3 = [&](HostArray& x) { return TensorView::contiguous(x.data(), x.dtype(), {n, H, D}); };
        auto view2 = [&](HostArray& x) { return TensorView::contiguous(x.data(), DType::kF32, {n, H}); };
        merge_state(view3(a.v), view2(a.s), view3(b.v), view2(b.s), view3(v_out), view2(s_out));

        ApiOutputs merged;
        merged.out = to_doubles(v_out);
        merged.lse = to_doubles(s_out);
        const std::string what = std::string(dtype_name(dtype)) + " kv_len " + std::to_string(kv_len) + " split " +
                                 std::to_string(split);
        expect_same_result(merged, whole, dtype, what);
        if (kv_len == 0) {  // two empty states: exactly 0 and -inf
          for (double x : merged.out) ASSERT_EQ(x, 0.0) << what;
          for (double x : merged.lse) ASSERT_EQ(x, -std::numeric_limits<double>::infinity()) << what;
        }
      }
}

TEST(Consistency, MergeStatesOfThreeKeyPartsEqualsTheWhole) {
  for (DType dtype : {DType::kF32, DType::kF16}) {
    const int kv_len = 150;
    const int cuts[] = {0, 40, 40, 150};  // the middle part is empty
    const Case whole_case = merge_case(dtype, kv_len);
    const std::vector<RequestData> data = make_case_data(whole_case);
    const int n = 13, H = whole_case.num_qo_heads, D = whole_case.head_dim, S = 3;
    const int kv_row = whole_case.num_kv_heads * D;
    const ApiOutputs whole = run_api(whole_case, data);

    HostArray v(dtype, int64_t{n} * S * H * D), s(DType::kF32, int64_t{n} * S * H);
    for (int part = 0; part < S; ++part) {
      const Case c = merge_case(dtype, cuts[part + 1] - cuts[part]);
      const ApiOutputs o = run_api(c, {key_slice(data[0], cuts[part], cuts[part + 1], kv_row)});
      for (int i = 0; i < n; ++i)
        for (int h = 0; h < H; ++h) {
          s.set((int64_t{i} * S + part) * H + h, o.lse[static_cast<std::size_t>(i * H + h)]);
          for (int d = 0; d < D; ++d)
            v.set(((int64_t{i} * S + part) * H + h) * D + d, o.out[static_cast<std::size_t>((i * H + h) * D + d)]);
        }
    }
    HostArray v_out(dtype, int64_t{n} * H * D), s_out(DType::kF32, int64_t{n} * H);
    v_out.fill_nan();
    s_out.fill_nan();
    merge_states(TensorView::contiguous(v.data(), dtype, {n, S, H, D}),
                 TensorView::contiguous(s.data(), DType::kF32, {n, S, H}),
                 TensorView::contiguous(v_out.data(), dtype, {n, H, D}),
                 TensorView::contiguous(s_out.data(), DType::kF32, {n, H}));
    ApiOutputs merged;
    merged.out = to_doubles(v_out);
    merged.lse = to_doubles(s_out);
    expect_same_result(merged, whole, dtype, std::string("merge_states ") + dtype_name(dtype));
  }
}

}  // namespace
}  // namespace flashband::testing
