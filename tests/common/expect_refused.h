// The check every bad-input test makes: the call throws flashband::Error kInvalidArgument
// whose message contains `needle` (the argument's name and what it got).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "flashband/error.h"
#include "flashband/options.h"

namespace flashband::testing {

inline void expect_invalid_argument(const std::function<void()>& call, const std::string& needle) {
  try {
    call();
    ADD_FAILURE() << "accepted; expected an error naming '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "message: " << e.what();
  }
}

// Options asking for the LSE too, so that a refused call has a second output to leave alone.
inline Options lse_options() {
  Options o;
  o.return_lse = true;
  return o;
}

// Every element still holds the sentinel the test filled it with.
template <class T>
bool all_sentinel(const std::vector<T>& v, T sentinel) {
  return std::all_of(v.begin(), v.end(), [&](T x) { return x == sentinel; });
}

// expect_invalid_argument, and the outputs still hold their sentinels (SPEC.md: a refused
// call writes nothing).
inline void expect_refused_untouched(const std::function<void()>& call, const std::string& needle,
                                     const std::function<bool()>& untouched) {
  expect_invalid_argument(call, needle);
  EXPECT_TRUE(untouched()) << "an output was written despite the error";
}

}  // namespace flashband::testing
