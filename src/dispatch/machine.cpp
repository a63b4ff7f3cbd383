// machine_info(): the facts about this machine that selection depends on, read once per device.
#include <mutex>
#include <vector>

#include "dispatch/backend.h"
#include "dispatch/select.h"
#include "flashband/config.h"
#if FLASHBAND_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace flashband::dispatch {

MachineInfo machine_info(Device device, int device_id) {
  MachineInfo m;
#if FLASHBAND_WITH_CUDA
  static std::once_flag once;
  static int count = 0;
  static std::vector<int> archs;
  std::call_once(once, [] {
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
      count = 0;
      cudaGetLastError();  // clear the sticky "no device" error
    }
    for (int d = 0; d < count; ++d) {
      cudaDeviceProp prop{};
      cudaGetDeviceProperties(&prop, d);
      archs.push_back(prop.major * 10 + prop.minor);
    }
  });
  m.cuda_devices = count;
  if (device == Device::kCUDA && device_id >= 0 && device_id < count) m.arch = archs[device_id];
#else
  (void)device;
  (void)device_id;
#endif
  const BackendOps* cudnn = backend_ops(Backend::kCUDNN);
  if (m.cuda_devices > 0 && cudnn && cudnn->runtime_version) m.cudnn_version = cudnn->runtime_version();
  return m;
}

}  // namespace flashband::dispatch
