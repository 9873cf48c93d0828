// heatsink-sim: the simulator's user jobs.
//
// Exit codes (all subcommands): 0 success (for `diff`: logs equal), 1 a
// difference or a failed check (for `diff`: logs differ), 2 an error (bad
// arguments, unreadable or malformed input).
#include <cstdio>
#include <iostream>
#include <string>

#include "CLI/CLI.hpp"
#include "sim/decision_log.h"

namespace {

constexpr int kExitEqual = 0;
constexpr int kExitDifferent = 1;
constexpr int kExitError = 2;

int RunDiff(const std::string& path_a, const std::string& path_b, int keys_max) {
  auto a = heatsink::sim::ReadDecisionLogFile(path_a);
  if (!a.ok()) {
    std::cerr << "heatsink-sim diff: " << a.status().message() << "\n";
    return kExitError;
  }
  auto b = heatsink::sim::ReadDecisionLogFile(path_b);
  if (!b.ok()) {
    std::cerr << "heatsink-sim diff: " << b.status().message() << "\n";
    return kExitError;
  }
  const heatsink::sim::DecisionDiff diff = heatsink::sim::DiffDecisionLogs(*a, *b);
  std::cout << heatsink::sim::FormatDecisionDiff(diff, *a, *b, path_a, path_b, keys_max);
  return diff.equal() ? kExitEqual : kExitDifferent;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "heatsink-sim: replay workloads against the Heatsink core in a deterministic "
      "discrete-event simulation.\n"
      "Exit codes: 0 success/equal, 1 different/check failed, 2 error."};
  app.require_subcommand(1);

  CLI::App* diff = app.add_subcommand(
      "diff",
      "Compare two decision logs (decisions.jsonl): added, removed and changed admission "
      "decisions, grouped by reason and by key, with the first divergence in context.");
  std::string diff_a, diff_b;
  int keys_max = 20;
  diff->add_option("A", diff_a, "Reference decision log (for example the golden file)")
      ->required()
      ->check(CLI::ExistingFile);
  diff->add_option("B", diff_b, "Decision log to compare against A")
      ->required()
      ->check(CLI::ExistingFile);
  diff->add_option("--keys", keys_max, "How many keys to list in the by-key table")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : kExitError;
  }
  if (*diff) return RunDiff(diff_a, diff_b, keys_max);
  return kExitError;
}
