// An event timeline of one sm90 launch, for measurement builds only (CMake
// -DFLASHBAND_SM90_TRACE=ON). Stall samples say where warps wait, not in what order things
// happen across the producer and the consumer warpgroups; this records, per CTA, one thread
// of each role stamping the SM clock at fixed points of the pipeline (scripts/sm90_trace.py
// reads it). In every other build each call below is an empty inline function and the
// kernels compile exactly as without it.
#pragma once
#include <cstdint>

#include "backends/sm90/kernel_params.h"

namespace flashband::sm90 {

// Recording lanes per CTA, one per warpgroup: 0 the producer, 1 + w consumer warpgroup w.
constexpr int kTraceLanes = 4;
// 32-bit words at the start of each lane: events recorded, %globaltimer at the start (ns,
// low and high word: orders CTAs on different SMs), the SM clock at the start, the SM, the
// launch's number.
constexpr int kTraceHeaderWords = 8;
constexpr int kTraceMaxCtas = 256;

// What an event marks: the moment the named wait finished or the named work was done.
enum TraceEvent : uint32_t {
  kTrUnit = 1,     // consumer: a unit begins
  kTrQReady = 2,   // its Q buffer is full
  kTrKVReady = 3,  // the stages the next GEMM issue reads are full
  kTrTurn = 4,     // the ping-pong turn is this warpgroup's
  kTrIssued = 5,   // the step's GEMMs are issued (and the turn passed on)
  kTrSDone = 6,    // Q K^T complete
  kTrScored = 7,   // softmax of the S tile done (P not yet converted); not in ping-pong loop steps
  kTrPVDone = 8,   // P V complete
  kTrStored = 9,   // O (and LSE) stored
  kTrPUnit = 10,   // producer: a unit begins
  kTrPQ = 11,      // its Q load issued (the buffer was free)
  kTrPK = 12,      // a K tile's load issued
  kTrPV = 13,      // a V tile's load issued
};

#ifdef __CUDACC__
// One per warpgroup; its thread 0 records (role = the warpgroup). It holds only the event
// count in a register, records are 32 bits and the buffer's address is recomputed per
// event from the kernel parameters, so that the consumers' registers change as little as
// possible (with 64-bit records and a held buffer pointer the 176-key D = 128 kernel
// spilled 80 bytes; with these, none; the 24-register D = 256 paged producer spills 56
// bytes instead of 16). The clock reads and stores still cost a few instructions per event,
// so a trace build's timings are a little slower than the real kernel's (3-7% measured).
// A clock read also orders the code around it: ptxas will not move a wgmma wait across
// one, so a stamp between two pieces of work that ptxas would reorder changes the kernel
// (consumer.h leaves out kTrScored in the ping-pong loop for that reason).
struct Trace {
#if FLASHBAND_SM90_TRACE
  const KernelParams& p;
  int n = 0;
  __device__ __forceinline__ static uint32_t clock() {
    uint32_t c;
    asm volatile("mov.u32 %0, %%clock;" : "=r"(c));
    return c;
  }
  __device__ __forceinline__ bool recording() const {
    return p.trace != nullptr && threadIdx.x % 128 == 0 && blockIdx.x < kTraceMaxCtas;
  }
  __device__ __forceinline__ uint32_t* lane() const {
    return p.trace + (blockIdx.x * kTraceLanes + threadIdx.x / 128) * p.trace_capacity;
  }
  __device__ __forceinline__ explicit Trace(const KernelParams& params) : p(params) {
    if (!recording()) return;
    uint64_t ns;
    uint32_t sm;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    uint32_t* l = lane();
    l[1] = static_cast<uint32_t>(ns);
    l[2] = static_cast<uint32_t>(ns >> 32);
    l[3] = clock();
    l[4] = sm;
    l[5] = static_cast<uint32_t>(p.trace_launch);
  }
  // code in bits 28-31, the clock's low 28 bits below (the reader unwraps them).
  __device__ __forceinline__ void operator()(uint32_t code) {
    if (recording() && n < p.trace_capacity - kTraceHeaderWords)
      lane()[kTraceHeaderWords + n] = (code << 28) | (clock() & 0x0fffffffu);
    ++n;
  }
  __device__ __forceinline__ void finish() {
    if (recording()) lane()[0] = static_cast<uint32_t>(min(n, p.trace_capacity - kTraceHeaderWords));
  }
#else
  __device__ __forceinline__ explicit Trace(const KernelParams&) {}
  __device__ __forceinline__ void operator()(uint32_t) {}
  __device__ __forceinline__ void finish() {}
#endif
};
#endif  // __CUDACC__

#if FLASHBAND_SM90_TRACE
// Host: points p at the trace buffer (allocated on first use with
// FLASHBAND_SM90_TRACE_EVENTS events per lane, default 16384; 0 records nothing) and
// numbers the launch. The buffer holds each CTA's lanes of the latest launch that reached
// them, and is written to FLASHBAND_SM90_TRACE_FILE at exit (trace.cpp).
void attach_trace(KernelParams& p);
#endif

}  // namespace flashband::sm90
