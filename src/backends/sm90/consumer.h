// The consumer warpgroups: each owns 64 query rows of the CTA's query tile. Per KV tile:
//   S = Q K^T (wgmma, both operands in shared memory, float32 accumulators)
//   soft cap, mask (partial tiles only), online softmax in registers -> P
//   O += P V   (wgmma, P from registers converted to the input dtype)
// then the epilogue. Tiles are visited last-first, so under a causal mask the tile on the
// diagonal (partial) comes first and the rest run without mask arithmetic.
//
// The mainloop overlaps: step n issues QK^T(n) and PV(n+1) back to back, then does the
// softmax of tile n while PV(n+1) runs; the O rescale and P conversion wait for PV(n+1).
// (With ping-pong, ptxas waits for PV(n+1) before that softmax, which measured faster
// than forcing the order: the other warpgroup's GEMMs run under it; see the loop.)
// With kPingPong the warpgroups also take turns issuing those GEMMs (named barriers 2 and
// up, a ring of two or three), so the tensor cores alternate between them. With kFuseUnits
// a unit's last PV and the next unit's first QK^T share one turn, and O is stored under
// that QK^T. The row sums' shuffles (finish_rows) always run under the unit's last PV.
#pragma once
#include <climits>

#include <cute/tensor.hpp>

#include "backends/sm90/custom_mask.h"
#include "backends/sm90/epilogue.h"
#include "backends/sm90/fragment.h"
#include "backends/sm90/kernel_params.h"
#include "backends/sm90/kernel_traits.h"
#include "backends/sm90/producer.h"
#include "backends/sm90/ptx.h"
#include "backends/sm90/schedule.h"
#include "backends/sm90/shared_storage.h"
#include "backends/sm90/softmax.h"
#include "backends/sm90/trace.h"
#include "core/mask.h"

