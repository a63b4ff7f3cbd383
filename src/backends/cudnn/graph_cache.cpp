#include "backends/cudnn/graph_cache.h"

#include <cuda_runtime.h>

#include <map>
#include <string>
#include <unordered_map>

#include "flashband/error.h"

namespace flashband::cudnn_backend {

namespace {

struct Entry {
  std::shared_ptr<const BuiltGraph> graph;  // null when cuDNN refused the key
  std::string refusal;                      // cuDNN's refusal, replayed without rebuilding
  uint64_t last_use = 0;
};

struct Cache {
  std::mutex mutex;
  std::unordered_map<GraphKey, Entry, GraphKeyHash> entries;
  uint64_t tick = 0;
  std::size_t builds = 0;
};

Cache& cache() {
  static Cache* c = new Cache();  // leaked on purpose: graphs must outlive static teardown
  return *c;
}

void evict_oldest(Cache& c) {
  auto oldest = c.entries.begin();
  for (auto it = c.entries.begin(); it != c.entries.end(); ++it) {
    if (it->second.last_use < oldest->second.last_use) oldest = it;
  }
  if (oldest != c.entries.end()) c.entries.erase(oldest);
}

}  // namespace

DeviceGuard::DeviceGuard(int device) : device_(device) {
  if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
  if (previous_ != device_) {
    const cudaError_t err = cudaSetDevice(device_);
    if (err != cudaSuccess) {
      throw Error(ErrorCode::kCudaError, "backend 'cudnn': cudaSetDevice(" + std::to_string(device_) +
                                             ") failed: " + cudaGetErrorString(err));
    }
  }
}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0 && previous_ != device_) cudaSetDevice(previous_);
}

DeviceHandle& device_handle(int device_id) {
  static std::mutex mutex;
  static auto* handles = new std::map<int, std::unique_ptr<DeviceHandle>>();
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = (*handles)[device_id];
  if (!slot) {
    DeviceGuard guard(device_id);
    auto h = std::make_unique<DeviceHandle>();
    const cudnnStatus_t status = cudnnCreate(&h->handle);
    if (status != CUDNN_STATUS_SUCCESS) {
      throw Error(ErrorCode::kCudaError, "backend 'cudnn': cudnnCreate on device " +
                                             std::to_string(device_id) +
                                             " failed: " + cudnnGetErrorString(status));
    }
    slot = std::move(h);
  }
  return *slot;
}

std::shared_ptr<const BuiltGraph> cached_graph(const GraphKey& key) {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  auto it = c.entries.find(key);
  if (it != c.entries.end()) {
    it->second.last_use = ++c.tick;
    if (!it->second.graph) throw Error(ErrorCode::kUnsupported, it->second.refusal);
    return it->second.graph;
  }
  // Builds are rare (a handful per model) and seconds at worst; building under the cache lock
  // keeps two threads from compiling the same graph twice.
  DeviceHandle& dh = device_handle(key.device_id);
  std::shared_ptr<const BuiltGraph> built;
  std::string refusal;
  {
    DeviceGuard guard(key.device_id);
    std::lock_guard<std::mutex> handle_lock(dh.mutex);
    try {
      built = build_graph(key, dh.handle);
    } catch (const Error& e) {
      // A refusal is a property of the key (and the loaded cuDNN): remember it, so asking
      // again does not recompile. Other errors (CUDA failures) may be transient: rethrow.
      if (e.code() != ErrorCode::kUnsupported) throw;
      refusal = e.what();
    }
  }
  ++c.builds;
  if (c.entries.size() >= kMaxCachedGraphs) evict_oldest(c);
  c.entries.emplace(key, Entry{built, refusal, ++c.tick});
  if (!built) throw Error(ErrorCode::kUnsupported, refusal);
  return built;
}

std::size_t graph_cache_size() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.entries.size();
}

std::size_t graph_builds() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.builds;
}

}  // namespace flashband::cudnn_backend
