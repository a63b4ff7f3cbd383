// Zero-copy conversion between DLPack's DLTensor and flashband::TensorView.
// Needs <dlpack/dlpack.h> (Debian libdlpack-dev; scripts/bootstrap.sh puts it in deps/dlpack).
#pragma once
#include <dlpack/dlpack.h>

#include "flashband/tensor.h"

namespace flashband {

// Throws flashband::Error naming `what` when the tensor's dtype or device has no flashband
// equivalent. A DLTensor without strides is row-major contiguous.
TensorView from_dlpack(const DLTensor& t, const char* what = "tensor");
DLTensor to_dlpack(const TensorView& t);
// The DLPack dtype of a flashband dtype (fp8: DLPack 1.1's codes, as torch exports them).
DLDataType to_dlpack_dtype(DType dtype);

}  // namespace flashband
