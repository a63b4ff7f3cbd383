// Merge kernel: one group of lanes per (token, head) row folds the row's states in order
// with core::merge_weights, the single merge rule every path shares.
#include "backends/cuda/merge.h"

#include <cuda_runtime.h>

#include <string>

#include "backends/cuda/check.h"
#include "backends/cuda/numeric.cuh"
#include "core/state.h"
#include "flashband/error.h"

namespace flashband::cuda {

namespace {

// Lanes a (token, head) row may be spread over: launch_typed's blocks of 128 threads hold
// whole rows, two at least. Head dims up to 256 take 16 lanes (kChunksPerLane below).
constexpr int kMaxLanesPerRow = 64;

struct MergeArgs {
  StateSet sets[2];
  int num_sets;
  int64_t rows;  // n * H
  int num_heads;
  int head_dim;
  int lanes_per_row;  // a power of two <= kMaxLanesPerRow
  MergeTarget out;
  const float* sinks;  // [num_heads], natural log; folded in once after every state, or nullptr
};


template <class T, int kVec>
struct Vec {
  float x[kVec];
  __device__ __forceinline__ void load(const T* p) {
#pragma unroll
    for (int i = 0; i < kVec; ++i) x[i] = to_float(p[i]);
  }
  __device__ __forceinline__ void store(T* p) const {
#pragma unroll
    for (int i = 0; i < kVec; ++i) p[i] = from_float<T>(x[i]);
  }
};
// Four-element chunks move as one 16-byte (float) or 8-byte (half) access when aligned.
template <>
__device__ __forceinline__ void Vec<float, 4>::load(const float* p) {
  const float4 v = *reinterpret_cast<const float4*>(p);
  x[0] = v.x, x[1] = v.y, x[2] = v.z, x[3] = v.w;
}
template <>
__device__ __forceinline__ void Vec<float, 4>::store(float* p) const {
  *reinterpret_cast<float4*>(p) = make_float4(x[0], x[1], x[2], x[3]);
}
template <>
__device__ __forceinline__ void Vec<__half, 4>::load(const __half* p) {
  const uint2 u = *reinterpret_cast<const uint2*>(p);
  const float2 lo = __half22float2(*reinterpret_cast<const __half2*>(&u.x));
  const float2 hi = __half22float2(*reinterpret_cast<const __half2*>(&u.y));
  x[0] = lo.x, x[1] = lo.y, x[2] = hi.x, x[3] = hi.y;
}
template <>
__device__ __forceinline__ void Vec<__nv_bfloat16, 4>::load(const __nv_bfloat16* p) {
  const uint2 u = *reinterpret_cast<const uint2*>(p);
  const float2 lo = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.x));
  const float2 hi = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.y));
  x[0] = lo.x, x[1] = lo.y, x[2] = hi.x, x[3] = hi.y;
}
template <>
__device__ __forceinline__ void Vec<__half, 4>::store(__half* p) const {
  *reinterpret_cast<uint2*>(p) = make_uint2(pack2<__half>(x[0], x[1]), pack2<__half>(x[2], x[3]));
}
template <>
__device__ __forceinline__ void Vec<__nv_bfloat16, 4>::store(__nv_bfloat16* p) const {
  *reinterpret_cast<uint2*>(p) =
      make_uint2(pack2<__nv_bfloat16>(x[0], x[1]), pack2<__nv_bfloat16>(x[2], x[3]));
}

// States a lane loads before folding any of them: the fold is a chain of dependent steps,
// so loading each state only after the previous one is folded (as a branch on its weight
// would) costs one memory latency a state; a group costs one in all.
constexpr int kStateGroup = 2;
// Chunks of kVec elements a lane holds of each state: the merge is bound by the bytes in
// flight, and a lane with one 16-byte load a state left DRAM at a quarter of its bandwidth
// (ncu, D = 128: 22%). A row is spread over the fewest lanes that cover its head dim so.
constexpr int kChunksPerLane = 4;

