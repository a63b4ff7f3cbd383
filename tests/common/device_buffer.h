// Memory for a test case on the device it runs on: host memory for Device::kCPU, cudaMalloc
// for Device::kCUDA (only in builds with GPU backends; elsewhere kCUDA throws).
#pragma once
#include <cstddef>

#include "flashband/tensor.h"

namespace flashband::testing {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(Device device, std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  Device device() const { return device_; }
  void upload(const void* host, std::size_t bytes) { upload_at(0, host, bytes); }
  // `bytes` from host to [offset, offset + bytes) of the buffer.
  void upload_at(std::size_t offset, const void* host, std::size_t bytes);
  // Sets every byte of [0, bytes) to `value` (the device's memset: fast even for GiBs).
  void fill_bytes(unsigned char value, std::size_t bytes);
  void download(void* host, std::size_t bytes) const;

 private:
  void release() noexcept;
  Device device_ = Device::kCPU;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// Waits for all queued device work (a no-op for the host).
void synchronize(Device device);

// True when this build can run cases on Device::kCUDA and a GPU is present.
bool cuda_available();

}  // namespace flashband::testing
