// Host side of the sm90 event trace (trace.h); compiled only with -DFLASHBAND_SM90_TRACE=ON.
// The buffer is written to FLASHBAND_SM90_TRACE_FILE when the process exits, so whatever
// runs the launches (bench/probe.py, a test) needs no hook into the library.
#include "backends/sm90/trace.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace flashband::sm90 {
namespace {

uint32_t* g_buffer = nullptr;
int g_words_per_lane = 0;
int g_launch = 0;

size_t buffer_words() { return size_t{kTraceMaxCtas} * kTraceLanes * g_words_per_lane; }

// Layout: four int64 (lanes per CTA, CTAs, 32-bit words per lane, the last launch's number),
// then the buffer's words.
void dump_at_exit() {
  const char* path = std::getenv("FLASHBAND_SM90_TRACE_FILE");
  if (!path || !g_buffer || cudaDeviceSynchronize() != cudaSuccess) return;
  std::vector<uint32_t> host(buffer_words());
  if (cudaMemcpy(host.data(), g_buffer, host.size() * sizeof(uint32_t), cudaMemcpyDeviceToHost) != cudaSuccess) return;
  std::FILE* f = std::fopen(path, "wb");
  if (!f) return;
  const long long header[4] = {kTraceLanes, kTraceMaxCtas, g_words_per_lane, g_launch};
  std::fwrite(header, sizeof(header), 1, f);
  std::fwrite(host.data(), sizeof(uint32_t), host.size(), f);
  std::fclose(f);
}

}  // namespace

void attach_trace(KernelParams& p) {
  const char* env = std::getenv("FLASHBAND_SM90_TRACE_EVENTS");
  const int events = env ? std::atoi(env) : 16384;
  if (events <= 0) return;  // a trace build timed without recording
  if (!g_buffer) {
    g_words_per_lane = kTraceHeaderWords + events;
    const size_t bytes = buffer_words() * sizeof(uint32_t);
    if (cudaMalloc(&g_buffer, bytes) != cudaSuccess || cudaMemset(g_buffer, 0, bytes) != cudaSuccess) {
      std::fprintf(stderr, "flashband sm90 trace: cannot allocate %zu bytes; not recording\n", bytes);
      g_buffer = nullptr;
      return;
    }
    std::atexit(dump_at_exit);
  }
  p.trace = g_buffer;
  p.trace_capacity = g_words_per_lane;
  p.trace_launch = ++g_launch;
}

}  // namespace flashband::sm90
