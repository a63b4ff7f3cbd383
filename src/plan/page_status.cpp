#include "plan/page_status.h"

#include <mutex>
#include <string>
#include <vector>

#include "flashband/config.h"
#include "flashband/error.h"
#if FLASHBAND_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace flashband::detail {

#if FLASHBAND_WITH_CUDA
namespace {

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess)
    throw Error(ErrorCode::kCudaError, std::string("paged_kv_indices (device): ") + what + ": " + cudaGetErrorString(err));
}

// Words are carved from pinned, mapped slabs that live for the process and are never handed
// out twice: a captured graph keeps a word's address in its kernel arguments and may be
// replayed after its batch object is gone, so the word must stay valid (and unshared).
constexpr int kWordsPerSlab = 256;  // 4 ints each: one 4 KB page
std::mutex g_mutex;
int* g_slab = nullptr;
int g_used = kWordsPerSlab;

int* take_word() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_used == kWordsPerSlab) {
    void* slab = nullptr;
    check(cudaHostAlloc(&slab, kWordsPerSlab * 4 * sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable),
          "cudaHostAlloc of status words");
    g_slab = static_cast<int*>(slab);
    g_used = 0;
  }
  int* word = g_slab + 4 * g_used++;
  for (int i = 0; i < 4; ++i) word[i] = 0;
  return word;
}

}  // namespace

PageStatus::PageStatus(int) : host_(take_word()) {
  check(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_), host_, 0), "cudaHostGetDevicePointer");
}

PageStatus::~PageStatus() = default;  // the word stays with the process (take_word)

void PageStatus::raise_if_set() const {
  // Acquire: the entry and page, written before the flag on the device, are read after it.
  if (__atomic_load_n(&host_[3], __ATOMIC_ACQUIRE) == 0) return;
  const int entry = __atomic_load_n(&host_[1], __ATOMIC_RELAXED);
  const int page = __atomic_load_n(&host_[2], __ATOMIC_RELAXED);
  __atomic_store_n(&host_[3], 0, __ATOMIC_RELEASE);
  __atomic_store_n(&host_[0], 0, __ATOMIC_RELEASE);  // after the flag: a later run may claim it again
  throw Error(ErrorCode::kInvalidArgument,
              "paged_kv_indices: a run read entry " + std::to_string(entry) + " of the device page-index array = " +
                  std::to_string(page) + ", outside the paged cache's pages; it read page 0 instead, so that "
                  "run's output is wrong");
}
#else
PageStatus::PageStatus(int) {
  throw Error(ErrorCode::kNotBuilt, "paged_kv_indices (device): this build has no CUDA backend");
}
PageStatus::~PageStatus() = default;
void PageStatus::raise_if_set() const {}
#endif

}  // namespace flashband::detail
