#include "backends/cpu/parallel_for.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace flashband::cpu {

namespace {
int hardware_threads() {
  if (const char* env = std::getenv("FLASHBAND_CPU_THREADS")) {
    const int n = std::atoi(env);
    if (n > 0) return n;
  }
  const unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? static_cast<int>(n) : 1;
}
}  // namespace

int worker_count(int64_t num_items) {
  if (num_items <= 1) return 1;
  return static_cast<int>(std::min<int64_t>(hardware_threads(), num_items));
}

void parallel_for(int64_t num_items, const std::function<void(int64_t item, int worker)>& body) {
  if (num_items <= 0) return;
  const int workers = worker_count(num_items);
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mutex;

  auto work = [&](int worker) {
    for (;;) {
      if (failed.load(std::memory_order_relaxed)) return;
      const int64_t item = next.fetch_add(1, std::memory_order_relaxed);
      if (item >= num_items) return;
      try {
        body(item, worker);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        failed.store(true, std::memory_order_relaxed);
        return;
      }
    }
  };

  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(workers - 1));
  for (int w = 1; w < workers; ++w) threads.emplace_back(work, w);
  work(0);
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace flashband::cpu
