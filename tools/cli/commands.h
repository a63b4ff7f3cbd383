// The subcommands of the flashband command line.
#pragma once
#include "cli/args.h"
#include "case.h"

namespace flashband::cli {

int cmd_run(Args& args);
int cmd_caps(Args& args);
int cmd_demo(Args& args);

// Host tensors for backend cpu; CUDA for GPU backends; auto picks CUDA when a device exists.
Device device_for(Backend backend);
// One result as a table row or a JSON object.
// `label` replaces the case name in the table when given.
void print_result(const testing::Case& c, const testing::CaseResult& r, bool json, bool checked,
                  const char* label = nullptr);
void print_result_header();

}  // namespace flashband::cli
