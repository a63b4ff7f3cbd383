// Views of wgmma accumulator fragments. A thread's part of a 64 x N accumulator has CuTe
// layout ((2, 2, N/8), MMA_M, MMA_N): 2 adjacent columns, 2 rows 8 apart, N/8 column groups.
// Softmax wants it as (rows, cols); the PV wgmma wants P as its A operand, whose registers
// for one k-step of 16 are the accumulator values of two adjacent column groups.
#pragma once
#include <cute/tensor.hpp>

namespace flashband::sm90 {

// ((2, 2, V), M, N) -> ((2, M), (2, V, N)): mode 0 indexes the thread's rows, mode 1 its
// columns.
template <class Layout>
__device__ __forceinline__ constexpr auto rowcol_layout(Layout acc) {
  using namespace cute;
  static_assert(decltype(rank(acc))::value == 3 && decltype(rank<0>(acc))::value == 3);
  static_assert(decltype(size<0, 0>(acc))::value == 2 && decltype(size<0, 1>(acc))::value == 2);
  return make_layout(make_layout(get<0, 1>(acc), get<1>(acc)), make_layout(get<0, 0>(acc), get<0, 2>(acc), get<2>(acc)));
}

// Column j of a thread's rowcol view (MMA_N = 1) sits at the thread's column 0 plus this
// offset: 2 adjacent columns per group of 8. A compile-time constant, so the epilogue's
// stores address with immediates from one row pointer.
__host__ __device__ constexpr int acc_col_offset(int j) { return (j & 1) + 8 * (j >> 1); }

// ((2, 2, V), M, N) -> ((2, 2, 2), M, (V/2, N)): the A-operand fragment of a k16 wgmma with
// register A, one k-step per index of mode 2. Same registers, reinterpreted.
template <class Layout>
__device__ __forceinline__ constexpr auto acc_as_operand_a(Layout acc) {
  using namespace cute;
  static_assert(decltype(size<0, 2>(acc))::value % 2 == 0);
  auto split = logical_divide(get<0>(acc), Shape<Underscore, Underscore, _2>{});  // (2, 2, (2, V/2))
  return make_layout(make_layout(get<0>(split), get<1>(split), get<2, 0>(split)), get<1>(acc),
                     make_layout(get<2, 1>(split), get<2>(acc)));
}

template <class Tensor>
__device__ __forceinline__ auto rowcol_view(Tensor&& t) {
  return cute::make_tensor(t.data(), rowcol_layout(t.layout()));
}

}  // namespace flashband::sm90