// kVec = 4 when every address of a chunk is aligned to 4 elements, else 1. Lane `lane` of
// a row holds elements [c, c + kVec) for c = lane * kVec + q * lanes * kVec (q <
// kChunksPerLane) of each pass of lanes * kVec * kChunksPerLane elements.
template <class Tin, class Tout, int kVec>
__global__ void merge_kernel(const __grid_constant__ MergeArgs a) {
  const int lanes = a.lanes_per_row;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / lanes) + threadIdx.x / lanes;
  if (row >= a.rows) return;
  const int lane = threadIdx.x & (lanes - 1);
  // 32-bit division where the rows allow it: the 64-bit one is a long instruction sequence.
  const int64_t i = a.rows <= INT32_MAX ? static_cast<int64_t>(static_cast<uint32_t>(row) /
                                                                static_cast<uint32_t>(a.num_heads))
                                        : row / a.num_heads;
  const int h = static_cast<int>(row - i * a.num_heads);
  const int stride = lanes * kVec;  // between a lane's chunks

  float lse = core::neg_inf();
  for (int base = lane * kVec; base < a.head_dim; base += stride * kChunksPerLane) {
    float acc[kChunksPerLane][kVec];
#pragma unroll
    for (int q = 0; q < kChunksPerLane; ++q)
#pragma unroll
      for (int e = 0; e < kVec; ++e) acc[q][e] = 0.0f;
    lse = core::neg_inf();
    for (int set = 0; set < a.num_sets; ++set) {
      const StateSet& st = a.sets[set];
      const Tin* v = static_cast<const Tin*>(st.v) + i * st.v_stride_n + h * st.v_stride_h + base;
      const float* s = st.s + i * st.s_stride_n + h * st.s_stride_h;
      for (int k0 = 0; k0 < st.num_states; k0 += kStateGroup) {
        float sk[kStateGroup];
        Vec<Tin, kVec> x[kStateGroup][kChunksPerLane];
#pragma unroll
        for (int j = 0; j < kStateGroup; ++j) {
          if (k0 + j < st.num_states) {
            sk[j] = s[(k0 + j) * st.s_stride_s];
#pragma unroll
            for (int q = 0; q < kChunksPerLane; ++q) {
              if (base + q * stride < a.head_dim) {
                x[j][q].load(v + (k0 + j) * st.v_stride_s + q * stride);
              } else {
#pragma unroll
                for (int e = 0; e < kVec; ++e) x[j][q].x[e] = 0.0f;  // past the head dim: never stored
              }
            }
          }
        }
#pragma unroll
        for (int j = 0; j < kStateGroup; ++j) {
          if (k0 + j >= st.num_states) break;
          const core::MergeWeights w = core::merge_weights(lse, sk[j]);
          // A state with weight 0 is not used, so garbage values behind an empty state (or
          // an empty accumulator) never turn into NaN.
          if (w.w_b != 0.0f) {
#pragma unroll
            for (int q = 0; q < kChunksPerLane; ++q)
#pragma unroll
              for (int e = 0; e < kVec; ++e)
                acc[q][e] = (w.w_a != 0.0f ? w.w_a * acc[q][e] : 0.0f) + w.w_b * x[j][q].x[e];
          } else if (w.w_a == 0.0f) {
#pragma unroll
            for (int q = 0; q < kChunksPerLane; ++q)
#pragma unroll
              for (int e = 0; e < kVec; ++e) acc[q][e] = 0.0f;
          }
          lse = w.lse;
        }
      }
    }
    if (a.sinks) {  // the sink, once per row after all of its states (SPEC.md)
      float keep = 1.0f;
      core::fold_sink(core::sink_log2(a.sinks, h), keep, lse);
#pragma unroll
      for (int q = 0; q < kChunksPerLane; ++q)
#pragma unroll
        for (int e = 0; e < kVec; ++e) acc[q][e] = keep != 0.0f ? keep * acc[q][e] : 0.0f;
    }
    Tout* out = static_cast<Tout*>(a.out.v) + i * a.out.v_stride_n + h * a.out.v_stride_h + base;
#pragma unroll
    for (int q = 0; q < kChunksPerLane; ++q) {
      if (base + q * stride >= a.head_dim) break;
      Vec<Tout, kVec> o;
#pragma unroll
      for (int e = 0; e < kVec; ++e) o.x[e] = acc[q][e];
      o.store(out + q * stride);
    }
  }
  if (lane == 0 && a.out.s) {
    if (a.head_dim == 0) {  // no chunk ran: compute the LSE alone
      for (int set = 0; set < a.num_sets; ++set)
        for (int k = 0; k < a.sets[set].num_states; ++k) {
          const StateSet& st = a.sets[set];
          lse = core::merge_weights(lse, st.s[i * st.s_stride_n + k * st.s_stride_s + h * st.s_stride_h]).lse;
        }
      float keep = 1.0f;
      core::fold_sink(core::sink_log2(a.sinks, h), keep, lse);
    }
    a.out.s[i * a.out.s_stride_n + h * a.out.s_stride_h] = lse;
  }
}

bool aligned(const void* p, std::size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

bool vectorizable(const MergeArgs& a) {
  if (a.head_dim % 4 != 0) return false;
  for (int k = 0; k < a.num_sets; ++k) {
    const StateSet& s = a.sets[k];
    if (!aligned(s.v, 4 * dtype_size(s.dtype))) return false;
    if (s.v_stride_n % 4 || s.v_stride_s % 4 || s.v_stride_h % 4) return false;
  }
  return aligned(a.out.v, 4 * dtype_size(a.out.dtype)) && a.out.v_stride_n % 4 == 0 && a.out.v_stride_h % 4 == 0;
}

template <class Tin, class Tout>
void launch_typed(const MergeArgs& a, cudaStream_t stream) {
  constexpr int kThreads = 128;
  const int rows_per_block = kThreads / a.lanes_per_row;
  const int64_t blocks = (a.rows + rows_per_block - 1) / rows_per_block;
  if (vectorizable(a)) {
    merge_kernel<Tin, Tout, 4><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(a);
  } else {
    merge_kernel<Tin, Tout, 1><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(a);
  }
  FB_CUDA_CHECK_LAUNCH("merge_kernel");
}

StateSet state_set(const TensorView& v, const TensorView& s, bool has_state_dim) {
  StateSet set;
  set.v = v.data;
  set.dtype = v.dtype;
  set.s = static_cast<const float*>(s.data);
  set.v_stride_n = v.strides[0];
  set.s_stride_n = s.strides[0];
  if (has_state_dim) {
    set.num_states = static_cast<int>(v.shape[1]);
    set.v_stride_s = v.strides[1];
    set.v_stride_h = v.strides[2];
    set.s_stride_s = s.strides[1];
    set.s_stride_h = s.strides[2];
  } else {
    set.num_states = 1;
    set.v_stride_h = v.strides[1];
    set.s_stride_h = s.strides[1];
  }
  return set;
}

MergeTarget target(const TensorView& v_out, const TensorView& s_out) {
  MergeTarget t;
  t.v = v_out.data;
  t.dtype = v_out.dtype;
  t.v_stride_n = v_out.strides[0];
  t.v_stride_h = v_out.strides[1];
  t.s = static_cast<float*>(s_out.data);
  t.s_stride_n = s_out.strides[0];
  t.s_stride_h = s_out.strides[1];
  return t;
}

}  // namespace

