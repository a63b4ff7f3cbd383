// A minimal thread pool-less parallel loop for the cpu backend: std::thread workers pull
// item indices from one atomic counter, so items of uneven cost (causal row blocks) balance.
#pragma once
#include <cstdint>
#include <functional>

namespace flashband::cpu {

// Threads parallel_for uses for `num_items` items: min(hardware threads, num_items), at least
// 1. The environment variable FLASHBAND_CPU_THREADS (a positive integer) overrides the
// hardware count, for measurements on a fixed number of cores.
int worker_count(int64_t num_items);

// Calls body(item, worker) for every item in [0, num_items), worker in [0, worker_count).
// The calling thread is worker 0. After all workers joined, the first exception any body
// threw is rethrown; remaining items are skipped once one has thrown.
void parallel_for(int64_t num_items, const std::function<void(int64_t item, int worker)>& body);

}  // namespace flashband::cpu
