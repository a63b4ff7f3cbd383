// Host-to-device copies of plan arrays that never wait for the GPU. A cudaMemcpyAsync from
// pageable memory may synchronise with the stream (CUDA's API synchronisation rules), so a
// serving loop that plans step n+1 while the GPU still runs step n would stall. The bytes
// go through pinned staging blocks instead; a block is reused only after the copy that read
// it has run (an event recorded behind it), so a later plan never overwrites bytes that an
// earlier copy has yet to read.
#pragma once
#include <cstddef>

namespace flashband::cuda {

// Copies `bytes` from host `src` to device `dst` on `stream` (a cudaStream_t) and returns
// without waiting for the stream; `src` may be freed at once. Where staging cannot be had
// (64 blocks in flight, no pinned memory, a stream of another device than the current
// one) it copies from `src` directly, which may wait. A stream that is capturing a graph
// is refused (Error kInvalidArgument naming the stream): plans are made outside captures.
// Throws flashband::Error(kCudaError) naming the call when CUDA fails.
void copy_to_device_async(void* dst, const void* src, std::size_t bytes, void* stream);

// Staging blocks held (for tests and diagnostics).
std::size_t pinned_staging_blocks();

}  // namespace flashband::cuda
