// `flashband run` judges its case through the library's own checks before it allocates the
// random inputs, and reports each refusal under the flag that set the value.
#pragma once
#include <string>

#include "case.h"

namespace flashband::cli {

// A library message with its argument names (num_qo_heads, head_dim, ...) replaced by the
// command line's flags (--heads, --head-dim, ...).
std::string in_flag_names(const std::string& message);

// Throws flashband::Error, in flag names, for anything the library would refuse in c
// (options, heads, what the backend supports) and for inputs larger than this machine's
// memory; allocates nothing.
void check_case(const testing::Case& c);

}  // namespace flashband::cli
