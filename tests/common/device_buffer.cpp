#include "device_buffer.h"

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "flashband/config.h"

#if FLASHBAND_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace flashband::testing {

namespace {
#if FLASHBAND_WITH_CUDA
void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
#else
[[noreturn]] void no_cuda() {
  throw std::runtime_error("Device::kCUDA: this build of flashband has no GPU backend");
}
#endif
}  // namespace

DeviceBuffer::DeviceBuffer(Device device, std::size_t bytes) : device_(device), bytes_(bytes) {
  // Allocate at least a few bytes so every view has a valid, aligned pointer.
  const std::size_t n = bytes < 16 ? 16 : bytes;
  if (device == Device::kCPU) {
    data_ = std::aligned_alloc(64, (n + 63) / 64 * 64);
    if (!data_) throw std::bad_alloc();
    return;
  }
#if FLASHBAND_WITH_CUDA
  cuda_check(cudaMalloc(&data_, n), "cudaMalloc");
#else
  no_cuda();
#endif
}

DeviceBuffer::~DeviceBuffer() { release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : device_(o.device_), data_(std::exchange(o.data_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    release();
    device_ = o.device_;
    data_ = std::exchange(o.data_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::release() noexcept {
  if (!data_) return;
  if (device_ == Device::kCPU) {
    std::free(data_);
  } else {
#if FLASHBAND_WITH_CUDA
    cudaFree(data_);
#endif
  }
  data_ = nullptr;
}

void DeviceBuffer::upload_at(std::size_t offset, const void* host, std::size_t bytes) {
  if (offset > bytes_ || bytes > bytes_ - offset)
    throw std::out_of_range("DeviceBuffer::upload_at: past the end of the buffer");
  if (bytes == 0) return;
  char* dst = static_cast<char*>(data_) + offset;
  if (device_ == Device::kCPU) {
    std::memcpy(dst, host, bytes);
    return;
  }
#if FLASHBAND_WITH_CUDA
  cuda_check(cudaMemcpy(dst, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy H2D");
#else
  no_cuda();
#endif
}

void DeviceBuffer::fill_bytes(unsigned char value, std::size_t bytes) {
  if (bytes > bytes_) throw std::out_of_range("DeviceBuffer::fill_bytes: more bytes than allocated");
  if (bytes == 0) return;
  if (device_ == Device::kCPU) {
    std::memset(data_, value, bytes);
    return;
  }
#if FLASHBAND_WITH_CUDA
  cuda_check(cudaMemset(data_, value, bytes), "cudaMemset");
#else
  no_cuda();
#endif
}

void DeviceBuffer::download(void* host, std::size_t bytes) const {
  if (bytes > bytes_) throw std::out_of_range("DeviceBuffer::download: more bytes than allocated");
  if (bytes == 0) return;
  if (device_ == Device::kCPU) {
    std::memcpy(host, data_, bytes);
    return;
  }
#if FLASHBAND_WITH_CUDA
  cuda_check(cudaMemcpy(host, data_, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
#else
  no_cuda();
#endif
}

void synchronize(Device device) {
  if (device == Device::kCPU) return;
#if FLASHBAND_WITH_CUDA
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
#else
  no_cuda();
#endif
}

bool cuda_available() {
#if FLASHBAND_WITH_CUDA
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
#else
  return false;
#endif
}

}  // namespace flashband::testing
