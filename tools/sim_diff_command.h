// File: tools/sim_diff_command.h
//
// The `heatsink-sim diff A B` subcommand (sim/decision_log.h): compares two
// decision logs and prints added, removed and changed decisions. By default
// (the regression setting) records match at equal times and every field
// counts; --time-tolerance-ms, --ignore and --b-replay-summary compare a
// simulation's log with one from real processes (docs/regression.md,
// "Against real processes"). Exit codes as the rest of heatsink-sim: 0 the
// logs are equal, 1 they differ, 2 an error (an unreadable or malformed
// input, named with its file and line).
#ifndef HEATSINK_TOOLS_SIM_DIFF_COMMAND_H_
#define HEATSINK_TOOLS_SIM_DIFF_COMMAND_H_

#include <cstdint>
#include <string>

#include "CLI/CLI.hpp"

struct DiffArgs {
  std::string a;
  std::string b;
  int keys_max = 20;
  int64_t time_tolerance_ms = 0;
  std::string ignore;
  std::string b_replay_summary;
};

// Adds the subcommand to `app`, its flags bound to `args` (which must outlive
// the parse).
CLI::App* AddDiffCommand(CLI::App* app, DiffArgs* args);
// A command line comparing a simulation with a heatsink-replay run, for the
// subcommand's help.
const char* DiffCommandExample();
// Runs it; returns the process exit code.
int RunDiff(const DiffArgs& args);

#endif  // HEATSINK_TOOLS_SIM_DIFF_COMMAND_H_
