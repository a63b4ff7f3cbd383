// run_api: a case through flashband's public entry points, on host or device memory.
#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>

#include "case_steps.h"
#include "device_buffer.h"
#include "dtype_values.h"
#include "kv_layout.h"
#include "timing.h"

namespace flashband::testing {

namespace {

// A host array copied to a fresh buffer on `device`.
DeviceBuffer to_device(Device device, const HostArray& a) {
  DeviceBuffer buf(device, a.bytes());
  buf.upload(a.data(), a.bytes());
  return buf;
}

std::vector<double> read_back(const DeviceBuffer& buf, DType dtype, int64_t numel) {
  HostArray host(dtype, numel);
  buf.download(host.data(), host.bytes());
  std::vector<double> out(static_cast<std::size_t>(numel));
  for (int64_t i = 0; i < numel; ++i) out[static_cast<std::size_t>(i)] = host.get(i);
  return out;
}

// far_kv (case.h): offsets past element 2^31 of a tensor, so that any a kernel computes in
// 32 bits wraps (and past byte 2^32).
constexpr int64_t kFarElements = int64_t{1} << 31;
// 0xFFFF is NaN in bf16 and fp16: a poison key or value read anywhere, even under a weight
// of 0, turns its rows NaN, whatever the sign of its logit (a finite poison could lose the
// softmax and go unseen). A real cache's unused slots can hold NaN too.
constexpr unsigned char kPoisonByte = 0xFF;

// The smallest stride, in whole 16-byte chunks of two-byte elements, at least `block` (the
// elements of one block of data) whose `count`-th multiple passes kFarElements + block: an
// offset that wraps at 2^31 elements (2^32 bytes) then lands after the first block, in
// poison, not in data.
int64_t far_stride(int64_t block, int64_t count) {
  const int64_t s = std::max(block, (kFarElements + block) / std::max<int64_t>(count, 1) + 1);
  return (s + 7) / 8 * 8;
}

// `a` on the device as `blocks` equal blocks, block i at element lead + i * stride, with
// poison everywhere else.
DeviceBuffer to_device_spread(Device device, const HostArray& a, int64_t blocks, int64_t lead, int64_t stride) {
  const std::size_t elem = a.bytes() / static_cast<std::size_t>(std::max<int64_t>(a.numel(), 1));
  const int64_t block = a.numel() / blocks;
  DeviceBuffer buf(device, static_cast<std::size_t>(lead + (blocks - 1) * stride + block) * elem);
  buf.fill_bytes(kPoisonByte, buf.bytes());
  for (int64_t i = 0; i < blocks; ++i)
    buf.upload_at(static_cast<std::size_t>(lead + i * stride) * elem,
                  static_cast<const unsigned char*>(a.data()) + i * block * elem, static_cast<std::size_t>(block) * elem);
  return buf;
}

}  // namespace

ApiOutputs run_api(const Case& c, const std::vector<RequestData>& data, const RunConfig& cfg) {
  validate_case(c);
  const Device dev = c.device;
  const int B = static_cast<int>(data.size());
  const int Hq = c.num_qo_heads, Hk = c.num_kv_heads, D = c.head_dim;
  std::vector<int> kv_lens;
  std::vector<int32_t> qo_indptr(1, 0);
  for (const RequestData& r : data) {
    kv_lens.push_back(r.kv_len);
    qo_indptr.push_back(qo_indptr.back() + r.qo_len);
  }
  const int64_t total_qo = qo_indptr.back();

  // Q, and outputs filled with NaN so an element the backend never writes fails the check.
  HostArray q(c.dtype, total_qo * Hq * D);
  for (int b = 0; b < B; ++b)
    for (std::size_t i = 0; i < data[b].q.size(); ++i)
      q.set(static_cast<int64_t>(qo_indptr[b]) * Hq * D + static_cast<int64_t>(i), data[b].q[i]);
  const int64_t out_stride_n = Hq * D + c.out_token_pad;
  const DType out_dtype = case_out_dtype(c);
  HostArray out(out_dtype, total_qo * out_stride_n), lse(DType::kF32, total_qo * Hq);
  out.fill_nan();
  lse.fill_nan();
  const DeviceBuffer dq = to_device(dev, q), dout = to_device(dev, out), dlse = to_device(dev, lse);
  const TensorView qv = TensorView::contiguous(dq.data(), c.dtype, {total_qo, Hq, D}, dev);
  TensorView outv = TensorView::contiguous(dout.data(), out_dtype, {total_qo, Hq, D}, dev);
  outv.strides[0] = out_stride_n;
  const TensorView lsev = TensorView::contiguous(dlse.data(), DType::kF32, {total_qo, Hq}, dev);
  const TensorView* lse_arg = c.return_lse ? &lsev : nullptr;
  HostArray sinks(DType::kF32, static_cast<int64_t>(c.sinks.size()));
  for (std::size_t h = 0; h < c.sinks.size(); ++h) sinks.set(static_cast<int64_t>(h), c.sinks[h]);
  const DeviceBuffer dsinks = to_device(dev, sinks);
  const TensorView sinksv =
      TensorView::contiguous(dsinks.data(), DType::kF32, {static_cast<int64_t>(c.sinks.size())}, dev);
  const TensorView* sinks_arg = c.sinks.empty() ? nullptr : &sinksv;
  const std::vector<uint8_t> packed = pack_case_mask(data);
  HostArray mask_bits(DType::kU8, static_cast<int64_t>(packed.size()));
  for (std::size_t i = 0; i < packed.size(); ++i) mask_bits.set(static_cast<int64_t>(i), packed[i]);
  const DeviceBuffer dmask = to_device(dev, mask_bits);
  const TensorView maskv = TensorView::contiguous(dmask.data(), DType::kU8, {static_cast<int64_t>(packed.size())}, dev);
  const TensorView* mask_arg = c.mask_density ? &maskv : nullptr;

  const Options opts = case_options(c);
  const DType kv_dtype = c.kv_dtype.value_or(c.dtype);
  BatchShape shape{Hq, Hk, D, c.dtype, dev, 0};
  shape.kv_dtype = c.kv_dtype;
  shape.o_dtype = c.o_dtype;

  // fp8 scales: floats, or one-element float32 tensors on the device (the floats left 1.0,
  // so a run that read the float instead of the tensor fails the check).
  HostArray scale_values(DType::kF32, 3);
  scale_values.set(0, c.k_scale);
  scale_values.set(1, c.v_scale);
  scale_values.set(2, c.q_scale);
  const DeviceBuffer dscales = to_device(dev, scale_values);
  auto scale_view = [&](int i) {
    return TensorView::contiguous(static_cast<float*>(dscales.data()) + i, DType::kF32, {1}, dev);
  };
  const TensorView k_scale_t = scale_view(0), v_scale_t = scale_view(1), q_scale_t = scale_view(2);
  // q_scale only with fp8 attention: a 16-bit q with a q_scale tensor is refused by name.
  const bool fp8_q = c.dtype == DType::kE4M3;
  const KVScales scales = c.scale_tensors
                              ? KVScales{1.0f, 1.0f, &k_scale_t, &v_scale_t, 1.0f, fp8_q ? &q_scale_t : nullptr}
                              : KVScales{c.k_scale, c.v_scale, nullptr, nullptr, c.q_scale, nullptr};
  RunArgs run_args;  // the batch classes' run(), given opts.stream as FlashInfer's run() gives its stream
  run_args.scales = scales;
  run_args.sinks = sinks_arg;
  run_args.custom_mask = mask_arg;
  run_args.stream = opts.stream;
  int64_t max_page_indices = 0;  // what a real caller would size for (paged entry points)
  if (c.entry == EntryPoint::kPaged || c.entry == EntryPoint::kDecode)
    for (int kv : c.kv_lens) max_page_indices += (kv + c.page_size - 1) / c.page_size;
  const std::size_t ws_bytes =
      batch_workspace_bytes(std::max(B, 1), std::max<int64_t>(total_qo, 1), Hq, D, dev, max_page_indices);
  const DeviceBuffer dws(dev, ws_bytes);
  const Workspace ws{dws.data(), ws_bytes};

  RequestRows k_rows, v_rows;
  for (const RequestData& r : data) {
    k_rows.push_back(&r.k);
    v_rows.push_back(&r.v);
  }
  const bool nhd = c.layout == KVLayout::kNHD;

  // Everything the run closure refers to lives in this scope.
  DeviceBuffer dk, dv;
  TensorView kview, vview;
  std::vector<int32_t> kv_indptr;
  PageTable pages;
  PagedKVCache cache;
  BatchPrefillRagged ragged;
  BatchPrefillPaged paged;
  BatchDecodePaged decode;
  std::function<RunInfo()> run;

  switch (c.entry) {
    case EntryPoint::kSingle:
    case EntryPoint::kRagged: {
      const HostArray hk = pack_contiguous(kv_dtype, c.layout, k_rows, kv_lens, Hk, D, &kv_indptr);
      const HostArray hv = pack_contiguous(kv_dtype, c.layout, v_rows, kv_lens, Hk, D, &kv_indptr);
      const int64_t nnz = kv_indptr.back();
      kview = nhd ? TensorView::contiguous(nullptr, kv_dtype, {nnz, Hk, D}, dev)
                  : TensorView::contiguous(nullptr, kv_dtype, {Hk, nnz, D}, dev);
      // far_kv: the tokens (NHD) or heads (HND) spread apart, poison between them. NHD: the
      // longest request's last token lies past element 2^31 counted from that request's
      // first, so offsets taken relative to a request wrap too (and the last token's from
      // the tensor's start); HND: every head but the first starts past 2^31.
      const int longest = kv_lens.empty() ? 1 : *std::max_element(kv_lens.begin(), kv_lens.end());
      if (c.far_kv) kview.strides[0] = nhd ? far_stride(Hk * D, std::max(1, longest - 1)) : far_stride(nnz * D, Hk - 1);
      auto to_kv = [&](const HostArray& a) {
        return c.far_kv ? to_device_spread(dev, a, kview.shape[0], 0, kview.strides[0]) : to_device(dev, a);
      };
      dk = to_kv(hk);
      dv = to_kv(hv);
      vview = kview;
      kview.data = dk.data();
      vview.data = dv.data();
      if (c.entry == EntryPoint::kSingle) {
        run = [&] { return single_prefill(qv, kview, vview, outv, lse_arg, opts, ws, scales, sinks_arg, mask_arg); };
      } else {
        ragged.plan(qo_indptr.data(), kv_indptr.data(), B, shape, opts, ws);
        run = [&] { return ragged.run(qv, kview, vview, outv, lse_arg, run_args); };
      }
      break;
    }
    case EntryPoint::kPaged:
    case EntryPoint::kDecode: {
      pages = assign_pages(kv_lens, c.page_size, c.seed * 31 + 7);
      // cuDNN loads whole key tiles: rows past kv_len in its last page take a weight of 0.
      const UnusedSlots unused =
          c.backend == Backend::kCUDNN ? UnusedSlots::kFiniteInNamedPages : UnusedSlots::kNaN;
      const PagedCache host = pack_paged(kv_dtype, c.layout, c.stacked_kv, pages, k_rows, v_rows, kv_lens, Hk, D, unused);
      // far_kv: `far` poison pages in front of the pool (every layout is page-major), and
      // every page index moved past them.
      const int64_t page_elems = int64_t{c.page_size} * Hk * D * (c.stacked_kv ? 2 : 1);
      const int64_t far = c.far_kv ? far_stride(1, page_elems) : 0;
      for (int32_t& x : pages.indices) x = static_cast<int32_t>(x + far);
      pages.num_pages = static_cast<int>(pages.num_pages + far);
      const int64_t P = pages.num_pages, ps = c.page_size;
      auto to_pool = [&](const HostArray& a) {
        return c.far_kv ? to_device_spread(dev, a, 1, far * page_elems, 0) : to_device(dev, a);
      };
      dk = to_pool(host.k);
      if (c.stacked_kv) {
        const TensorView kv = nhd ? TensorView::contiguous(dk.data(), kv_dtype, {P, 2, ps, Hk, D}, dev)
                                  : TensorView::contiguous(dk.data(), kv_dtype, {P, 2, Hk, ps, D}, dev);
        cache = PagedKVCache::from_stacked(kv);
      } else {
        dv = to_pool(host.v);
        cache.k = nhd ? TensorView::contiguous(dk.data(), kv_dtype, {P, ps, Hk, D}, dev)
                      : TensorView::contiguous(dk.data(), kv_dtype, {P, Hk, ps, D}, dev);
        cache.v = nhd ? TensorView::contiguous(dv.data(), kv_dtype, {P, ps, Hk, D}, dev)
                      : TensorView::contiguous(dv.data(), kv_dtype, {P, Hk, ps, D}, dev);
      }
      PagedIndex index;
      index.indptr = pages.indptr.data();
      index.indices = pages.indices.empty() ? nullptr : pages.indices.data();
      index.last_page_len = pages.last_page_len.empty() ? nullptr : pages.last_page_len.data();
      index.page_size = c.page_size;
      index.num_pages = pages.num_pages;
      if (c.entry == EntryPoint::kPaged) {
        paged.plan(qo_indptr.data(), index, B, shape, opts, ws);
        run = [&] { return paged.run(qv, cache, outv, lse_arg, run_args); };
      } else {
        decode.plan(index, B, shape, opts, ws);
        run = [&] { return decode.run(qv, cache, outv, lse_arg, run_args); };
      }
      break;
    }
  }

  ApiOutputs result;
  result.info = run();
  synchronize(dev);
  const std::vector<double> padded = read_back(dout, out_dtype, total_qo * out_stride_n);
  result.out.resize(static_cast<std::size_t>(total_qo * Hq * D));
  for (int64_t t = 0; t < total_qo; ++t) {
    for (int64_t i = 0; i < out_stride_n; ++i) {
      const double v = padded[static_cast<std::size_t>(t * out_stride_n + i)];
      if (i < Hq * D) result.out[static_cast<std::size_t>(t * Hq * D + i)] = v;
      else if (!std::isnan(v)) result.padding_untouched = false;
    }
  }
  if (c.return_lse) result.lse = read_back(dlse, DType::kF32, total_qo * Hq);
  if (cfg.timed_iters > 0) result.median_ms = median_ms(dev, cfg.warmup_iters, cfg.timed_iters, [&] { run(); });
  return result;
}

}  // namespace flashband::testing
