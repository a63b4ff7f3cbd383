// Per-device facts the planners and launchers need, read once per device and cached: the
// multiprocessor count (to size split-KV) and the opt-in shared-memory limit per block.
#pragma once

namespace flashband::cuda {

int current_device();                        // cudaGetDevice, checked
int multiprocessor_count(int device);        // cached
int max_shared_memory_per_block(int device); // opt-in limit, cached

}  // namespace flashband::cuda
