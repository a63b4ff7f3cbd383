// Issue rates of the instructions in the sm90 softmax's path, per SM sub-partition: which
// pipe bounds the exponentials and the bf16 packing of P, and whether packed half-precision
// ex2 gives two exponentials for the price of one. One block per SM, 4 warps per
// sub-partition, kChains independent chains per thread; prints cycles per warp instruction.
// Build and run on the GPU machine: nvcc -arch=sm_90a -O3 scripts/pipe_rates.cu -o pr && ./pr
#include <cstdio>
#include <cstdint>


// 2^x on the FMA pipe, the form measured in the kernel and dropped (findings F21; journal
// 2026-12-01, s24): degree-4 polynomial on the fraction, times 2^round(x) built in a float.
__device__ __forceinline__ float exp2_poly(float x) {
  constexpr float kShift = 12582912.0f;  // 1.5 * 2^23
  x = fmaxf(x, -127.0f);
  const float t = x + kShift;
  const float f = x - (t - kShift);
  float p = fmaf(0.009582799f, f, 0.055906326f);
  p = fmaf(p, f, 0.24024099f);
  p = fmaf(p, f, 0.69312423f);
  p = fmaf(p, f, 1.0f);
  return p * __uint_as_float((__float_as_uint(t) + 127u) << 23);
}

constexpr int kIters = 4096, kChains = 8, kThreads = 512;

