// The named forms by which each kernels/*.cu file instantiates one kernel: each expands to
// FLASHBAND_SM90_INSTANTIATE(DTYPE, HEAD_DIM, PAGED, WIDE, MASK), which the includer
// defines (launch_prefill.cuh: an explicit instantiation of launch_prefill; the dispatch
// test: a stub's, and a row of the list of compiled kernels). No include guard: a file may
// include it again after redefining FLASHBAND_SM90_INSTANTIATE.
#define FLASHBAND_SM90_PREFILL(DTYPE, HEAD_DIM, PAGED) \
  FLASHBAND_SM90_INSTANTIATE(DTYPE, HEAD_DIM, PAGED, false, kAny)
// The narrow tile compiled without masks (kNarrowFoldsMask).
#define FLASHBAND_SM90_PREFILL_UNMASKED(DTYPE, HEAD_DIM, PAGED) \
  FLASHBAND_SM90_INSTANTIATE(DTYPE, HEAD_DIM, PAGED, false, kKVLen)
// The narrow tile compiled for causal problems without a window or soft cap (kCausalKernel).
#define FLASHBAND_SM90_PREFILL_CAUSAL(DTYPE, HEAD_DIM, PAGED) \
  FLASHBAND_SM90_INSTANTIATE(DTYPE, HEAD_DIM, PAGED, false, kCausal)
// The wide-tile variants (contiguous K/V, and paged where kWidePaged): with the causal /
// window mask (where kWideMasked), and without it (every wide tile). Where its wgmma N
// is not a default shape (176, 80), its file defines CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED
// before any include.
#define FLASHBAND_SM90_PREFILL_WIDE(DTYPE, HEAD_DIM, PAGED) \
  FLASHBAND_SM90_INSTANTIATE(DTYPE, HEAD_DIM, PAGED, true, kAny)
#define FLASHBAND_SM90_PREFILL_WIDE_UNMASKED(DTYPE, HEAD_DIM, PAGED) \
  FLASHBAND_SM90_INSTANTIATE(DTYPE, HEAD_DIM, PAGED, true, kKVLen)
// The wide tile compiled for causal problems without a window or soft cap (kCausalKernel).
#define FLASHBAND_SM90_PREFILL_WIDE_CAUSAL(DTYPE, HEAD_DIM, PAGED) \
  FLASHBAND_SM90_INSTANTIATE(DTYPE, HEAD_DIM, PAGED, true, kCausal)
