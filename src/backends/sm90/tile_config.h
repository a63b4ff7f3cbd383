// Tile sizes of the sm90 prefill kernel, per head dim. Host code (planner, workspace sizing)
// and the kernel read the same numbers from here.
//
// Why these sizes (bf16/fp16, H200: 227 KB of shared memory and 64K registers per SM, one CTA
// per SM):
// - kBlockM: one consumer warpgroup per 64 query rows (wgmma's M is 64 per warpgroup), two
//   (128) or three (192). Each consumer holds S (64 x kBlockN) and O (64 x D) in float32
//   registers. Three consumers get 160 registers a thread (kernel_traits.h): enough for D =
//   64 only (S 64 + P 32 + O 32). D = 64's GEMMs are short, about as long as a tile's
//   softmax, so with two warpgroups the tensor cores wait whenever a softmax runs long; with
//   three, two softmaxes run under the third's GEMMs (as in FlashAttention-3). D = 64 takes
//   three in its wide tile (kWide below, contiguous and paged): measured with three for every
//   D = 64 kernel (seventh session, ncu, bf16), 16k 6.02 -> 5.34 ms, 2k 830 -> 781 us, page
//   16 992 -> 884 us, 512 275 -> 275 us, but 2k causal 498 -> 517 us (a 192-row diagonal
//   tile wastes more of its pairs, and there are fewer units to balance), so masked
//   problems take it only where its schedule finishes first (kWideMaskedStepCost below).
// - kBlockN: the widest KV tile whose S and O accumulators still fit the registers a
//   consumer thread gets after setmaxnreg (240 with two consumers): D=64 -> 128 (S 64 + O 32
//   regs), D=128 -> 128 (S 64 + O 64), D=256 -> 64 (S 32 + O 128). The narrow tiles use only
//   wgmma N values that CUTLASS compiles without its "extended shapes" switch (multiples of
//   64), to keep compile time down; the wide ones (176, 80) switch it on in their own files.
// - kStages: as many K+V stages as shared memory holds next to Q (kBlockM x D):
//   D=64: 2 x 16 KB + 3 x 32 KB (192 rows: 2 x 24 KB + 3 x 32 KB; a fourth stage would fit,
//   not measured); D=128: 32 KB + 2 x 64 KB; D=256: 64 KB + 2 x 64 KB.
// - kQStages: Q buffers. With two, the next work unit's Q loads while the current unit runs
//   (one buffer is free from the current unit's start), so no unit waits on its Q load; that
//   wait is a fixed cost per unit, large next to short units (S = 512: 4 KV steps). Where two
//   do not fit (D = 256; D = 128 wide, 32 KB + 2 x 88 KB) one buffer is loaded once the
//   previous unit's last Q K^T has been issued.
// - The mainloop always overlaps: each consumer issues QK^T of tile n before the softmax of
//   tile n+1 finishes its PV, so the tensor cores work while the warpgroup does exponentials
//   (costs a second S accumulator's worth of registers: P stays live across the QK^T).
//   Whether a softmax runs under its own warpgroup's P V differs with kPingPong (consumer.h).
// - kPingPong: the consumer warpgroups take turns issuing their GEMMs (named barriers, a ring
//   of two or three), so one warpgroup's softmax runs under another's GEMMs. It pays where
//   softmax is a large share of the tile (D <= 128); at D = 256 the GEMMs dominate
//   (measured, fifth session, ncu: 16k -1.5%, 2k causal -0.5%, 512 +2% time with it).
// - kFuseUnits: at a unit boundary each consumer issues the last P V of the unit and the
//   first Q K^T of the next one as one ping-pong step, and stores O while that Q K^T runs,
//   so the boundary costs about one KV step instead of a drained pipeline (consumer.h).
//   It needs the next unit's Q to have landed by then: with one Q buffer that Q is loaded
//   only after the unit's last Q K^T, so the fused step would wait for it; off there.
#pragma once
#include <cstdint>

#include "core/hd.h"

