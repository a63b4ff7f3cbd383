#include "backends/cudnn/cudnn_version.h"

#include <cudnn.h>

namespace flashband::cudnn_backend {

int runtime_version() {
  // The loaded library can differ from the headers (e.g. PyTorch's pip cuDNN); ask it.
  static const int version = static_cast<int>(cudnnGetVersion());
  return version;
}

int compiled_version() { return CUDNN_VERSION; }

std::string version_string(int version) {
  // cuDNN 9 numbers versions as major * 10000 + minor * 100 + patch.
  return std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
         std::to_string(version % 100);
}

}  // namespace flashband::cudnn_backend
