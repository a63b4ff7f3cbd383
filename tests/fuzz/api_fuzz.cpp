// libFuzzer harness of flashband's validation and plan entry points on the cpu backend
// (issue 63): the input bytes choose an entry point, its sizes, options, index arrays and
// tensor shapes, dtypes and strides, most of them malformed. Every call must either return
// or throw flashband::Error leaving each output byte as it was; anything else (another
// exception, an ASan/UBSan report, an output written by a refused call) aborts the run.
// The harness never lies about memory: each view's strides stay within the buffer it owns,
// so a sanitizer report is the library's.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "validate/validate.h"
#include "flashband/attention.h"

namespace flashband {
namespace {

constexpr int64_t kMaxElements = int64_t{1} << 15;  // per tensor: runs stay fast

// The fuzzer's bytes as values; past the end every read is 0.
class Bytes {
 public:
  Bytes(const uint8_t* data, size_t size) : p_(data), n_(size) {}
  template <typename T>
  T take() {
    T v{};
    const size_t k = n_ < sizeof(T) ? n_ : sizeof(T);
    std::memcpy(&v, p_, k);
    p_ += k;
    n_ -= k;
    return v;
  }
  int upto(int max) { return static_cast<int>(take<uint8_t>() % (max + 1)); }
  bool bit() { return take<uint8_t>() & 1; }
  // Mostly a small value, sometimes any int32 (negative, huge).
  int32_t count(int small_max) { return upto(7) == 0 ? take<int32_t>() : upto(small_max); }

 private:
  const uint8_t* p_;
  size_t n_;
};

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "api_fuzz: %s\n", what);
  std::abort();
}

DType dtype_of(Bytes& in) {
  switch (in.upto(3)) {
    case 0: return DType::kF16;
    case 1: return DType::kBF16;
    case 2: return DType::kF32;
    default: return DType::kI32;
  }
}

// A host tensor owning exactly the bytes its view can reach. Most views are contiguous with
// the asked shape; some get one dimension changed, a transposed pair, a stride-0, strided
// last or padded dimension, a negative stride, or a null pointer.
struct Tensor {
  std::vector<uint8_t> bytes;
  TensorView view;
  bool valid = false;  // false: too large to allocate; not passed

  Tensor() = default;
  Tensor(Bytes& in, std::vector<int64_t> shape, DType dtype) {
    if (in.upto(5) == 0) dtype = dtype_of(in);
    const int mode = in.upto(15);
    if (mode == 1 && !shape.empty()) shape[in.upto(static_cast<int>(shape.size()) - 1)] += in.bit() ? 1 : -1;
    if (mode == 2 && shape.size() < TensorView::kMaxDims) shape.push_back(1 + in.upto(2));
    if (mode == 3 && !shape.empty()) shape.pop_back();
    view.dtype = dtype;
    view.ndim = static_cast<int>(shape.size());
    int64_t stride = mode == 4 ? 2 : 1, numel = 1;  // mode 4: every stride doubled (last one 2)
    for (int i = view.ndim; i-- > 0;) {
      if (shape[i] < 0 || shape[i] > kMaxElements) return;
      view.shape[i] = shape[i];
      view.strides[i] = stride;
      stride *= std::max<int64_t>(shape[i], 1);
      numel *= shape[i];
      if (numel > kMaxElements || stride > kMaxElements * 4) return;
    }
    if (mode == 5 && view.ndim >= 1) view.strides[0] += 3;  // padded rows
    if (mode == 6 && view.ndim >= 2) std::swap(view.strides[0], view.strides[1]);
    if (mode == 7 && view.ndim >= 1) view.strides[in.upto(view.ndim - 1)] = 0;
    if (mode == 8 && view.ndim >= 1) view.strides[0] = -view.strides[0];
    // Bytes the view reaches: [lo, hi] in elements around its data pointer.
    int64_t lo = 0, hi = 0;
    for (int i = 0; i < view.ndim; ++i) {
      if (view.shape[i] == 0) continue;
      const int64_t span = (view.shape[i] - 1) * view.strides[i];
      (span < 0 ? lo : hi) += span;
    }
    if (hi - lo >= 8 * kMaxElements) return;  // a view of few elements spread wide (a zero dimension)
    const size_t elem = dtype_size(dtype);
    bytes.assign(static_cast<size_t>(hi - lo + 1) * elem, 0);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(0x3c + (i % 3));  // finite in every dtype
    view.data = bytes.data() + static_cast<size_t>(-lo) * elem;
    if (mode == 9) view.data = nullptr;
    valid = true;
  }
};

