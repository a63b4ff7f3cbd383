// flashband._C: the thin native layer under the `flashband` Python package. The public,
// FlashInfer-named API lives in python/flashband/*.py; everything here takes already
// normalised arguments (strings for enums, an int for the stream, arrays for tensors).
#include "bind.h"

NB_MODULE(_C, m) {
  m.doc() = "flashband native bindings (use the `flashband` package, not this module)";
  flashband::python::bind_errors(m);
  flashband::python::bind_options(m);
  flashband::python::bind_single(m);
  flashband::python::bind_batch(m);
  flashband::python::bind_merge(m);
  flashband::python::bind_capability(m);
}
