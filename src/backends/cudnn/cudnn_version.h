// The cuDNN version loaded at run time (cudnnGetVersion(), e.g. 91900 for 9.19.0); the
// capability table's known-bad rows are matched against it. Defined by the cudnn backend.
#pragma once
#include <string>

namespace flashband::cudnn_backend {
int runtime_version();
// The same number, under the name the backend's other code uses.
inline int cudnn_runtime_version() { return runtime_version(); }
// The version of the cuDNN headers this build compiled against (CUDNN_VERSION).
int compiled_version();
// "9.19.0" for 91900.
std::string version_string(int version);
}  // namespace flashband::cudnn_backend
