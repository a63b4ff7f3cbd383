// flashband::Error: the one exception type every entry point throws.
#pragma once
#include <stdexcept>
#include <string>

namespace flashband {

enum class ErrorCode {
  kInvalidArgument,  // a shape, dtype, value or pointer the contract forbids
  kUnsupported,      // valid input that the chosen backend (or every backend) cannot honour
  kNotBuilt,         // the kernel instantiation exists in the table but not in this build
  kCudaError,        // a CUDA / cuDNN runtime call failed
  kInternal,         // a bug in flashband
};

const char* error_code_name(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace flashband
