#include "backends/cuda/check.h"

#include <cstring>
#include <string>

#include "flashband/error.h"

namespace flashband::cuda {

namespace {
const char* base_name(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}
}  // namespace

void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line) {
  throw Error(ErrorCode::kCudaError, std::string(call) + " failed: " + cudaGetErrorName(err) + " (" +
                                         cudaGetErrorString(err) + ") at " + base_name(file) + ":" +
                                         std::to_string(line));
}

void check_launch(const char* kernel, const char* file, int line) {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) throw_cuda_error(err, (std::string("launch of ") + kernel).c_str(), file, line);
}

}  // namespace flashband::cuda