void launch_merge(const StateSet& first, const StateSet* second, int64_t n, int num_heads, int head_dim,
                  const MergeTarget& out, void* stream, const float* sinks) {
  MergeArgs a{};
  a.sinks = sinks;
  a.sets[0] = first;
  a.num_sets = 1;
  if (second) {
    if (second->dtype != first.dtype)
      throw Error(ErrorCode::kInvalidArgument, std::string("merge: state dtypes differ (") + dtype_name(first.dtype) +
                                                   " and " + dtype_name(second->dtype) + ")");
    a.sets[1] = *second;
    a.num_sets = 2;
  }
  a.rows = n * num_heads;
  a.num_heads = num_heads;
  a.head_dim = head_dim;
  a.out = out;
  if (a.rows == 0) return;
  const int chunks = head_dim / 4 > 0 ? head_dim / 4 : 1;
  a.lanes_per_row = 1;
  while (a.lanes_per_row < kMaxLanesPerRow && a.lanes_per_row * kChunksPerLane < chunks) a.lanes_per_row *= 2;

  const auto s = static_cast<cudaStream_t>(stream);
  const DType in = first.dtype, o = out.dtype;
  if (in == DType::kF32 && o == DType::kF32) return launch_typed<float, float>(a, s);
  if (in == DType::kF32 && o == DType::kF16) return launch_typed<float, __half>(a, s);
  if (in == DType::kF32 && o == DType::kBF16) return launch_typed<float, __nv_bfloat16>(a, s);
  if (in == DType::kF16 && o == DType::kF16) return launch_typed<__half, __half>(a, s);
  if (in == DType::kBF16 && o == DType::kBF16) return launch_typed<__nv_bfloat16, __nv_bfloat16>(a, s);
  throw Error(ErrorCode::kUnsupported, std::string("merge: states of dtype ") + dtype_name(in) + " into an output of " +
                                           dtype_name(o) +
                                           " (supported: float32 into any of float16/bfloat16/float32, or the same dtype)");
}

void merge_split_partials(const core::AttentionParams& p, const float* partial_o, const float* partial_lse,
                          int num_splits) {
  const int64_t S = num_splits, H = p.num_qo_heads, D = p.head_dim;
  StateSet in;
  in.v = partial_o;
  in.dtype = DType::kF32;
  in.v_stride_n = S * H * D;
  in.v_stride_s = H * D;
  in.v_stride_h = D;
  in.s = partial_lse;
  in.s_stride_n = S * H;
  in.s_stride_s = H;
  in.s_stride_h = 1;
  in.num_states = num_splits;
  MergeTarget out;
  out.v = p.o;
  out.dtype = p.dtype;
  out.v_stride_n = p.o_stride_n;
  out.v_stride_h = p.o_stride_h;
  out.s = p.lse;
  out.s_stride_n = p.lse_stride_n;
  out.s_stride_h = p.lse_stride_h;
  // The splits' partial states carry no sink; the merge adds it once (SPEC.md).
  launch_merge(in, nullptr, p.total_qo_tokens, p.num_qo_heads, p.head_dim, out, p.stream, p.sinks);
}

void merge_state(const TensorView& v_a, const TensorView& s_a, const TensorView& v_b, const TensorView& s_b,
                 const TensorView& v_out, const TensorView& s_out, void* stream) {
  const StateSet a = state_set(v_a, s_a, false), b = state_set(v_b, s_b, false);
  launch_merge(a, &b, v_a.shape[0], static_cast<int>(v_a.shape[1]), static_cast<int>(v_a.shape[2]),
               target(v_out, s_out), stream);
}

void merge_states(const TensorView& v, const TensorView& s, const TensorView& v_out, const TensorView& s_out,
                  void* stream) {
  launch_merge(state_set(v, s, true), nullptr, v.shape[0], static_cast<int>(v.shape[2]),
               static_cast<int>(v.shape[3]), target(v_out, s_out), stream);
}

}  // namespace flashband::cuda
