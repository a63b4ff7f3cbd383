// Every flashband::Error becomes an instance of the matching class of flashband/errors.py
// (InvalidArgumentError is also a ValueError, UnsupportedError a NotImplementedError), with
// the C++ message unchanged. The classes are defined in Python so that they can use
// multiple inheritance and be documented and pickled like any other Python exception.
#include <nanobind/nanobind.h>

#include "bind.h"
#include "flashband/error.h"

namespace flashband::python {
namespace {

namespace nb = nanobind;

// Borrowed for the life of the process: the module is never unloaded, and leaking avoids
// decref-after-finalisation at exit.
PyObject* g_classes[5] = {};

int class_index(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return 0;
    case ErrorCode::kUnsupported: return 1;
    case ErrorCode::kNotBuilt: return 2;
    case ErrorCode::kCudaError: return 3;
    case ErrorCode::kInternal: return 4;
  }
  return 4;
}

void translate(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const Error& e) {
    PyObject* cls = g_classes[class_index(e.code())];
    PyErr_SetString(cls ? cls : PyExc_RuntimeError, e.what());
  }
}

}  // namespace

void bind_errors(nb::module_&) {
  // flashband/__init__.py imports flashband.errors before _C, so this finds it loaded.
  nb::module_ errors = nb::module_::import_("flashband.errors");
  const char* names[5] = {"InvalidArgumentError", "UnsupportedError", "NotBuiltError",
                          "CudaError", "InternalError"};
  for (int i = 0; i < 5; ++i) g_classes[i] = nb::object(errors.attr(names[i])).release().ptr();
  nb::register_exception_translator(translate);
}

}  // namespace flashband::python
