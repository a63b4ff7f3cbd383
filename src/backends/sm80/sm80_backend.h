// What connects the sm80 backend to dispatch (backend_ops.cpp): its kernel registration and
// its planner. Workspace sizing is in workspace.h.
#pragma once
#include "flashband/attention.h"

namespace flashband {
namespace detail {
struct Plan;
void plan_sm80(Plan& plan, const Workspace& workspace);
}  // namespace detail
namespace dispatch {
class Registry;
void register_sm80_kernels(Registry& r);
}  // namespace dispatch
}  // namespace flashband