Options options_of(Bytes& in) {
  Options o;
  o.causal = in.bit();
  switch (in.upto(3)) {
    case 0: o.window_left = -1; break;
    case 1: o.window_left = in.upto(10); break;
    case 2: o.window_left = in.take<int32_t>(); break;
    default: o.window_left = -2 - in.upto(3); break;
  }
  switch (in.upto(3)) {
    case 0: o.window_right = -1; break;
    case 1: o.window_right = in.upto(10); break;
    case 2: o.window_right = in.take<int32_t>(); break;  // past INT_MAX - p: mask.h must not overflow
    default: o.window_right = -2 - in.upto(3); break;
  }
  // Float parameters arrive as the double a caller wrote, narrowed the way the bindings do.
  const double raw_cap = in.bit() ? in.take<double>() : in.upto(3) * 10.0;
  const double raw_scale = in.take<double>();
  try {
    o.logits_soft_cap = validate::float_param("logits_soft_cap", raw_cap);
    if (in.bit()) o.sm_scale = validate::float_param("sm_scale", in.bit() ? raw_scale : 0.125);
  } catch (const Error&) {
    o.logits_soft_cap = static_cast<float>(raw_cap);  // the library must judge it as it comes
  }
  o.return_lse = in.bit();
  o.kv_layout = in.bit() ? KVLayout::kHND : KVLayout::kNHD;
  o.backend = in.upto(7) == 0 ? Backend::kSM80 : (in.bit() ? Backend::kAuto : Backend::kCPU);
  if (in.upto(15) == 0) o.stream = reinterpret_cast<void*>(uintptr_t{0x1000});
  o.disable_split_kv = in.bit();
  o.custom_mask = in.upto(3) == 0;
  return o;
}

// CSR arrays: consistent (lengths 0..max) or raw int32 entries.
std::vector<int32_t> indptr_of(Bytes& in, int batch, int max_len) {
  std::vector<int32_t> p(static_cast<size_t>(batch) + 1, 0);
  const bool raw = in.upto(5) == 0;
  for (int b = 1; b <= batch; ++b) p[b] = raw ? in.take<int32_t>() : p[b - 1] + in.upto(max_len);
  if (in.upto(15) == 0) p[0] = in.take<int32_t>();
  return p;
}

// Runs `call`; an Error must leave every byte of `outputs` as it was.
template <typename Call>
void expect_clean(Call call, std::initializer_list<Tensor*> outputs) {
  std::vector<std::vector<uint8_t>> before;
  for (Tensor* t : outputs) before.push_back(t->bytes);
  try {
    call();
  } catch (const Error&) {
    size_t i = 0;
    for (Tensor* t : outputs)
      if (t->bytes != before[i++]) die("an output was written by a call that threw");
  }
}

void fuzz_sizes(Bytes& in) {
  const int32_t batch = in.count(64), heads = in.count(64), head_dim = in.count(256);
  const int64_t tokens = in.bit() ? in.take<int64_t>() : in.upto(200), pages = in.bit() ? in.take<int64_t>() : in.upto(50);
  const int64_t request_pages = in.bit() ? in.take<int64_t>() : -1;
  const Device device = in.bit() ? Device::kCUDA : Device::kCPU;
  try {
    batch_workspace_bytes(batch, tokens, heads, head_dim, device, pages);
  } catch (const Error&) {
  }
  try {
    batch_plan_bytes(batch, tokens, heads, head_dim, device, pages, request_pages);
  } catch (const Error&) {
  }
}

