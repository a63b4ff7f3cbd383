#include "fp8_grid.h"

#include "case_steps.h"
#include "compare.h"
#include "grid_lens.h"

namespace flashband::testing {

namespace {

// Variant 0 has qo_len < kv_len, 1 equal, 2 greater (causal rows that see nothing); `wide`
// for window 127, whose guard needs keys well beyond the window. Batches hold an empty
// request or one without keys.
const LensTable kFp8Lens = {
    {{{{9}, {70}}, {{45}, {45}}, {{60}, {41}}},
     {{{20}, {230}}, {{190}, {190}}, {{230}, {200}}}},
    {{{{}, {77, 1, 0, 45}}, {{}, {64, 33, 2}}, {{}, {5, 0, 90}}},
     {{{}, {300, 1, 0, 129}}, {{}, {263, 170}}, {{}, {7, 0, 229}}}},
    {{{{11, 0, 9}, {50, 13, 0}}, {{33, 1, 40}, {33, 1, 40}}, {{40, 3}, {29, 0}}},
     {{{17, 0, 20}, {230, 13, 150}}, {{150, 1}, {150, 1}}, {{200, 3}, {170, 0}}}},
};

}  // namespace

std::vector<Case> fp8_grid_cases(const std::vector<int>& head_dims) {
  struct Entry {
    EntryPoint e;
    int page_size;
  };
  std::vector<Entry> entries = {{EntryPoint::kSingle, 16}, {EntryPoint::kRagged, 16}};
  for (EntryPoint e : {EntryPoint::kPaged, EntryPoint::kDecode})
    for (int ps : {1, 5, 16, 128}) entries.push_back({e, ps});
  const float scales[] = {1.0f, 0.37f, 3.1f};

  std::vector<Case> cases;
  int k = 0;
  for (const Entry& en : entries)
    for (DType kv : {DType::kE4M3, DType::kE5M2})
      for (DType q : {DType::kF16, DType::kBF16})
        for (bool causal : {false, true})
          for (int w : {-1, 0, 31, 127})
            for (bool cap : {false, true})
              for (int s = 0; s < 3; ++s) {
                Case c;
                c.entry = en.e;
                c.page_size = en.page_size;
                c.kv_dtype = kv;
                c.dtype = q;
                c.causal = causal;
                c.window_left = w;
                if (cap) c.logits_soft_cap = 2.0f;
                c.k_scale = scales[s];
                c.v_scale = scales[(s + k) % 3];  // every (k_scale, v_scale) pair over the grid
                const Lens l = kFp8Lens.pick(en.e, k % 3, w == 127);
                c.qo_lens = l.qo;
                c.kv_lens = l.kv;
                c.head_dim = head_dims[static_cast<size_t>(k / 2) % head_dims.size()];
                c.layout = (k / 5) % 2 ? KVLayout::kHND : KVLayout::kNHD;
                c.stacked_kv = (k / 7) % 2 == 1;
                c.num_qo_heads = k % 4 == 3 ? 2 : 4;
                c.num_kv_heads = 2;
                c.scale_tensors = k % 5 == 1;
                c.seed = 500 + k;
                cases.push_back(c);
                ++k;
              }
  return cases;
}

Case fp8_scaled_case(EntryPoint e, DType kv, bool tensors) {
  Case c;
  c.entry = e;
  const bool single = e == EntryPoint::kSingle;
  c.qo_lens = single ? std::vector<int>{20} : std::vector<int>{20, 7};
  c.kv_lens = single ? std::vector<int>{60} : std::vector<int>{60, 33};
  c.num_qo_heads = 4;
  c.num_kv_heads = 2;
  c.dtype = DType::kBF16;
  c.kv_dtype = kv;
  c.k_scale = 0.37f;
  c.v_scale = 3.1f;
  c.scale_tensors = tensors;
  return c;
}

ScaleJudgement judge_as(const Case& c, const Case& judged) {
  const std::vector<RequestData> data = make_case_data(c);
  const ApiOutputs api = run_api(c, data);
  auto passes = [&](const Case& ref_case, std::string* failure) {
    const Comparison cmp = judge_case(c, ref_case, data, api);
    if (failure) *failure = cmp.failure;
    return cmp.passed;
  };
  ScaleJudgement j;
  j.passes_own = passes(c, &j.own_failure);
  j.passes_judged = passes(judged, nullptr);
  return j;
}

ScaleJudgement judge_with_scales(const Case& c, float k_judged, float v_judged) {
  Case judged = c;
  judged.k_scale = k_judged;
  judged.v_scale = v_judged;
  return judge_as(c, judged);
}

}  // namespace flashband::testing