namespace flashband::sm90 {

// kWide: the tile of contiguous K/V: for problems without a causal / window mask or a soft cap
// (registry keys needs_mask = soft_cap = false; "masked" in this file includes a soft cap,
// takes_runtime_mask_kernels; at D = 128 unless narrow_unmasked_pays below), where the only
// partial tile is at kv_len's end, and for masked problems too at D = 256, at D = 128 for
// long requests (not under a causal window), and, where its schedule pays, at D = 64
// (kWideMasked, kWideMaskedMinRows, kWideMaskedStepCost below); at
// D = 256 only from kWideContiguousMinLength (below), masked or not. At D = 128 and 256 it is a wider KV tile:
// wider S tiles amortise the per-step costs (row max / sum shuffles, O rescale, barriers) over
// more columns, and make the Q K^T wgmma (both operands in shared memory) re-read its A
// operand less often per FLOP. At D = 64 it is a taller query tile instead (192 rows, three
// consumers; see kBlockM above). Under a causal mask the diagonal tiles' waste grows with the
// tile (D = 128 and D = 64 keep the narrow tile for short requests). Paged K/V takes the
// wide tile at D = 64 (128 keys, so TMA pages hold whole tiles), at D = 256 on gathered pages
// for problems of 2048 rows or keys and up, and at D = 128 on gathered pages for problems
// without a mask of 2048 keys and up (kWidePaged, kWidePagedMasked, kWidePagedMinLength
// below: 80 and 176 rows straddle TMA pages).
// N = 176 is not among CUTLASS's default wgmma shapes: its kernels are compiled with
// CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED (kernels/*_wide.cu), and KernelTraits checks the atom.
template <int kHeadDim, bool kWide = false>
struct TileConfig;

template <>
struct TileConfig<64, false> {
  static constexpr int kBlockM = 128, kBlockN = 128, kStages = 3, kQStages = 2;
  static constexpr bool kPingPong = true, kFuseUnits = true;
};
template <>
struct TileConfig<128, false> {
  static constexpr int kBlockM = 128, kBlockN = 128, kStages = 2, kQStages = 2;
  static constexpr bool kPingPong = true, kFuseUnits = true;
};
template <>
struct TileConfig<256, false> {
  static constexpr int kBlockM = 128, kBlockN = 64, kStages = 2, kQStages = 1;
  static constexpr bool kPingPong = false, kFuseUnits = false;
};
// Wide: D=64 192 x 128 (three consumers, 160 registers each); D=128 S 88 + P 44 + O 64
// regs, 32 KB + 2 x 88 KB. D = 64 keeps 128 keys: a 192-key tile (S 96 + P 48 regs, two
// consumers) measured slower than 128 on the H200 at every length (0.75-0.94 of cuDNN
// against 0.84-1.01 in the same runs), its exponentials already bound the step.
template <>
struct TileConfig<64, true> {
  static constexpr int kBlockM = 192, kBlockN = 128, kStages = 3, kQStages = 2;
  static constexpr bool kPingPong = true, kFuseUnits = true;
};
template <>
struct TileConfig<128, true> {
  static constexpr int kBlockM = 128, kBlockN = 176, kStages = 2, kQStages = 1;
  static constexpr bool kPingPong = true, kFuseUnits = false;
};
// D = 256 wide: 80 keys (S 40 + P 20 + O 128 regs), 64 KB + 2 x 80 KB = 224 KB, which
// leaves room for two 80-row paged row tables and no page tables (shared_storage.h). The
// per-step costs spread over 1.25x the columns of the 64-key tile (FlashAttention-3 uses
// 80 at D = 256 too).
template <>
struct TileConfig<256, true> {
  static constexpr int kBlockM = 128, kBlockN = 80, kStages = 2, kQStages = 1;
  static constexpr bool kPingPong = false, kFuseUnits = false;
};

// The one rule that picks the variant (use_wide_tiles below): register.cpp registers the
// kernels it needs per key (and, where it depends on the shape, a launch that follows the
// plan's tile), and the planner builds its work list with the tile it picks.
// A head dim whose wide tile equals the narrow one has no wide kernel.
template <int kHeadDim>
constexpr bool kHasWide = TileConfig<kHeadDim, true>::kBlockN != TileConfig<kHeadDim, false>::kBlockN ||
                          TileConfig<kHeadDim, true>::kBlockM != TileConfig<kHeadDim, false>::kBlockM;

// Head dims whose wide tile also serves causal / window problems: the wide kernel then
// compiles the full mask, not just kv_len's end.
template <int kHeadDim>
constexpr bool kWideMasked = false;
// D = 256 (sixth session, ncu): 80 keys under a causal mask cut 16k 1.78 -> 1.65 ms and 2k
// 313 -> 307 us.
template <>
constexpr bool kWideMasked<256> = true;
// D = 128's 176 keys for long requests only (kWideMaskedMinRows): at 2k causal they lost
// (sixth session, 340 -> 377 us: one Q buffer, no unit fusion, 128 B of spills with the
// mask). Forty-eighth session (ncu, bf16, B x S = 16k, 16 heads, narrow -> wide): 16k causal
// 2.01 -> 1.89 ms (the causal-only 176-key kernel, no spills, against the narrow
// runtime-mask one past kCausalKernelMaxRows), 8k causal 1.03 -> 1.00 ms, non-causal W =
// 1024 16k 2.38 -> 2.27 ms and 8k 1.29 -> 1.26 ms (the runtime-mask kernel, 96 bytes of
// spills), but causal W = 4096 927 -> 933 us and W = 1024 324 -> 376 us: a causal window's
// band of W + 128 keys fills whole 176-key tiles with more waste than 128-key ones, so
// causal windows keep the narrow tile (kWideMaskedCausalWindows).
template <>
constexpr bool kWideMasked<128> = true;
// Whether a head dim's masked wide tile also takes causal problems with a window.
template <int kHeadDim>
constexpr bool kWideMaskedCausalWindows = true;
template <>
constexpr bool kWideMaskedCausalWindows<128> = false;
FB_HD constexpr bool wide_masked_takes_causal_windows(int head_dim) {
  return head_dim == 128 ? kWideMaskedCausalWindows<128> : true;
}
// D = 64 (eighth session, ncu, bf16, 16k tokens, 32 heads): the 192-row tile under a causal
// mask, 16k 2.99 -> 2.81 ms (paged, pages of 16: 3.60 -> 3.10), 8k 1.57 -> 1.48 ms, but 4k
// 847 -> 854 us, 2k 502 -> 516 us and 512 216 -> 255 us; at 16k causal W = 4096 1.40 ->
// 1.32 ms, W = 1024 515 -> 511 us. So masked problems take it by length only.
template <>
constexpr bool kWideMasked<64> = true;

// Every wide tile's kernel for problems without a mask has the mask folded away
// (MaskKind::kKVLen). Measured against the mask compiled in: D = 64 (eighth session, ncu,
// bf16) 16k 5.20 -> 5.32 ms, 2k page 16 846 -> 859 us, 512 257 -> 267 us; D = 256
// (sixteenth, ptxas, bf16) spills 40 / 52 -> 20 / 24 bytes, the main loop 3666 -> 3419
// instructions with 18 -> 8 local accesses.

// Narrow tiles with a kernel without masks of their own, for the keys without a mask that no
// wide tile serves: D = 128 (TMA pages, gathered pages under kWidePagedMinLength, and
// contiguous K/V where narrow_unmasked_pays) and D = 256 (TMA pages, gathered pages under
// kWidePagedMinLength, contiguous K/V under kWideContiguousMinLength).
// Elsewhere a narrow tile serves masked (or soft-capped) keys only. Seventeenth session
// (ncu, bf16, against the masked kernel): D = 128 2k page 1 -3.1%, 16k page 16 -1.3%, page
// 128 -1.7 / -1.9%. Contiguous D = 128 short keys ran the runtime-mask kernel, with the
// soft cap's code, from the twenty-eighth session to the thirty-third; their own kernel
// measured 512 -1.3%, 768 -1.0%, 896 -1.6% (thirty-fourth session, ncu, bf16), and 1000
// keys, which take the 176-key tile under both, +0.2%. kPaged no longer decides; it keeps
// the call sites' shape, as has_causal_kernel's parameter does.
template <int kHeadDim, bool kPaged>
constexpr bool kNarrowFoldsMask = kHeadDim == 128 || kHeadDim == 256;

// The masks a kernel computes. kKVLen: only kv_len's end (problems without a causal /
// window mask or soft cap); kCausal: bottom-right causal without a
// window, the window arithmetic folded away; kAny: causal and / or window, read at run time.
// make_kernel_params refuses a problem a kernel's kind cannot mask.
enum class MaskKind { kKVLen, kCausal, kAny };

// Only the runtime-mask kernels (kAny) compile the soft cap: its tanh is ~390 instructions
// in each of a kernel's two softmax bodies, code that the problems of the other kernels
// never run but that costs them anyway (the causal-only D = 64 kernel: 512 causal -5.4%
// without it, twenty-seventh session, ncu). A soft-capped problem therefore takes the
// kernels with the runtime mask, on the tile a masked problem of its length takes
// (takes_runtime_mask_kernels; the causal-only kernels are for problems without a soft
// cap: use_causal_kernel). make_kernel_params refuses a soft cap elsewhere.
FB_HD constexpr bool compiles_soft_cap(MaskKind mask) { return mask == MaskKind::kAny; }
FB_HD constexpr bool takes_runtime_mask_kernels(bool needs_mask, bool soft_cap) { return needs_mask || soft_cap; }

// Paged K/V: pages of a power-of-two size at least this large are loaded by TMA, one box
// per page and 64 columns, each box issued by its own producer thread; smaller pages are
// gathered row by row with cp.async by the whole producer warpgroup. Measured on the H200
// (D = 128, bf16, S = 16k, share of the ragged rate): pages of 128 by TMA 0.89-1.02; pages
// of 16 by TMA 0.65 (one issuing thread) and 0.78 (a thread per box) against 0.79-0.86 for
// the gather, so 16-row boxes stay on the gather. Against the 4-thread gather (fifth
// session, ncu, S = 16k): page 16 by TMA 6.02 ms, gathered 4.70 ms.
constexpr int kMinTmaPageSize = 64;

// Whether a paged launch loads full tiles as TMA boxes (kernel_args.cpp); other pages are
// gathered with cp.async.
FB_HD constexpr bool pages_by_tma(int64_t page_size) {
  return page_size >= kMinTmaPageSize && (page_size & (page_size - 1)) == 0;
}

// Tiles with a causal-only kernel next to the kAny one (kernels/*_causal.cu): the narrow
// tiles of D = 64, 128 and 256, contiguous and paged, and the masked wide tiles (D = 64's
// 192 rows and D = 256's 80 keys, contiguous and paged; D = 128's 176 keys, contiguous).
// The plan picks it
// (use_causal_kernel below) for causal problems without a window or soft cap whose typical
// request has at most causal_kernel_max_rows() query rows on a narrow tile (gathered pages
// at any length), at any length on a wide one (D = 64's where kWideMaskedStepCost says);
// the launch follows the plan
// (register.cpp launch_masked). Measured (sixteenth session, ncu, bf16, B x S = 16k; contiguous
// first with the mask of every masked kernel fixed to causal, then with these kernels): D = 128
// 512 causal 146.7 -> 140.8 and 149.0 -> 141.4 us, 2k 339.7 -> 331.6 and 340.5 -> 338.4 us, but
// 4k 586.4 -> 594.6 us and 16k 2.00 -> 2.02 and 2.03 -> 2.08 ms; D = 64 512 227.0 -> 216.7 us,
// 2k 512.1 -> 495.3 and 516.6 -> 503.3 us (its longer requests take the wide tile); D =
// 256's 80-key tile 303.4 -> 303.3 us at 2k (both with the soft cap's code), so it had none
// then. Paged, D = 128 2k causal: pages of 16 386.4 -> 382.4 us, 1 387.3 -> 385.0, 128 364.2 ->
// 351.5; 512 page 16 164.6 -> 159.6; D = 64 2k page 16 560.2 -> 556.9.
// Why the wide tiles have one (prepared in the twenty-eighth session): D = 64's narrow one
// gained 3-5% from the window's arithmetic folded away and 5.4% more from the soft cap's
// code left out, and 8k and 16k causal at D = 64 run the 192-row runtime-mask kernel,
// which carries both (SASS: 4504 -> 3448 lines without them); D = 256's 80-key kernel
// spills 20 / 36 bytes with them and 8 / 16 without (its 512 causal is sm90's lowest row
// against cuDNN). Measured (twenty-ninth session, ncu, knob 0 against the kernels):
// D = 64 8k causal 1.47 -> 1.42 ms, 16k causal 2.83 -> 2.76, 16k causal page 16 3.05 ->
// 2.95; D = 256 512 causal 135.5 -> 129.7 us, 2k causal 293.4 -> 282.8, 16k causal 1.64 ->
// 1.63 ms. Paged D = 256's narrow tile the same way (its SASS 5872 -> 5272 lines, spills
// unchanged at 20 bytes): 512 causal page 16 133.5 -> 126.3 us, 2k causal page 16 310.6 ->
// 306.1, page 128 296.1 -> 289.2, 8k causal page 16 968.9 -> 966.0.
// Contiguous and paged K/V have the same tiles with one, except paged D = 128's 176-key
// tile, which takes no masked problem (kWidePagedMasked).
FB_HD constexpr bool has_causal_kernel(int head_dim, bool paged, bool wide) {
  return (head_dim == 64 || head_dim == 128 || head_dim == 256) && !(head_dim == 128 && paged && wide);
}
template <int kHeadDim, bool kPaged, bool kWide>
constexpr bool kCausalKernel = has_causal_kernel(kHeadDim, kPaged, kWide);
// The limit was 2048 while these kernels carried the soft cap's code (sixteenth session:
// 4k and 16k lost); without it (twenty-eighth session, same probes, limit lifted against
// 2048) D = 128 4k causal 567.1 -> 545.6 us, 8k 1.06 -> 1.03 ms, D = 64 4k 855.7 -> 828.2
// us, but 16k 2.03 -> 2.07 ms. Long D = 64 requests mostly take the 192-row tile
// (wide_masked_pays), but not all (a single request over few heads: 16k rows x 1 head), so
// this limit reaches D = 64 beside D = 128 and paged D = 256. It is a limit
// for the narrow tiles on contiguous K/V and TMA pages: the wide tiles' causal-only kernels
// have none, and neither do gathered pages (thirtieth session, ncu, S = 16k causal, limit
// 8192 against lifted: D = 128 page 16 2.24 -> 2.18 ms, D = 256 page 16 1.90 -> 1.88, but
// D = 256 TMA pages of 128 1.71 -> 1.73).
constexpr int64_t kCausalKernelMaxRows = 8192;

// kCausalKernelMaxRows, or FLASHBAND_SM90_CAUSAL_MAX_ROWS where set (0: never, on every
// tile): a knob for measuring the two kernels against each other on one build; results do
// not depend on it.
// Read once; a value that is not a non-negative integer fails the plan by name.
int64_t causal_kernel_max_rows();
// The parse behind it: the setting's text (nullptr: unset) -> the limit.
int64_t parse_causal_kernel_max_rows(const char* env);

// window_left normalised (a window that hides nothing is -1); soft_cap: logits_soft_cap > 0;
// gathered: paged K/V whose pages are not pages_by_tma; request_rows as for use_wide_tiles;
// max_rows: causal_kernel_max_rows() (0 turns the kernels off everywhere). The causal-only
// kernels compile without the soft cap (its tanh takes ~390 instructions in each of the
// kernel's two softmax bodies), so a soft-capped problem keeps the runtime-mask kernel.
FB_HD constexpr bool use_causal_kernel(int head_dim, bool paged, bool gathered, bool wide, bool causal,
                                       int window_left, bool soft_cap, int64_t request_rows, int64_t max_rows) {
  return has_causal_kernel(head_dim, paged, wide) && causal && window_left < 0 && !soft_cap && max_rows > 0 &&
         (wide || gathered || request_rows <= max_rows);
}

// Masked problems take a kWideMasked tile only when the typical request has at least this
// many query rows (typical_request_rows below): the taller tile's diagonal waste and
// its fewer units cost short requests more than its softmax overlap gains.
// D = 64: 6144 from the eighth session (runtime-mask kernels on both tiles: 2k causal 502 ->
// 516 us, 4k 848 -> 854); with causal-only kernels on both tiles since (sixteenth and
// twenty-ninth sessions) the 192-row one measured 2k causal 451.0 -> 451.8 us and 4k causal
// 818.6 -> 789.2 (-3.6%) (thirty-fourth session, ncu, bf16, B x S = 16k, H = 32). 4096
// since the thirty-fifth: 4k causal 816.7 -> 798.4 us, 4k causal page 16 885.1 -> 862.7,
// 5k causal 945.9 -> 896.3, 4k causal W = 1023 464.8 -> 462.1 (2k causal, unchanged,
// 459.2 / 462.0). 3072 since the thirty-sixth: 3k causal 601.0 -> 542.6 us, 3k causal page
// 16 649.8 -> 579.3, 3.5k causal 664.6 -> 621.9. From 2048 it measured level (2k causal
// 463.6 -> 465.2, 2.5k 521.9 -> 516.4, 2k page 16 505.1 -> 495.9).
// Those ratios (wide / narrow: 2k 1.00, 2.5k 0.99, 3k 0.90, 3.5k 0.94, 4k 0.98, 5k 0.95,
// 4k W = 1023 0.99) follow the two tiles' planned makespans (work_list.h) within 2.6%
// when the 192-row tile's KV step costs 1.32 of the 128-row one's, so from 1024 rows the
// plan weighs the two schedules (wide_masked_pays, kWideMaskedStepCost); below, where every
// measurement and the model favour the 128-row tile, it does not.
template <int kHeadDim>
constexpr int64_t kWideMaskedMinRows = 0;
template <>
constexpr int64_t kWideMaskedMinRows<64> = 1024;
// D = 128: where the narrow tile's causal-only kernel ends (kCausalKernelMaxRows); the
// forty-eighth session measured 8k and 16k only.
template <>
constexpr int64_t kWideMaskedMinRows<128> = kCausalKernelMaxRows;
// The wide tile's KV step in thousandths of the narrow tile's, for the head dims whose
// masked problems choose by makespan (0: by kWideMaskedMinRows alone). Fitted to the seven
// ratios above (thirty-sixth session): 1.5 rows a step over a 1.136 gain per row.
template <int kHeadDim>
constexpr int kWideMaskedStepCost = 0;
template <>
constexpr int kWideMaskedStepCost<64> = 1320;
FB_HD constexpr int wide_masked_step_cost(int head_dim) {
  return head_dim == 64 ? kWideMaskedStepCost<64> : head_dim == 128 ? kWideMaskedStepCost<128>
       : head_dim == 256 ? kWideMaskedStepCost<256> : 0;
}

// Problems without a mask at contiguous D = 128: the 176-key tile (one Q buffer, no unit
// fusion) or the narrow fused one (two Q buffers; its kernel without masks,
// kNarrowFoldsMask; the runtime-mask one when the cost was fitted), whichever a cost per
// unit says is cheaper for the typical request's keys (typical_request_keys). The cost, in
// the narrow tile's time per key: a unit's boundary plus its KV tiles, each whole, 172 +
// 128 a tile on the narrow tile and 225 + 157 a tile on the wide one (176 keys at 0.89 of
// the narrow cost per key). Fitted to ncu (twenty-seventh
// session, bf16, B x S = 16k, H = 16, non-causal, wide -> narrow): 512 keys 176.3
// -> 174.3 us, 768 253.8 -> 236.4, 1000 294.9 -> 303.8. Whole tiles make the choice switch
// back and forth below 1024 keys (768 fills six narrow tiles and four and a third wide
// ones); from kNarrowUnmaskedMaxKeys, beyond what was measured, the wide tile stays.
// The rule against the wide tile alone (twenty-eighth session, same probes): 512 178.2 ->
// 177.8 us, 640 218.1 -> 207.4, 768 255.9 -> 238.2, 896 296.7 -> 266.9; 704 and 1000, wide
// under both, level.
template <int kHeadDim>
constexpr bool kNarrowUnmaskedByCost = false;
template <>
constexpr bool kNarrowUnmaskedByCost<128> = true;
constexpr int64_t kNarrowUnmaskedMaxKeys = 1024;

template <int kHeadDim>
FB_HD constexpr bool narrow_unmasked_pays(int64_t keys) {
  if (!kNarrowUnmaskedByCost<kHeadDim> || keys >= kNarrowUnmaskedMaxKeys) return false;
  constexpr int64_t narrow_n = TileConfig<kHeadDim, false>::kBlockN, wide_n = TileConfig<kHeadDim, true>::kBlockN;
  const int64_t narrow = 172 + 128 * ((keys + narrow_n - 1) / narrow_n);
  const int64_t wide = 225 + 157 * ((keys + wide_n - 1) / wide_n);
  return narrow < wide;
}
// wide_tiles_by_shape tells a key whose tile depends on the problem by lengths 0 and
// INT64_MAX: the rule must pick the narrow tile at the one and the wide at the other.
static_assert(narrow_unmasked_pays<128>(0) && !narrow_unmasked_pays<128>(kNarrowUnmaskedMaxKeys));

// Head dims whose wide tile also serves paged K/V: a tile with room left for the paged row
// tables (a producer thread resolves one KV row of a tile, or two past 128 keys).
// D = 64 (192 x 128, 146 KB + 7.5 KB of tables), measured against the 128-row tile
// (seventh session, ncu, bf16, non-causal): 2k page 16 974 -> 861 us, page 1 988 -> 859,
// page 128 939 -> 814; 16k page 16 7.20 -> 6.00 ms; 512 page 16 321 -> 296 us.
// D = 256's 80-key tile on gathered pages only (kWidePagedGatherOnly): its 224 KB of Q, K
// and V leave room for two row tables of 80 rows and no page tables, and 80-row tiles
// straddle TMA pages (a box never crosses a page), so pages_by_tma keep the 64-key tile.
// D = 128's 176-key tile the same way, on gathered pages only (176 rows straddle TMA pages
// too), and for keys without a mask or soft cap only (kWidePagedMasked); its producer
// resolves two rows per thread (producer.h), and its consumers get 232 registers, not the
// contiguous kernel's 240 (kernel_traits.h).
template <int kHeadDim>
constexpr bool kWidePaged = false;
template <>
constexpr bool kWidePaged<64> = true;
template <>
constexpr bool kWidePaged<128> = true;
template <>
constexpr bool kWidePaged<256> = true;
template <int kHeadDim>
constexpr bool kWidePagedGatherOnly = false;
template <>
constexpr bool kWidePagedGatherOnly<128> = true;
template <>
constexpr bool kWidePagedGatherOnly<256> = true;
// Whether a head dim's masked problems (kWideMasked) take its wide tile on paged K/V too.
// D = 128 (fiftieth session, ncu, bf16, B x S = 16k, H = 16, 176-key -> 128-key, both with
// causal-only kernels): 16k causal page 16 2.17 -> 2.16 ms, page 1 2.21 -> 2.17. The
// narrow tile's causal-only kernel has no row limit on gathered pages, so the contiguous
// tile's gain there (the 176-key causal-only kernel against the narrow runtime-mask one)
// has no counterpart.
template <int kHeadDim>
constexpr bool kWidePagedMasked = true;
template <>
constexpr bool kWidePagedMasked<128> = false;
// Whether masked problems on this storage may take the head dim's wide tile: the rule
// (use_wide_tiles_of) and the registry's kernel list (register.cpp) both read it, and every
// such tile has a causal-only kernel (has_causal_kernel).
template <int kHeadDim>
FB_HD constexpr bool wide_takes_masked(bool paged) {
  return kWideMasked<kHeadDim> && (!paged || kWidePagedMasked<kHeadDim>);
}
static_assert(has_causal_kernel(128, true, true) == wide_takes_masked<128>(true) &&
              has_causal_kernel(128, false, true) == wide_takes_masked<128>(false));
// Whether a tile's paged kernels have no TMA page path (and no page tables).
template <int kHeadDim, bool kWide>
constexpr bool kPagedGatherOnly = kWide && kWidePagedGatherOnly<kHeadDim>;
// Paged problems take the wide tile only from this rule length (tile_rule_length: the
// typical request's query rows under a mask, its keys without one). D = 256's 80-key
// tile on gathered pages against the 64-key one (thirty-first session, ncu, bf16, B x S =
// 16k, H = 16): 512 causal page 16 128.5 -> 132.4 us, page 1 127.9 -> 136.9; 512
// non-causal page 16 169.1 -> 172.6; 1024 causal page 1 187.4 -> 202.9; 2048 causal page
// 1 306.5 -> 302.8, page 16 305.9 -> 301.7; 2048 non-causal page 16 502.6 -> 500.6; 4096
// causal page 16 517.3 -> 498.7; 16k causal page 16 1.83 -> 1.75 ms, page 1 1.85 ->
// 1.77; 16k non-causal page 16 3.61 -> 3.51.
template <int kHeadDim>
constexpr int64_t kWidePagedMinLength = 0;
template <>
constexpr int64_t kWidePagedMinLength<256> = 2048;
// D = 128's 176-key tile on pages of 16 without a mask (fiftieth session, ncu, bf16,
// B x S = 16k, H = 16, 176-key -> 128-key): 1024 keys 344.2 -> 320.7 us, 2048 595.6 ->
// 599.8, 16k 4.25 -> 4.40 ms.
template <>
constexpr int64_t kWidePagedMinLength<128> = 2048;
// Contiguous K/V the same way: D = 256's 80-key tile from this length, the 64-key one
// below it (a 512-key unit fills 6.4 tiles of 80 and 8 of 64). Measured (thirty-second
// session, ncu, bf16, B x S = 16k, H = 16, 80-key -> 64-key): 512 164.3 -> 151.1 us, 512
// causal 130.7 -> 119.8, 1024 255.6 -> 252.2, 1024 causal 194.1 -> 173.4, 2048 454.4 ->
// 449.8, 2048 causal 277.3 -> 274.6: the 64-key tile wins at every length measured (4096
// and up were not; from there the 80-key tile stays, as it measured faster at 16k when it
// was introduced, sixth session: 3.91 -> 3.53 ms).
template <int kHeadDim>
constexpr int64_t kWideContiguousMinLength = 0;
template <>
constexpr int64_t kWideContiguousMinLength<256> = 4096;

// masked: takes_runtime_mask_kernels (a causal / window mask or a soft cap); tma_pages:
// paged K/V whose pages are pages_by_tma; length: the problem's tile_rule_length (below):
// the typical request's query rows for a masked problem, its keys for an unmasked one.
template <int kHeadDim>
FB_HD constexpr bool use_wide_tiles_of(bool masked, bool paged, bool tma_pages, int64_t length) {
  return kHasWide<kHeadDim> &&
         (paged ? kWidePaged<kHeadDim> && !(tma_pages && kWidePagedGatherOnly<kHeadDim>) &&
                      length >= kWidePagedMinLength<kHeadDim>
                : length >= kWideContiguousMinLength<kHeadDim>) &&
         (masked ? wide_takes_masked<kHeadDim>(paged) && length >= kWideMaskedMinRows<kHeadDim>
                 : !narrow_unmasked_pays<kHeadDim>(length));
}

FB_HD constexpr bool use_wide_tiles(int head_dim, bool masked, bool paged, bool tma_pages, int64_t length) {
  return head_dim == 64    ? use_wide_tiles_of<64>(masked, paged, tma_pages, length)
         : head_dim == 128 ? use_wide_tiles_of<128>(masked, paged, tma_pages, length)
         : head_dim == 256 ? use_wide_tiles_of<256>(masked, paged, tma_pages, length)
                           : false;
}

// Whether the tile of a registry key (head dim, masked, storage) depends on the problem's
// shape (its lengths, and for paged K/V its page size): its launch then runs whichever
// kernel the plan's tile names (register.cpp).
FB_HD constexpr bool wide_tiles_by_shape(int head_dim, bool masked, bool paged) {
  const bool first = use_wide_tiles(head_dim, masked, paged, false, 0);
  for (int i = 1; i < 4; ++i)  // gathered / TMA pages x the shortest / longest problem
    if (use_wide_tiles(head_dim, masked, paged, paged && (i & 1) != 0, (i & 2) != 0 ? INT64_MAX : 0) != first)
      return true;
  return false;
}

// The query rows (tokens; each query head is its own unit) of the request a typical query
// row belongs to: sum(rows^2) / sum(rows) over the requests, so one long request among
// short ones counts as long, as its work does. 0 for a problem without query rows.
inline int64_t typical_request_rows(const int32_t* qo_indptr, int batch) {
  double sum = 0, sum_sq = 0;
  for (int b = 0; b < batch; ++b) {
    const double rows = static_cast<double>(qo_indptr[b + 1] - qo_indptr[b]);
    sum += rows;
    sum_sq += rows * rows;
  }
  return sum > 0 ? static_cast<int64_t>(sum_sq / sum) : 0;
}

// The keys a typical query row sees: sum(rows x keys) / sum(rows) over the requests (a unit's
// KV steps follow its request's keys, and a short query over a long cache has long units).
// 0 for a problem without query rows.
inline int64_t typical_request_keys(const int32_t* qo_indptr, const int32_t* kv_lens, int batch) {
  double sum = 0, sum_keys = 0;
  for (int b = 0; b < batch; ++b) {
    const double rows = static_cast<double>(qo_indptr[b + 1] - qo_indptr[b]);
    sum += rows;
    sum_keys += rows * static_cast<double>(kv_lens[b]);
  }
  return sum > 0 ? static_cast<int64_t>(sum_keys / sum) : 0;
}

// The length use_wide_tiles decides a problem's tile by.
inline int64_t tile_rule_length(bool masked, const int32_t* qo_indptr, const int32_t* kv_lens, int batch) {
  return masked ? typical_request_rows(qo_indptr, batch) : typical_request_keys(qo_indptr, kv_lens, batch);
}

struct TileShape {
  int block_m = 0;
  int block_n = 0;
};

template <int kHeadDim, bool kWide>
FB_HD constexpr TileShape tile_shape_of() {
  return {TileConfig<kHeadDim, kWide>::kBlockM, TileConfig<kHeadDim, kWide>::kBlockN};
}

// The tile shape for a runtime head dim and variant; {0, 0} when the head dim is not compiled.
FB_HD constexpr TileShape tile_shape(int head_dim, bool wide = false) {
  return head_dim == 64    ? (wide ? tile_shape_of<64, true>() : tile_shape_of<64, false>())
         : head_dim == 128 ? (wide ? tile_shape_of<128, true>() : tile_shape_of<128, false>())
         : head_dim == 256 ? (wide ? tile_shape_of<256, true>() : tile_shape_of<256, false>())
                           : TileShape{0, 0};
}

// The head dims this backend compiles, for registration and error messages.
constexpr int kHeadDims[] = {64, 128, 256};

}  // namespace flashband::sm90