struct Problem {
  int hq, hk, d;
  DType dtype;
  DType kv_dtype;  // q's, or (a quarter of the time) an fp8 cache
  Options opts;
  explicit Problem(Bytes& in) {
    hk = in.count(3);
    hq = in.bit() && hk >= 0 && hk <= 64 ? hk * (1 + in.upto(2)) : in.count(6);
    d = in.upto(3) == 0 ? in.count(600) : 8 * (1 + in.upto(3));
    dtype = dtype_of(in);
    opts = options_of(in);
    kv_dtype = in.upto(3) == 0 ? (in.bit() ? DType::kE4M3 : DType::kE5M2) : dtype;
  }
  BatchShape shape() const {
    BatchShape s{hq, hk, d, dtype, Device::kCPU, 0};
    if (kv_dtype != dtype) s.kv_dtype = kv_dtype;
    return s;
  }
};

// run()'s fp8 scales: mostly valid, sometimes any float, sometimes one-element tensors
// (perturbed like every tensor here); the tensors live in k_t and v_t.
KVScales scales_of(Bytes& in, Tensor& k_t, Tensor& v_t) {
  auto value = [&in] {
    switch (in.upto(3)) {
      case 0: return in.take<float>();
      case 1: return 0.37f;
      case 2: return 3.1f;
      default: return 1.0f;
    }
  };
  KVScales s;
  s.k_scale = value();
  s.v_scale = value();
  for (auto [t, slot] : {std::pair{&k_t, &s.k_scale_tensor}, std::pair{&v_t, &s.v_scale_tensor}}) {
    if (in.upto(3) != 0) continue;
    *t = Tensor(in, {1}, DType::kF32);
    if (t->valid) *slot = &t->view;
  }
  return s;
}

// A custom mask for requests of these lengths: mostly the packed total a plan expects
// (sum of ceil(qo_len * kv_len / 8)), at times one byte off or packed without per-request
// padding, perturbed like every tensor; given mostly iff the options declare it.
struct Mask {
  Tensor bits;
  const TensorView* arg = nullptr;
  Mask(Bytes& in, const Options& opts, const std::vector<int64_t>& qo_lens, const std::vector<int64_t>& kv_lens) {
    int64_t bytes = 0, bits_total = 0;
    for (std::size_t b = 0; b < qo_lens.size(); ++b) {
      bytes += (qo_lens[b] * kv_lens[b] + 7) / 8;
      bits_total += qo_lens[b] * kv_lens[b];
    }
    switch (in.upto(7)) {
      case 0: bytes += in.bit() ? 1 : -1; break;
      case 1: bytes = (bits_total + 7) / 8; break;
      default: break;
    }
    bits = Tensor(in, {std::max<int64_t>(bytes, 0)}, DType::kU8);
    if (bits.valid && (opts.custom_mask != (in.upto(7) == 0))) arg = &bits.view;
  }
};

// Each request's length from a CSR array.
std::vector<int64_t> lengths_of(const std::vector<int32_t>& indptr, int batch) {
  std::vector<int64_t> n(static_cast<std::size_t>(batch));
  for (int b = 0; b < batch; ++b) n[static_cast<std::size_t>(b)] = int64_t{indptr[b + 1]} - indptr[b];
  return n;
}

// q/out [tokens, Hq, D] and lse [tokens, Hq] as the problem asks (each then perturbed).
struct Outputs {
  Tensor q, out, lse;
  Outputs(Bytes& in, const Problem& p, int64_t tokens)
      : q(in, {tokens, p.hq, p.d}, p.dtype), out(in, {tokens, p.hq, p.d}, p.dtype),
        lse(in, {tokens, p.hq}, DType::kF32) {}
  bool valid() const { return q.valid && out.valid && lse.valid; }
  const TensorView* lse_arg(Bytes& in) const { return in.bit() ? &lse.view : nullptr; }
};

