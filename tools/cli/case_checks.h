// `flashband run` judges its case through the library's own checks before it allocates the
// random inputs, and reports each refusal under the flag that set the value.
#pragma once
#include <string>

#include "case.h"

namespace flashband::cli {

// A library message with its argument names (num_qo_heads, head_dim, ...) replaced by the
// command line's flags (--heads, --head-dim, ...); q's dtype by q_flag, the flag that set it
// (--dtype, or --q-dtype).
std::string in_flag_names(const std::string& message, const char* q_flag = "--dtype");

// Throws flashband::Error, in flag names, for anything the library would refuse in c
// (options, heads, dtypes and scales, what the backend supports) and for inputs larger than
// this machine's memory; allocates nothing.
void check_case(const testing::Case& c, const char* q_flag = "--dtype");

}  // namespace flashband::cli
