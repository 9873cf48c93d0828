// File: tools/sim_gen_trace_command.h
//
// The `heatsink-sim gen-trace` subcommand: flags from sim/trace_gen.h's
// parameter registry (grouped by shape in --help), parsed into a
// TraceGenSpec, and the trace written as Mooncake JSONL (docs/gen-trace.md).
// Exit codes as the rest of heatsink-sim: 0 done, 2 a bad flag (named) or a
// trace past a *-max limit.
#ifndef HEATSINK_TOOLS_SIM_GEN_TRACE_COMMAND_H_
#define HEATSINK_TOOLS_SIM_GEN_TRACE_COMMAND_H_

#include <string>
#include <vector>

#include "CLI/CLI.hpp"

struct GenTraceArgs {
  std::string shape;
  std::string seed = "1";  // parsed here: CLI11 wraps "-1" into a uint64_t
  std::string out = "-";
  // One per heatsink::sim::TraceGenParams() entry, in its order.
  std::vector<std::string> values;
  std::vector<CLI::Option*> options;
};

// Adds the subcommand to `app`, its flags bound to `args` (which must outlive
// the parse).
CLI::App* AddGenTraceCommand(CLI::App* app, GenTraceArgs* args);

// Runs it; returns the process exit code.
int RunGenTrace(const GenTraceArgs& args);

#endif  // HEATSINK_TOOLS_SIM_GEN_TRACE_COMMAND_H_
