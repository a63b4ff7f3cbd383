// The process-wide cache of built cuDNN graphs, keyed by the full GraphKey, and the one cuDNN
// handle per device that builds and runs them. Plans hold their graph by shared_ptr, so
// evicting an entry never invalidates a plan.
#pragma once
#include <cudnn.h>

#include <cstddef>
#include <memory>
#include <mutex>

#include "backends/cudnn/graph_build.h"
#include "backends/cudnn/graph_key.h"

namespace flashband::cudnn_backend {

// Least-recently-used entries beyond this many are dropped from the cache.
inline constexpr std::size_t kMaxCachedGraphs = 256;

// The graph for `key`, built on first use (on device key.device_id). Thread-safe. Throws what
// build_graph throws; a refusal (kUnsupported) is cached too and replayed for the same key.
std::shared_ptr<const BuiltGraph> cached_graph(const GraphKey& key);

// Entries in the cache, and how many graphs were built since the process started (a hit
// does not count), for tests that prove a changed value was not served a stale graph.
std::size_t graph_cache_size();
std::size_t graph_builds();

// A device's cuDNN handle. cudnnSetStream + execute must happen under `mutex`, because the
// handle's stream is shared state. Created on first use, never destroyed (tearing down cuDNN
// during static destruction can race the CUDA runtime's own teardown).
struct DeviceHandle {
  cudnnHandle_t handle = nullptr;
  std::mutex mutex;
};
DeviceHandle& device_handle(int device_id);

// Makes `device` current for the guard's lifetime.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
  int device_ = -1;
};

}  // namespace flashband::cudnn_backend
