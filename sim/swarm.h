// File: sim/swarm.h
//
// `heatsink-sim swarm`: randomized fault simulation over a range of seeds
// (docs/swarm.md). Each seed generates a scenario (sim/swarm_generator.h),
// loads it through the ordinary scenario loader and runs it with the core's
// invariant checks after every event and the swarm's own named invariants
// and liveness checks (sim/swarm_checker.h).
//
// A failing seed prints a report (seed, invariant name and message, the last
// events, the scenario file written under the output directory and the exact
// replay commands); the report is a pure function of the seed, so the replay
// prints it again byte for byte. Seeds may run on several threads; reports
// are always printed in seed order.
//
// Example:
//   SwarmOptions options;
//   options.seed_first = 1;
//   options.seed_last = 200;
//   SwarmSummary summary = RunSwarm(options, std::cout, std::cerr);
//   return summary.failed == 0 ? 0 : 1;
#ifndef HEATSINK_SIM_SWARM_H_
#define HEATSINK_SIM_SWARM_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/scenario.h"
#include "sim/swarm_checker.h"

namespace heatsink::sim {

// The outcome of one seed (or one scenario file).
struct SwarmSeedResult {
  uint64_t seed = 0;
  std::string scenario_name;
  bool passed = false;
  // On failure: the invariant's name ("core.master",
  // "core.dynamic_replication", a swarm_checker.h name, or "run_error" for a
  // run that could not complete) and its message.
  std::string invariant;
  std::string message;
  TimeNs t_ns = 0;                         // simulated time of the failure
  uint64_t event = 0;                      // events run when it was found
  std::vector<std::string> recent_events;  // oldest first
  int64_t events = 0;                      // events simulated
  int64_t leases_accepted = 0;             // dynamic copy leases granted
  int64_t copy_ends_accepted = 0;          // dynamic copies completed
  int64_t proposals_accepted = 0;          // scripted proposal calls answered OK
  int64_t master_crashes = 0;              // master_crash faults that struck
  std::string scenario_json;               // the scenario's text (generated seeds)
};

// Runs one loaded scenario under the swarm checks.
SwarmSeedResult RunSwarmScenario(const Scenario& scenario, const SwarmCheckerOptions& checker);

// Generates, loads and runs the scenario of one seed.
SwarmSeedResult RunSwarmSeed(uint64_t seed, const SwarmCheckerOptions& checker);

// The failure report of a seed: deterministic text, ending in a newline.
// `scenario_path` is where the scenario was written ("" if it was not);
// `program` names the binary in the replay commands.
std::string FormatSwarmFailure(const SwarmSeedResult& result, const std::string& scenario_path,
                               const std::string& program);

// "A..B" (or "N"): INVALID_ARGUMENT unless A <= B, both in [0, 2^63 - 1].
[[nodiscard]] absl::StatusOr<std::pair<uint64_t, uint64_t>> ParseSeedRange(const std::string& text);

struct SwarmOptions {
  uint64_t seed_first = 1;
  uint64_t seed_last = 1;
  int jobs = 1;                       // seeds run at once (threads)
  std::string out_dir = "out/swarm";  // failing seeds' scenarios are written here
  bool keep_scenarios = false;        // ... and, with this, every seed's
  // Stop starting new seeds after this much wall time (0: no budget). The
  // seeds run are always a prefix of the range.
  int64_t time_budget_s = 0;
  int64_t progress_every = 100;  // a progress line on `err` every N seeds (0: none)
  std::string program = "heatsink-sim";
  SwarmCheckerOptions checker;
};

struct SwarmSummary {
  int64_t seeds_run = 0;
  int64_t passed = 0;
  int64_t failed = 0;
  int64_t events = 0;
  int64_t leases_accepted = 0;  // over all seeds run
  int64_t copy_ends_accepted = 0;
  int64_t proposals_accepted = 0;
  int64_t master_crashes = 0;
  int64_t wall_ms = 0;
  bool budget_exhausted = false;  // the time budget stopped the range early
};

// Runs the range; failure reports and the final summary go to `out`,
// progress lines to `err`.
SwarmSummary RunSwarm(const SwarmOptions& options, std::ostream& out, std::ostream& err);

// "swarm: N seeds run, P passed, F failed, E events, W ms wall; L leases,
// C copies, G proposals granted, M master crashes" (+ a note when the budget
// stopped the range).
std::string FormatSwarmSummary(const SwarmSummary& summary);

}  // namespace heatsink::sim

#endif  // HEATSINK_SIM_SWARM_H_
