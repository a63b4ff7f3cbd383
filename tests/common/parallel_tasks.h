// Runs independent test-side tasks (oracle heads) on all hardware threads. Deliberately not
// the cpu backend's parallel_for: the oracle shares no code with what it judges.
#pragma once
#include <functional>

namespace flashband::testing {

// Calls task(i) for i in [0, n) from up to std::thread::hardware_concurrency() threads and
// rethrows the first exception after all have finished.
void parallel_tasks(int n, const std::function<void(int)>& task);

}  // namespace flashband::testing