namespace flashband::sm90 {

// Sets to -inf every logit whose key the row cannot see (core::row_kv_range is the
// visibility rule as one interval per row). s, c: (rows, cols) views of S and of its tile
// coordinates; row0 / key0: request row and key of the tile's origin.
template <class TensorS, class TensorC>
__device__ __forceinline__ void apply_mask(TensorS& s, const TensorC& c, const core::MaskSpec& spec, int row0,
                                           int key0) {
  // A thread's columns are its first column plus constants of the fragment's layout, so the
  // row's bounds move by that first column once and each compare takes its constant as an
  // immediate, instead of an add per column pair.
  const int col0 = cute::get<1>(c(0, 0));
#pragma unroll
  for (int r = 0; r < cute::size<0>(s); ++r) {
    const core::KVRange vis = core::row_kv_range(spec, row0 + cute::get<0>(c(r, 0)));
    // Without a window every row's first key is 0, which the tile's keys never precede:
    // the left compare folds away in the kernels whose mask is a constant (tile_shapes.h).
    int lo = spec.window_left >= 0 ? vis.first - key0 - col0 : INT_MIN;
    int hi = vis.last - key0 - col0;
    // Opaque to the optimizer, which would otherwise fold col0 back into every column.
    if (spec.window_left >= 0) asm("" : "+r"(lo));
    asm("" : "+r"(hi));
#pragma unroll
    for (int j = 0; j < cute::size<1>(s); ++j) {
      const int offset = cute::get<1>(c(r, j)) - col0;  // a constant once unrolled
      if (offset < lo || offset >= hi) s(r, j) = core::neg_inf();
    }
  }
}

// warpgroup_wait<0>() that ptxas cannot move above the computation of `dep`. ptxas places
// a wgmma wait as early as its basic block allows (the wait has no inputs): in the SASS of
// the five kernels checked (D = 64, 128 and 256, contiguous and paged) the wait for
// P V(n+1) stood at the start of the softmax of tile n (midway through it at D = 256), so
// the softmax ran after that P V instead of under it. A branch on a warp-uniform value derived
// from `dep` starts a new block at the wait; both arms wait (the second, taken only when
// `dep` is NaN, sleeps a cycle so that the compiler keeps the arms apart).
__device__ __forceinline__ void wait_all_after(float dep) {
  if (__any_sync(0xffffffffu, !(dep >= 0.0f))) {
    cute::warpgroup_wait<0>();
    __nanosleep(1);
  } else {
    cute::warpgroup_wait<0>();
  }
}

// Lane 0 of each warp arrives once the warp is done with a buffer (barrier count = warps).
__device__ __forceinline__ void warp_release(uint64_t* bar) {
  __syncwarp();
  if (threadIdx.x % 32 == 0) ptx::mbar_arrive(bar);
}

// Named barriers 2 .. 1 + kConsumerWarpgroups order the consumer warpgroups' GEMM issue in a
// ring (0 -> 1 -> 0, or 0 -> 1 -> 2 -> 0): warpgroup w waits on barrier 2 + w, and after
// issuing lets the next one go. Each barrier has exactly two parties, the warpgroup that
// waits and the one before it, so its count is 256 with three consumers too. Every
// warpgroup takes the same turns (consume()), so each wait meets one arrival, and an
// arrival never runs a phase ahead (the next one on barrier 2 + w needs w's own turn
// first). The last warpgroup's first arrival (pingpong_start) leaves one arrival on barrier
// 2 that nobody waits for: the CTA exits with it pending, as the two-consumer kernel
// always has.
constexpr uint32_t kPingPongBarrier = 2;
template <class Traits>
__device__ __forceinline__ void pingpong_start(int slab) {  // warpgroup 0 goes first
  if constexpr (Traits::kPingPong) {
    if (slab == Traits::kConsumerWarpgroups - 1) ptx::named_arrive(kPingPongBarrier, 256);
  }
}
template <class Traits>
__device__ __forceinline__ void pingpong_wait(int slab) {
  if constexpr (Traits::kPingPong) ptx::named_sync(kPingPongBarrier + slab, 256);
}
template <class Traits>
__device__ __forceinline__ void pingpong_pass(int slab) {
  constexpr int kRing = Traits::kConsumerWarpgroups;
  static_assert(kPingPongBarrier + kRing <= 16, "a CTA has 16 named barriers");
  // Two: 1 - slab, one instruction, as the D = 128 kernel was measured.
  if constexpr (Traits::kPingPong)
    ptx::named_arrive(kPingPongBarrier + (kRing == 2 ? 1 - slab : slab == kRing - 1 ? 0 : slab + 1), 256);
}

// The consumers' logit scales (kernel_params.h) and O's factor.
struct Fp8Scales {
  float scale_log2;
  float softcap_pre;
  float o_scale;
};
template <bool kFp8KV>
__device__ __forceinline__ Fp8Scales fp8_scales(const KernelParams& p) {
  Fp8Scales f{p.scale_log2, p.softcap_pre, 1.0f};
  if constexpr (kFp8KV) {
    if (p.k_scale_ptr != nullptr) {  // k_scale multiplies the logits before the soft cap
      const float k_scale = *p.k_scale_ptr;
      if (f.softcap_pre > 0.0f)
        f.softcap_pre *= k_scale;
      else
        f.scale_log2 *= k_scale;
    }
    f.o_scale = p.v_scale_ptr != nullptr ? p.v_scale * *p.v_scale_ptr : p.v_scale;
  }
  return f;
}

template <class Traits, bool kPaged>
__device__ void consume(const KernelParams& p, SharedStorage<Traits>& s, int tid) {
  using namespace cute;
  using Element = typename Traits::Element;
  constexpr int kBlockM = Traits::kBlockM, kBlockN = Traits::kBlockN, kHeadDim = Traits::kHeadDim;

  typename Traits::TiledMmaQK mma_qk;
  typename Traits::TiledMmaPV mma_pv;
  auto thr_qk = mma_qk.get_thread_slice(tid);
  auto thr_pv = mma_pv.get_thread_slice(tid);

  Tensor sQ = make_tensor(make_smem_ptr(s.q), typename Traits::SmemLayoutQ{});    // (M, D, q stage)
  Tensor sK = make_tensor(make_smem_ptr(s.k), typename Traits::SmemLayoutK{});    // (N, D, stage)
  Tensor sVt = make_tensor(make_smem_ptr(s.v), typename Traits::SmemLayoutVt{});  // (D, N, stage)
  Tensor tSrQ = thr_qk.partition_fragment_A(sQ);   // descriptors (MMA, MMA_M, D/16, q stage)
  Tensor tSrK = thr_qk.partition_fragment_B(sK);   // descriptors (MMA, MMA_N, D/16, stage)
  Tensor tOrV = thr_pv.partition_fragment_B(sVt);  // descriptors (MMA, MMA_N, N/16, stage)
  static_assert(decltype(size<2>(tSrQ))::value == kHeadDim / 16 && decltype(size<2>(tOrV))::value == kBlockN / 16);

  Tensor tSrS = partition_fragment_C(mma_qk, Shape<Int<kBlockM>, Int<kBlockN>>{});   // ((2,2,N/8),1,1)
  Tensor tOrO = partition_fragment_C(mma_pv, Shape<Int<kBlockM>, Int<kHeadDim>>{});  // ((2,2,D/8),1,1)
  Tensor tScS = thr_qk.partition_C(make_identity_tensor(Shape<Int<kBlockM>, Int<kBlockN>>{}));
  Tensor tOcO = thr_pv.partition_C(make_identity_tensor(Shape<Int<kBlockM>, Int<kHeadDim>>{}));
  Tensor S = make_tensor(tSrS.data(), rowcol_layout(tSrS.layout()));  // (rows, cols)
  Tensor O = make_tensor(tOrO.data(), rowcol_layout(tOrO.layout()));
  Tensor cS = make_tensor(tScS.data(), rowcol_layout(tScS.layout()));
  Tensor cO = make_tensor(tOcO.data(), rowcol_layout(tOcO.layout()));
  constexpr int kRows = decltype(size<0>(S))::value;
  static_assert(kRows == 2, "one 64-row wgmma per warpgroup: two rows per thread");

  // P: S converted to the input dtype, read by the PV wgmma as its register A operand.
  Tensor rP = make_tensor<Element>(tSrS.layout());
  Tensor tOrP = make_tensor(rP.data(), acc_as_operand_a(tSrS.layout()));  // ((2,2,2), 1, N/16)

  // The logit scales and O's factor. fp8 K/V: a device k_scale / v_scale, read once per CTA
  // here, joins the host's part (kernel_params.h); the other kernels read the parameters.
  const Fp8Scales scales = fp8_scales<Traits::kFp8KV>(p);

  // The lazy reference (softmax.h) pays off only at D = 256 (findings F6).
  using Softmax = RowSoftmax<kRows, kHeadDim == 256>;
  Softmax softmax;
  typename Softmax::Final fin[kRows];  // the unit's row scales and LSEs
  auto finish_rows = [&] {  // every lane: quad shuffles
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      fin[r] = softmax.finish(r, scales.scale_log2);
      if constexpr (Traits::kFp8KV) fin[r].scale *= scales.o_scale;  // v_scale: O only, not the LSE
    }
  };
  const int slab = tid / 128;  // which 64 rows of the query tile this warpgroup owns
  RingPosition<Traits::kStages> ring;
  uint32_t q_round = 0;
  int q_buffer = 0;  // this unit's Q buffer (QSlot)