Tensor kv_tensor(Bytes& in, const Problem& p, int64_t tokens) {
  return p.opts.kv_layout == KVLayout::kNHD ? Tensor(in, {tokens, p.hk, p.d}, p.kv_dtype)
                                            : Tensor(in, {p.hk, tokens, p.d}, p.kv_dtype);
}

void fuzz_single(Bytes& in) {
  const Problem p(in);
  const int64_t qo = in.count(9), kv = in.count(12);
  Outputs o(in, p, qo);
  Tensor k = kv_tensor(in, p, kv), v = kv_tensor(in, p, kv);
  if (!o.valid() || !k.valid || !v.valid) return;
  const TensorView* lse = o.lse_arg(in);
  Tensor k_t, v_t;
  const KVScales scales = scales_of(in, k_t, v_t);
  const Mask mask(in, p.opts, {qo}, {kv});
  expect_clean([&] { single_prefill(o.q.view, k.view, v.view, o.out.view, lse, p.opts, {}, scales, nullptr, mask.arg); },
               {&o.out, &o.lse});
}

void fuzz_ragged(Bytes& in) {
  const Problem p(in);
  const int batch = in.count(5);
  if (batch < 0 || batch > 64) {
    try {
      BatchPrefillRagged().plan(nullptr, nullptr, batch, p.shape(), p.opts, {});
    } catch (const Error&) {
    }
    return;
  }
  const std::vector<int32_t> qo = indptr_of(in, batch, 5), kv = indptr_of(in, batch, 9);
  BatchPrefillRagged r;
  try {
    r.plan(qo.data(), kv.data(), batch, p.shape(), p.opts, {});
  } catch (const Error&) {
    return;
  }
  Outputs o(in, p, int64_t{qo[batch]} + in.upto(2));
  Tensor k = kv_tensor(in, p, kv[batch]), v = kv_tensor(in, p, kv[batch]);
  if (!o.valid() || !k.valid || !v.valid) return;
  const TensorView* lse = o.lse_arg(in);
  Tensor k_t, v_t;
  const KVScales scales = scales_of(in, k_t, v_t);
  const Mask mask(in, p.opts, lengths_of(qo, batch), lengths_of(kv, batch));
  RunArgs args{scales};
  args.custom_mask = mask.arg;
  expect_clean([&] { r.run(o.q.view, k.view, v.view, o.out.view, lse, args); }, {&o.out, &o.lse});
}

struct Pages {
  std::vector<int32_t> indptr, indices, last;
  PagedIndex index;
  bool honest = true;
  Pages(Bytes& in, int batch) {
    indptr = indptr_of(in, batch, 3);
    index.page_size = in.count(4);
    index.num_pages = in.count(12);
    // The C++ API takes indptr[batch] indices on trust (a pointer has no length): the harness
    // gives that many, so an indptr ending past 4096 is not passed at all.
    const int64_t end = indptr[batch];
    honest = end <= 4096;
    for (int64_t i = 0; i < std::max<int64_t>(end, 0) && honest; ++i)
      indices.push_back(in.upto(7) == 0 ? in.take<int32_t>() : in.upto(12));
    for (int b = 0; b < batch; ++b) last.push_back(in.upto(7) == 0 ? in.take<int32_t>() : in.upto(4));
    index.indptr = indptr.data();
    index.indices = indices.data();
    index.last_page_len = last.data();
  }
};

PagedKVCache cache_of(Bytes& in, const Problem& p, const PagedIndex& pages, Tensor& k, Tensor& v) {
  const int64_t n = pages.num_pages, ps = pages.page_size;
  const bool nhd = p.opts.kv_layout == KVLayout::kNHD;
  k = nhd ? Tensor(in, {n, ps, p.hk, p.d}, p.kv_dtype) : Tensor(in, {n, p.hk, ps, p.d}, p.kv_dtype);
  v = nhd ? Tensor(in, {n, ps, p.hk, p.d}, p.kv_dtype) : Tensor(in, {n, p.hk, ps, p.d}, p.kv_dtype);
  return PagedKVCache{k.view, v.view};
}

