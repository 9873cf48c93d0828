// File: tools/sim_validate_command.h
//
// The `heatsink-sim validate SCENARIO --runtime DIR [--out FILE] [--html FILE]`
// subcommand (sim/validate.h): runs the simulation of the scenario with the seed a
// heatsink-replay run used and compares it with that run's outputs in DIR.
// Prints a table; --out writes the same as JSON, --html as a page with
// side-by-side charts (sim/validate.h, ValidationHtml). Exit codes as the rest of
// heatsink-sim: 0 compared, 2 an error (an unreadable or mismatched input,
// named with its file and line or JSON path).
#ifndef HEATSINK_TOOLS_SIM_VALIDATE_COMMAND_H_
#define HEATSINK_TOOLS_SIM_VALIDATE_COMMAND_H_

#include <string>

#include "CLI/CLI.hpp"

struct ValidateArgs {
  std::string scenario;
  std::string runtime_dir;
  std::string out;
  std::string html;         // empty: no page
  std::string calibration;  // empty: none
};

// Adds the subcommand to `app`, its flags bound to `args` (which must outlive
// the parse).
CLI::App* AddValidateCommand(CLI::App* app, ValidateArgs* args);
// Runs it; returns the process exit code.
int RunValidate(const ValidateArgs& args);

#endif  // HEATSINK_TOOLS_SIM_VALIDATE_COMMAND_H_