  // ---- the pieces of one KV step --------------------------------------------------------
  // Waits for a K or V stage. Paged stages were written by cp.async (the generic proxy), so
  // this thread orders them before its wgmma reads (the async proxy) with a proxy fence.
  auto wait_full = [&](uint64_t* bar, uint32_t phase) {
    ptx::mbar_wait(bar, phase);
    if constexpr (kPaged) ptx::fence_proxy_async_smem();
  };
  auto issue_qk = [&](int stage) {  // S = Q K[stage]^T, committed, not waited for
    warpgroup_fence_operand(tSrS);
    warpgroup_arrive();
    mma_qk.accumulate_ = GMMA::ScaleOut::Zero;
#pragma unroll
    for (int k = 0; k < size<2>(tSrQ); ++k) {
      cute::gemm(mma_qk, tSrQ(_, _, k, q_buffer), tSrK(_, _, k, stage), tSrS);
      mma_qk.accumulate_ = GMMA::ScaleOut::One;
    }
    warpgroup_commit_batch();
  };
  // kFreshPV: a unit's first P V overwrites O instead of adding to it, so O is never
  // cleared (an empty unit stores zeros from its row scales of 0, epilogue.h). In the fused
  // kernels the clear sat between two ping-pong turns at every unit boundary. The unfused
  // kernels' units are long, and a runtime scale in their loop cost more than the clear
  // (findings F9).
  constexpr bool kFreshPV = Traits::kFuseUnits;
  bool o_fresh = true;
  auto issue_pv = [&](int stage) {  // O += P V[stage] (O = P V when o_fresh), committed, not waited for
    warpgroup_fence_operand(rP);  // P is written before wgmma.fence and read until the wait
    warpgroup_fence_operand(tOrO);
    warpgroup_arrive();
    if constexpr (kFreshPV) mma_pv.accumulate_ = o_fresh ? GMMA::ScaleOut::Zero : GMMA::ScaleOut::One;
#pragma unroll
    for (int k = 0; k < size<2>(tOrP); ++k) {
      cute::gemm(mma_pv, tOrP(_, _, k), tOrV(_, _, k, stage), tOrO);
      mma_pv.accumulate_ = GMMA::ScaleOut::One;
    }
    warpgroup_commit_batch();
    o_fresh = false;
  };
  // Soft cap, mask and the online softmax of the S tile at key0; S becomes the weights.
  // unit: the unit's number, whose item's mask offset a custom mask reads per tile (an L1
  // hit; a 64-bit base held through the unit cost D = 256 8 more bytes of spills).
  auto score = [&](const core::MaskSpec& spec, core::TileClass cls, int tile_row0, int key0, int unit,
                   float (&correction)[kRows]) {
    warpgroup_fence_operand(tSrS);
    // A custom mask's bits are loaded first, so that their latency hides under the soft cap
    // and the window mask; a tile the window hides needs none. Uniform over the launch.
    // D = 256 loads them last: its O leaves no registers to hold them (ptxas: 72 bytes of
    // spills first, 32 last, in the contiguous kernel).
    const bool custom = Traits::kCustomMask && p.custom_mask != nullptr && cls != core::TileClass::kHidden;
    constexpr bool kBitsFirst = kHeadDim != 256;
    TileMaskBits<kRows, kBlockN> bits;
    auto load_bits = [&] {
      bits = tile_mask_bits<kRows, kBlockN>(p, cS, mask_row0_bit(p, p.qo_heads_div.div(unit)), spec.qo_len,
                                            spec.kv_len, tile_row0, key0);
    };
    if constexpr (Traits::kCustomMask && kBitsFirst) {
      if (custom) load_bits();
    }
    if (Traits::kSoftCap && scales.softcap_pre > 0.0f) {
#pragma unroll
      for (int i = 0; i < size(tSrS); ++i) tSrS(i) = tanh_accurate(tSrS(i) * scales.softcap_pre);
    }
    if (cls != core::TileClass::kFull) apply_mask(S, cS, spec, tile_row0, key0);
    if constexpr (Traits::kCustomMask) {
      if (custom) {
        if constexpr (!kBitsFirst) load_bits();
        apply_mask_bits(S, bits);
      }
    }
    return softmax.update(S, scales.scale_log2, correction);  // whether O needs the rescale
  };
  auto convert_p = [&] {
#pragma unroll
    for (int i = 0; i < size(tSrS); i += 2) *reinterpret_cast<uint32_t*>(&rP(i)) = pack2<Element>(tSrS(i), tSrS(i + 1));
  };