void fuzz_paged(Bytes& in, bool decode) {
  const Problem p(in);
  const int batch = in.upto(5);
  Pages pages(in, batch);
  if (!pages.honest) return;
  std::vector<int32_t> qo = decode ? std::vector<int32_t>() : indptr_of(in, batch, 5);
  BatchPrefillPaged prefill;
  BatchDecodePaged dec;
  try {
    if (decode)
      dec.plan(pages.index, batch, p.shape(), p.opts, {});
    else
      prefill.plan(qo.data(), pages.index, batch, p.shape(), p.opts, {});
  } catch (const Error&) {
    return;
  }
  Outputs o(in, p, int64_t{decode ? batch : qo[batch]} + in.upto(2));
  Tensor k, v;
  const PagedKVCache cache = cache_of(in, p, pages.index, k, v);
  if (!o.valid() || !k.valid || !v.valid) return;
  const TensorView* lse = o.lse_arg(in);
  Tensor k_t, v_t;
  const KVScales scales = scales_of(in, k_t, v_t);
  // Paged lengths as plan() derived them (the plan accepted these arrays).
  std::vector<int64_t> kv_lens = lengths_of(pages.indptr, batch);
  for (int b = 0; b < batch; ++b) {
    int64_t& n = kv_lens[static_cast<std::size_t>(b)];
    n = n == 0 ? 0 : (n - 1) * pages.index.page_size + pages.last[static_cast<std::size_t>(b)];
  }
  const Mask mask(in, p.opts, decode ? std::vector<int64_t>(kv_lens.size(), 1) : lengths_of(qo, batch), kv_lens);
  RunArgs args{scales};
  args.custom_mask = mask.arg;
  expect_clean(
      [&] {
        if (decode)
          dec.run(o.q.view, cache, o.out.view, lse, args);
        else
          prefill.run(o.q.view, cache, o.out.view, lse, args);
      },
      {&o.out, &o.lse});
}

void fuzz_merge(Bytes& in) {
  const int64_t n = in.count(6), states = in.count(3), h = in.count(3), d = in.count(16);
  const DType dtype = dtype_of(in);
  if (in.bit()) {
    Tensor va(in, {n, h, d}, dtype), sa(in, {n, h}, DType::kF32), vb(in, {n, h, d}, dtype), sb(in, {n, h}, DType::kF32);
    Tensor vo(in, {n, h, d}, dtype), so(in, {n, h}, DType::kF32);
    for (const Tensor* t : {&va, &sa, &vb, &sb, &vo, &so})
      if (!t->valid) return;
    expect_clean([&] { merge_state(va.view, sa.view, vb.view, sb.view, vo.view, so.view); }, {&vo, &so});
  } else {
    Tensor v(in, {n, states, h, d}, dtype), s(in, {n, states, h}, DType::kF32);
    Tensor vo(in, {n, h, d}, dtype), so(in, {n, h}, DType::kF32);
    for (const Tensor* t : {&v, &s, &vo, &so})
      if (!t->valid) return;
    expect_clean([&] { merge_states(v.view, s.view, vo.view, so.view); }, {&vo, &so});
  }
}

}  // namespace
}  // namespace flashband

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace flashband;
  Bytes in(data, size);
  try {
    switch (in.upto(5)) {
      case 0: fuzz_sizes(in); break;
      case 1: fuzz_single(in); break;
      case 2: fuzz_ragged(in); break;
      case 3: fuzz_paged(in, false); break;
      case 4: fuzz_paged(in, true); break;
      default: fuzz_merge(in); break;
    }
  } catch (const Error&) {
    // A refusal outside expect_clean (a plan): what the contract asks for.
  }
  return 0;
}
