// The README's C++ example as a program: one causal, windowed single prefill on the host.
#include <flashband/attention.h>

#include <cmath>
#include <cstdio>
#include <vector>

int main() {
  const int qo = 5, kv = 9, hq = 4, hk = 2, d = 16;
  std::vector<float> q(qo * hq * d), k(kv * hk * d), v(kv * hk * d), out(qo * hq * d), lse(qo * hq);
  for (size_t i = 0; i < q.size(); ++i) q[i] = std::sin(0.1f * i);
  for (size_t i = 0; i < k.size(); ++i) k[i] = std::cos(0.07f * i);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.03f * i + 1.0f);
  using flashband::DType;
  using flashband::TensorView;
  flashband::Options opts;
  opts.causal = true;
  opts.window_left = 3;
  opts.return_lse = true;
  TensorView tl = TensorView::contiguous(lse.data(), DType::kF32, {qo, hq});
  const auto info = flashband::single_prefill(
      TensorView::contiguous(q.data(), DType::kF32, {qo, hq, d}), TensorView::contiguous(k.data(), DType::kF32, {kv, hk, d}),
      TensorView::contiguous(v.data(), DType::kF32, {kv, hk, d}), TensorView::contiguous(out.data(), DType::kF32, {qo, hq, d}),
      &tl, opts);
  std::printf("backend %s, variant %s, out[0] %.6f, lse[0] %.6f\n", flashband::backend_name(info.backend),
              info.variant.c_str(), out[0], lse[0]);
  return std::isfinite(out[0]) && std::isfinite(lse[0]) ? 0 : 1;
}