  pingpong_start<Traits>(slab);
  Trace trace(p);

  // A unit's geometry: its mask and the rows of this warpgroup's slab.
  struct Geometry {
    core::MaskSpec spec;
    int tile_row0, slab_begin, slab_end;  // rows past qo_len (slab_end) are never written
  };
  auto geometry = [&](const WorkItem& it) {
    Geometry g;
    // Constant masks fold their arithmetic away (tile_shapes.h MaskKind).
    g.spec = Traits::kMask == MaskKind::kKVLen    ? core::MaskSpec{it.qo_len, it.kv_len, false, -1}
             : Traits::kMask == MaskKind::kCausal ? core::MaskSpec{it.qo_len, it.kv_len, true, -1}
                                                  : core::MaskSpec{it.qo_len, it.kv_len, p.causal, p.window_left,
                                                                   p.window_right};
    g.tile_row0 = it.m_block * kBlockM;
    g.slab_begin = g.tile_row0 + slab * 64;
    g.slab_end = min(g.slab_begin + 64, it.qo_len);
    return g;
  };

  // Unit fusion (Traits::kFuseUnits): when the next unit is not empty, the last step of a
  // unit issues its last P V and the next unit's first Q K^T as one ping-pong turn, stores O
  // while that Q K^T runs, and the next unit starts "primed": its first S tile is already
  // in tSrS, O and the softmax state are reset. All warpgroups see the same units, so all
  // fuse at the same boundaries and take the same ping-pong turns.
  bool primed = false;
  RingPosition<Traits::kStages> v_ring;  // the V stage of the P in rP
  int round = 0, u = unit_of_round(0);
  Unit t;
  if (u < p.num_units) t = load_unit<kBlockM, kBlockN>(p, u);
  while (u < p.num_units) {
    const WorkItem& it = t.item;
    const Geometry g = geometry(it);
    auto classify = [&](int n) {
      return core::classify_tile(g.spec, g.slab_begin, g.slab_end, n * kBlockN, (n + 1) * kBlockN);
    };
    const int u_next = unit_of_round(round + 1);
    const bool has_next = u_next < p.num_units;
    if (tid == 0) prefetch_unit(p, u_next);  // read at this unit's end
    Unit next{};  // the next unit, once loaded (next_loaded)
    bool next_loaded = false;
    bool fuse = false;  // this unit's last step also starts the next one
    trace(kTrUnit);
    if (!primed) {
      if constexpr (kFreshPV) o_fresh = true;
      else clear(tOrO);
      softmax.reset();
    }

    if (!t.empty()) {
      // Tiles hidden from this warpgroup's rows are computed and fully masked here: the
      // pipeline and the ping-pong need all warpgroups to take the same steps.
      int n = it.n_end - 1;
      if (!primed) {
        const QSlot<Traits> q(q_round);
        q_buffer = q.buffer;
        ptx::mbar_wait(&s.q_full[q.buffer], q.parity);
        trace(kTrQReady);
        wait_full(&s.k_full[ring.stage], ring.phase);
        trace(kTrKVReady);
        issue_qk(ring.stage);
        trace(kTrIssued);
        warpgroup_wait<0>();
        trace(kTrSDone);
      }
      {  // S of tile n_end - 1 is complete (issued above or by the previous unit's last step)
        float correction[kRows];
        if (n == it.n_begin) warp_release(&s.q_empty[q_buffer]);
        warp_release(&s.k_empty[ring.stage]);
        (void)score(g.spec, classify(n), g.tile_row0, n * kBlockN, u, correction);  // O is 0: no rescale
        trace(kTrScored);
        convert_p();
        v_ring = ring;  // where P's V tile is
        ring.advance();
      }
      for (--n; n >= it.n_begin; --n) {
        float correction[kRows];
        if constexpr (kPaged) {
          // Both waits and one proxy fence before the GEMMs, so that nothing sits between
          // the two wgmma issues.
          ptx::mbar_wait(&s.k_full[ring.stage], ring.phase);
          wait_full(&s.v_full[v_ring.stage], v_ring.phase);
        } else {
          ptx::mbar_wait(&s.k_full[ring.stage], ring.phase);
        }
        trace(kTrKVReady);
        pingpong_wait<Traits>(slab);
        trace(kTrTurn);
        issue_qk(ring.stage);
        if constexpr (!kPaged) ptx::mbar_wait(&s.v_full[v_ring.stage], v_ring.phase);
        issue_pv(v_ring.stage);
        pingpong_pass<Traits>(slab);
        trace(kTrIssued);
        warpgroup_wait<1>();  // QK^T(n) done, PV(n+1) may still run
        trace(kTrSDone);
        if (n == it.n_begin) warp_release(&s.q_empty[q_buffer]);
        warp_release(&s.k_empty[ring.stage]);
        const bool moved = score(g.spec, classify(n), g.tile_row0, n * kBlockN, u, correction);
        // A clock read here would pin the P V wait below the softmax, which is not where
        // ptxas puts it in the ping-pong kernels (see the wait below): their timelines show
        // s_done -> pv_done instead.
        if constexpr (!Traits::kPingPong) trace(kTrScored);
        // PV(n+1) done: O and P are free. Without ping-pong (D = 256) the softmax is made to
        // run under that P V (wait_all_after). With it, the other warpgroup's GEMMs fill that
        // time, and ptxas's order (softmax after the wait) is faster (findings F10).
        if constexpr (Traits::kPingPong)
          warpgroup_wait<0>();
        else
          wait_all_after(softmax.row_sum[0]);
        trace(kTrPVDone);
        warpgroup_fence_operand(tOrO);
        warpgroup_fence_operand(rP);
        warp_release(&s.v_empty[v_ring.stage]);
        if (moved) softmax.rescale(O, correction);
        convert_p();
        v_ring = ring;
        ring.advance();
      }
      if constexpr (Traits::kFuseUnits) {
        // Loaded here rather than at the unit's start: holding it through the steps measured
        // 1.2% slower at S = 512 (ncu, D = 128 narrow).
        if (has_next) next = load_unit<kBlockM, kBlockN>(p, u_next);
        next_loaded = true;
        fuse = has_next && !next.empty();
      }
      if (fuse) {
        // PV(n_begin) of this unit and QK^T(first tile) of the next, one ping-pong turn.
        // The next unit's Q is in the other buffer (kQStages = 2), requested by the producer
        // at that unit's start, and its first K is the next ring stage.
        const QSlot<Traits> qn(q_round + 1);
        ptx::mbar_wait(&s.v_full[v_ring.stage], v_ring.phase);
        ptx::mbar_wait(&s.q_full[qn.buffer], qn.parity);
        wait_full(&s.k_full[ring.stage], ring.phase);  // one proxy fence covers V and K
        trace(kTrKVReady);
        pingpong_wait<Traits>(slab);
        trace(kTrTurn);
        issue_pv(v_ring.stage);
        q_buffer = qn.buffer;
        issue_qk(ring.stage);
        pingpong_pass<Traits>(slab);
        trace(kTrIssued);
        finish_rows();  // under the GEMMs
        warpgroup_wait<1>();  // PV(n_begin) done: O final; the next QK^T may still run
        trace(kTrPVDone);
        warpgroup_fence_operand(tOrO);
        warp_release(&s.v_empty[v_ring.stage]);
        store_rows<Element>(p, t, g.tile_row0, O, cO, fin, kHeadDim);
        trace(kTrStored);
        // The next unit starts from a fresh O and an empty softmax, with its first S tile.
        // All of it stays inside this branch: ptxas tracks in-flight wgmma per path, and
        // a path that could leave here with the QK^T in flight makes it insert waits
        // (C7517) or serialize every wgmma of the kernel (C7515).
        softmax.reset();
        o_fresh = true;
        warpgroup_wait<0>();
        trace(kTrSDone);
        warpgroup_fence_operand(tSrS);
      } else {
        wait_full(&s.v_full[v_ring.stage], v_ring.phase);
        trace(kTrKVReady);
        issue_pv(v_ring.stage);
        trace(kTrIssued);
        // Under the last P V: the row sums' shuffles and the next unit's load.
        finish_rows();
        if (!next_loaded && has_next) next = load_unit<kBlockM, kBlockN>(p, u_next);
        next_loaded = true;
        warpgroup_wait<0>();
        trace(kTrPVDone);
        warpgroup_fence_operand(tOrO);
        warp_release(&s.v_empty[v_ring.stage]);
      }
      ++q_round;
    }
    if (!fuse) {  // else stored above
      if (t.empty()) finish_rows();  // else done under the unit's last P V
      store_rows<Element>(p, t, g.tile_row0, O, cO, fin, kHeadDim);
      trace(kTrStored);
    }
    primed = fuse;
    u = u_next;
    ++round;
    if (has_next) t = next_loaded ? next : load_unit<kBlockM, kBlockN>(p, u);
  }
  trace.finish();
}

}  // namespace flashband::sm90