template <int kOp>
__device__ __forceinline__ void step(float (&f)[kChains], uint32_t (&u)[kChains]) {
#pragma unroll
  for (int c = 0; c < kChains; ++c) {
    if constexpr (kOp == 0) asm volatile("fma.rn.f32 %0, %0, 0f3F800001, 0f3F000000;" : "+f"(f[c]));
    if constexpr (kOp == 1) asm volatile("ex2.approx.ftz.f32 %0, %0;" : "+f"(f[c]));
    if constexpr (kOp == 2) asm volatile("ex2.approx.f16x2 %0, %0;" : "+r"(u[c]));
    if constexpr (kOp == 3) asm volatile("ex2.approx.ftz.bf16x2 %0, %0;" : "+r"(u[c]));
    // Conversions: the input moves each step (one FFMA) so that ptxas cannot hoist them.
    if constexpr (kOp == 4) {
      asm volatile("fma.rn.f32 %0, %0, 0f3F800001, 0f3F000000;" : "+f"(f[c]));
      asm volatile("cvt.rn.bf16x2.f32 %0, %1, %1;" : "=r"(u[c]) : "f"(f[c]));
    }
    if constexpr (kOp == 5) {
      asm volatile("fma.rn.f32 %0, %0, 0f3F800001, 0f3F000000;" : "+f"(f[c]));
      asm volatile("cvt.rn.f16x2.f32 %0, %1, %1;" : "=r"(u[c]) : "f"(f[c]));
    }
    if constexpr (kOp == 6) asm volatile("prmt.b32 %0, %0, %1, 0x7632;" : "+r"(u[c]) : "r"(u[(c + 1) % kChains]));
    if constexpr (kOp == 7) {  // MUFU and F2FP interleaved: shared pipe if ~ the sum of both
      asm volatile("ex2.approx.ftz.f32 %0, %0;" : "+f"(f[c]));
      asm volatile("cvt.rn.bf16x2.f32 %0, %1, %1;" : "=r"(u[c]) : "f"(f[(c + 3) % kChains]));
    }
    if constexpr (kOp == 8) asm volatile("max.f32 %0, %0, %1;" : "+f"(f[c]) : "f"(f[(c + 1) % kChains]));
    if constexpr (kOp == 9) {  // MUFU and FFMA interleaved 1:2 (the softmax's ratio with the sum)
      asm volatile("ex2.approx.ftz.f32 %0, %0;" : "+f"(f[c]));
      asm volatile("fma.rn.f32 %0, %0, 0f3F800001, 0f3F000000;" : "+f"(f[(c + 4) % kChains]));
    }
    if constexpr (kOp == 10) {  // f16 -> f32 (the unpacking of a packed exponential)
      asm volatile("add.u32 %0, %0, 1;" : "+r"(u[c]));
      asm volatile("{.reg .b16 l, h; mov.b32 {l, h}, %1; cvt.f32.f16 %0, l;}" : "=f"(f[c]) : "r"(u[c]));
    }
    // One pair of softmax columns, as the sm90 kernel does it (11) and with packed
    // exponentials (12: f16x2, unpacked by cvt; 13: bf16x2, unpacked by shifts): argument
    // FFMAs, exponentials, the row sum's FADDs and P packed to bf16x2 (one LOP3 keeps it).
    // Four softmax columns, 2 (14) or 1 (16) of their exponentials from exp2_poly above.
    if constexpr (kOp == 14 || kOp == 16) {
      constexpr int kEvery = kOp - 12;
      float p[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float a = fmaf(f[c], 1.0f + 1e-4f * e, -0.5f);
        if (e % kEvery == kEvery - 1) p[e] = exp2_poly(a);
        else asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(p[e]) : "f"(a));
      }
      uint32_t pk0, pk1;
      asm volatile("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(pk0) : "f"(p[1]), "f"(p[0]));
      asm volatile("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(pk1) : "f"(p[3]), "f"(p[2]));
      u[c] ^= pk0 ^ pk1;
#pragma unroll
      for (int e = 0; e < 4; ++e) f[(c + 1) % kChains] += p[e];
    }
    if constexpr (kOp >= 11 && kOp <= 13) {
      const float a0 = fmaf(f[c], 1.0001f, -0.5f), a1 = fmaf(f[c], 0.9999f, -0.5f);
      float p0, p1;
      uint32_t pk;
      if constexpr (kOp == 11) {
        asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(p0) : "f"(a0));
        asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(p1) : "f"(a1));
        asm volatile("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(pk) : "f"(p1), "f"(p0));
      } else if constexpr (kOp == 12) {
        uint32_t h, e;
        asm volatile("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(h) : "f"(a1), "f"(a0));
        asm volatile("ex2.approx.f16x2 %0, %1;" : "=r"(e) : "r"(h));
        asm volatile("{.reg .b16 l, h; mov.b32 {l, h}, %2; cvt.f32.f16 %0, l; cvt.f32.f16 %1, h;}"
                     : "=f"(p0), "=f"(p1) : "r"(e));
        asm volatile("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(pk) : "f"(p1), "f"(p0));
      } else {
        uint32_t h;
        asm volatile("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(h) : "f"(a1), "f"(a0));
        asm volatile("ex2.approx.ftz.bf16x2 %0, %1;" : "=r"(pk) : "r"(h));
        p0 = __uint_as_float(pk << 16);
        p1 = __uint_as_float(pk & 0xffff0000u);
      }
      u[c] ^= pk;
      f[(c + 1) % kChains] += p0;
      f[(c + 1) % kChains] += p1;
    }
  }
}

template <int kOp>
__global__ void rate(long long* cycles, uint32_t* sink) {
  float f[kChains];
  uint32_t u[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) { f[c] = 0.001f * (threadIdx.x + c); u[c] = 0x3c003c00u + c; }
  __syncthreads();
  long long t0 = clock64();
  for (int i = 0; i < kIters; ++i) step<kOp>(f, u);
  __syncthreads();
  long long t1 = clock64();
  uint32_t acc = 0;
#pragma unroll
  for (int c = 0; c < kChains; ++c) acc ^= __float_as_uint(f[c]) ^ u[c];
  sink[blockIdx.x * blockDim.x + threadIdx.x] = acc;
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
}

template <int kOp>
void run(const char* name, int insts_per_chain_step, int sms, long long* cycles, uint32_t* sink) {
  rate<kOp><<<sms, kThreads>>>(cycles, sink);
  rate<kOp><<<sms, kThreads>>>(cycles, sink);
  cudaDeviceSynchronize();
  long long host[1024];
  cudaMemcpy(host, cycles, sizeof(long long) * sms, cudaMemcpyDeviceToHost);
  double mean = 0;
  for (int b = 0; b < sms; ++b) mean += host[b];
  mean /= sms;
  // warp instructions per sub-partition: (threads / 32 / 4) warps x iters x chains x insts
  const double per_smsp = double(kThreads / 32 / 4) * kIters * kChains * insts_per_chain_step;
  printf("%-34s %6.2f cycles per warp instruction per sub-partition\n", name, mean / per_smsp);
}

int main() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  long long* cycles;
  uint32_t* sink;
  cudaMalloc(&cycles, sizeof(long long) * sms);
  cudaMalloc(&sink, sizeof(uint32_t) * sms * kThreads);
  run<0>("fma.rn.f32 (FFMA)", 1, sms, cycles, sink);
  run<8>("max.f32 (FMNMX)", 1, sms, cycles, sink);
  run<1>("ex2.approx.ftz.f32 (MUFU.EX2)", 1, sms, cycles, sink);
  run<2>("ex2.approx.f16x2", 1, sms, cycles, sink);
  run<3>("ex2.approx.ftz.bf16x2", 1, sms, cycles, sink);
  run<4>("fma + cvt.rn.bf16x2.f32 (per pair)", 2, sms, cycles, sink);
  run<5>("fma + cvt.rn.f16x2.f32 (per pair)", 2, sms, cycles, sink);
  run<10>("add.u32 + cvt.f32.f16 (per pair)", 2, sms, cycles, sink);
  run<6>("prmt.b32", 1, sms, cycles, sink);
  run<7>("ex2.f32 + cvt.bf16x2 (per pair)", 2, sms, cycles, sink);
  run<9>("ex2.f32 + fma (per pair)", 2, sms, cycles, sink);
  run<11>("softmax pair, ex2.f32 (cycles/pair)", 1, sms, cycles, sink);
  run<12>("softmax pair, ex2.f16x2", 1, sms, cycles, sink);
  run<13>("softmax pair, ex2.bf16x2", 1, sms, cycles, sink);
  run<14>("softmax pair, 1 of 2 by poly", 2, sms, cycles, sink);
  run<16>("softmax pair, 1 of 4 by poly", 2, sms, cycles, sink);
  printf("error: %s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
