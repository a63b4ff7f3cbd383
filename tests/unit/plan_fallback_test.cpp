// `auto` moves on when a backend refuses at plan time; explicit requests and other errors
// do not.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "plan/make_plan.h"

namespace flashband::detail {
namespace {

Error refuse(const char* why) { return Error(ErrorCode::kUnsupported, why); }

TEST(PlanFallback, AutoTakesTheFirstBackendThatPlans) {
  std::vector<std::size_t> tried;
  first_accepting(3, true, [&](std::size_t i) {
    tried.push_back(i);
    if (i == 0) throw refuse("backend 'cudnn': cuDNN refused the graph");
  });
  EXPECT_EQ(tried, (std::vector<std::size_t>{0, 1}));
}

TEST(PlanFallback, ExplicitBackendDoesNotFallBack) {
  int calls = 0;
  EXPECT_THROW(first_accepting(3, false, [&](std::size_t) {
                 ++calls;
                 throw refuse("no");
               }),
               Error);
  EXPECT_EQ(calls, 1);
}

TEST(PlanFallback, OtherErrorsPropagateAtOnce) {
  int calls = 0;
  try {
    first_accepting(3, true, [&](std::size_t) {
      ++calls;
      throw Error(ErrorCode::kInvalidArgument, "workspace: too small");
    });
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }
  EXPECT_EQ(calls, 1);
}

TEST(PlanFallback, AllRefusedNamesEveryReason) {
  try {
    first_accepting(2, true, [&](std::size_t i) { throw refuse(i == 0 ? "first reason" : "second reason"); });
    FAIL();
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(msg.find("first reason"), std::string::npos) << msg;
    EXPECT_NE(msg.find("second reason"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace flashband::detail
