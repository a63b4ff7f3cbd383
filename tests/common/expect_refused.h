// The check every bad-input test makes: the call throws flashband::Error kInvalidArgument
// whose message contains `needle` (the argument's name and what it got).
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "flashband/error.h"

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

}  // namespace flashband::testing
