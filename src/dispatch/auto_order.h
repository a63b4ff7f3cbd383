// auto's order as data: one row per rule, keyed by what the choice depends on, each with the
// measurement that set it. The first row that matches a problem gives the backends auto
// tries, fastest first counting plan() where the row re-plans every step; the README lists
// the rows (support_matrix.cpp), RunInfo::selection names the one a plan used.
#pragma once
#include <vector>

#include "flashband/capability.h"

namespace flashband::dispatch {

enum class OpClass { kAny, kPrefill, kDecode };
enum class GraphMatch { kAny, kEager, kGraph };  // Options::cuda_graph

struct AutoRule {
  const char* name;
  Device device = Device::kCUDA;
  OpClass ops = OpClass::kAny;
  GraphMatch graph = GraphMatch::kAny;
  int min_arch = 0, max_arch = 1000;  // compute capability x 10 of the problem's device
  std::vector<Backend> order;
  const char* why;  // the measurement, as a docs/findings.md entry ("F25") or section
};

const std::vector<AutoRule>& auto_rules();
bool rule_matches(const AutoRule& rule, const ProblemDesc& problem, int arch);
// The first matching row; the table ends in rows that match every problem of each device.
const AutoRule& auto_rule(const ProblemDesc& problem, int arch);

}  // namespace flashband::dispatch
