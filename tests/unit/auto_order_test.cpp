// auto's order table (src/dispatch/auto_order.cpp): which rule a problem gets, that the
// table covers every problem, and that each rule cites a measurement docs/findings.md holds.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "dispatch/auto_order.h"

namespace flashband::dispatch {
namespace {

ProblemDesc problem(Device device, Op op, bool graph = false) {
  ProblemDesc p;
  p.device = device;
  p.op = op;
  p.cuda_graph = graph;
  return p;
}

std::string findings() {
  std::ifstream f(FLASHBAND_SOURCE_DIR "/docs/findings.md");
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(AutoOrder, EachProblemGetsItsRule) {
  EXPECT_STREQ(auto_rule(problem(Device::kCPU, Op::kPagedDecode), 0).name, "host");
  EXPECT_STREQ(auto_rule(problem(Device::kCPU, Op::kSinglePrefill), 0).name, "host");
  for (bool graph : {false, true}) {
    EXPECT_STREQ(auto_rule(problem(Device::kCUDA, Op::kPagedDecode, graph), 90).name, "decode");
    for (Op op : {Op::kSinglePrefill, Op::kRaggedPrefill, Op::kPagedPrefill})
      EXPECT_STREQ(auto_rule(problem(Device::kCUDA, op, graph), 90).name, "prefill");
  }
  // Decode takes sm80 before cuDNN (F25); prefill sm90, then cuDNN, then sm80.
  const auto& decode = auto_rule(problem(Device::kCUDA, Op::kPagedDecode), 90).order;
  ASSERT_EQ(decode.size(), 3u);
  EXPECT_EQ(decode[1], Backend::kSM80);
  const auto& prefill = auto_rule(problem(Device::kCUDA, Op::kPagedPrefill), 80).order;
  EXPECT_EQ(prefill.front(), Backend::kSM90);
  EXPECT_EQ(prefill.back(), Backend::kSM80);
}

TEST(AutoOrder, EveryProblemMatchesSomeRule) {
  for (Device d : {Device::kCPU, Device::kCUDA})
    for (Op op : {Op::kSinglePrefill, Op::kRaggedPrefill, Op::kPagedPrefill, Op::kPagedDecode})
      for (bool graph : {false, true})
        for (int arch : {0, 75, 80, 89, 90, 100, 120})
          EXPECT_NO_THROW(auto_rule(problem(d, op, graph), arch)) << static_cast<int>(d) << " " << arch;
}

TEST(AutoOrder, OrdersNameEachBackendOfTheirDeviceOnce) {
  for (const AutoRule& r : auto_rules()) {
    std::set<Backend> seen(r.order.begin(), r.order.end());
    EXPECT_EQ(seen.size(), r.order.size()) << r.name;
    if (r.device == Device::kCPU) {
      EXPECT_EQ(seen, std::set<Backend>{Backend::kCPU}) << r.name;
    } else {  // a GPU rule left without a built backend would refuse what another serves
      EXPECT_EQ(seen, (std::set<Backend>{Backend::kSM80, Backend::kSM90, Backend::kCUDNN})) << r.name;
    }
  }
}

TEST(AutoOrder, EachChoiceCitesItsMeasurement) {
  const std::string text = findings();
  ASSERT_FALSE(text.empty()) << "docs/findings.md not found";
  for (const AutoRule& r : auto_rules()) {
    if (r.order.size() == 1) continue;  // no choice to justify
    const std::string why = r.why;
    std::smatch m;
    if (std::regex_search(why, m, std::regex("^(F[0-9]+):"))) {
      EXPECT_NE(text.find("**" + m[1].str() + ". "), std::string::npos) << r.name << " cites " << m[1];
    } else {
      const std::string section = why.substr(0, why.find(' '));
      EXPECT_NE(text.find("## " + section), std::string::npos) << r.name << " cites section " << section;
    }
  }
}

}  // namespace
}  // namespace flashband::dispatch
