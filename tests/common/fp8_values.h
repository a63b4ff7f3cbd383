// fp8 codes (float8_e4m3fn, float8_e5m2) decoded from the formats' definitions, independently
// of any backend's conversion: what the oracle and the conversion tests read fp8 bytes with.
#pragma once
#include <cstdint>

#include "flashband/tensor.h"

namespace flashband::testing {

// e4m3fn: 1 sign, 4 exponent (bias 7), 3 mantissa bits, no infinities, NaN = S.1111.111.
// e5m2: 1 sign, 5 exponent (bias 15), 2 mantissa bits, IEEE-like infinities and NaNs.
// Every value is exact in double.
double fp8_value(DType fmt, uint8_t code);

}  // namespace flashband::testing
