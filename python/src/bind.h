// One registration function per binding file; module.cpp calls them in order.
#pragma once
#include <nanobind/nanobind.h>

namespace flashband::python {

void bind_errors(nanobind::module_& m);      // errors.cpp: flashband::Error -> flashband.errors
void bind_options(nanobind::module_& m);     // single.cpp: Options, RunInfo
void bind_single(nanobind::module_& m);      // single.cpp: single_prefill
void bind_batch(nanobind::module_& m);       // batch.cpp: ragged/paged prefill, paged decode
void bind_merge(nanobind::module_& m);       // merge.cpp: merge_state(s)
void bind_capability(nanobind::module_& m);  // capability.cpp: supports, workspace size, build

}  // namespace flashband::python
