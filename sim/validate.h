// File: sim/validate.h
//
// `heatsink-sim validate SCENARIO --runtime DIR`: how far the simulation of a
// scenario is from a replay of it on real processes (heatsink-replay,
// tools/replay/replay_run.h). The simulation runs with the replay's seed;
// its decisions and summary are compared with DIR/decisions.jsonl (the real
// master's decision log) and DIR/summary.json:
//
//   - admitted keys: Jaccard index of the sets of (tenant, key, requester
//     domain, target domain) over accepted decisions (1 when both are empty);
//   - admission lag: accepted decisions matched per decision key in time
//     order (the i-th acceptance of a key in one log with the i-th in the
//     other); runtime time minus simulated time, median and p90 (nearest
//     rank), runtime times placed on the scenario's time line with the
//     replay's t0_steady_ns and time_scale;
//   - relative errors |runtime - sim| / |sim| of bytes read by distance,
//     each host's share of the bytes served, the copies the master completed
//     (dynamic_replication_copy_tasks_completed_total in both worlds), extra
//     memory (peak, final) and reads; undefined (null) when sim is 0 and the
//     runtime is not;
//   - read latency p50/p99/p999 with their relative errors. Without a
//     calibration (sim/calibration.h, `heatsink-replay calibrate`) the
//     simulator's network is the scenario's, not this machine's, so these
//     errors measure the model, not the decisions; with one, the scenario's
//     network is set to the machine's loopback costs first.
//
// Inputs that cannot be read, do not parse, or belong to another scenario or
// seed are errors naming the file (and the line for JSON), INVALID_ARGUMENT
// or NOT_FOUND.
#ifndef HEATSINK_SIM_VALIDATE_H_
#define HEATSINK_SIM_VALIDATE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/env/time.h"
#include "core/replication/decision.h"
#include "sim/calibration.h"
#include "sim/run_result.h"
#include "sim/scenario.h"

namespace heatsink::sim {

// What validate needs from a replay's summary.json.
struct RuntimeSummary {
  std::string scenario_name;
  uint64_t seed = 0;
  double time_scale = 1.0;
  int64_t t0_steady_ns = 0;
  int64_t reads = 0;
  DistanceBytes bytes_read;
  std::vector<std::pair<std::string, int64_t>> host_bytes_served;  // topology order
  std::optional<int64_t> copies_completed;  // null when the master could not be read
  int64_t extra_memory_peak_bytes = 0;
  int64_t extra_memory_final_bytes = 0;
  int64_t latency_p50_ns = 0;
  int64_t latency_p99_ns = 0;
  int64_t latency_p999_ns = 0;
};

// Parses summary.json text; errors name `source` (and the line of a JSON
// syntax error, or the JSON path of a missing or mistyped field).
[[nodiscard]] absl::StatusOr<RuntimeSummary> ParseRuntimeSummary(const std::string& text,
                                                                 const std::string& source);
// Reads and parses a summary.json file (NOT_FOUND when it cannot be read).
[[nodiscard]] absl::StatusOr<RuntimeSummary> ReadRuntimeSummaryFile(const std::string& path);

// An accepted decision on the scenario's time line.
struct AcceptedDecision {
  TimeNs t_ns = 0;
  std::string identity;  // tenant, key, requester domain, target domain
};

// The accepted decisions of a log; `t0_ns` and `time_scale` map its times to
// simulated time ((t - t0) / scale); the simulator's own log uses 0 and 1.
std::vector<AcceptedDecision> AcceptedDecisions(const std::vector<DecisionRecord>& records,
                                                int64_t t0_ns, double time_scale);

// |A ∩ B| / |A ∪ B| of the identities; 1 when both are empty.
double DecisionJaccard(const std::vector<AcceptedDecision>& sim,
                       const std::vector<AcceptedDecision>& runtime);

struct LagStats {
  int64_t matched = 0;
  int64_t median_ns = 0;  // nearest rank; 0 when nothing matched
  int64_t p90_ns = 0;
};
LagStats AdmissionLag(const std::vector<AcceptedDecision>& sim,
                      const std::vector<AcceptedDecision>& runtime);

// |runtime - sim| / |sim|; 0 when both are 0; nullopt when only sim is 0.
std::optional<double> RelativeError(double sim, double runtime);

struct ValidationRow {
  std::string metric;
  double sim = 0;
  double runtime = 0;
  std::optional<double> relative_error;
};

struct ValidationReport {
  std::string scenario;
  uint64_t seed = 0;
  int64_t sim_accepted = 0;
  int64_t runtime_accepted = 0;
  int64_t common_accepted = 0;  // identities in both
  double jaccard = 0;
  LagStats lag;
  std::vector<ValidationRow> rows;
  std::optional<double> host_share_error_max;  // largest relative error of a host's share
  bool calibrated = false;                     // the simulation ran with a calibration applied
  // Times of the accepted decisions on the scenario's time line, ascending
  // (the page's admissions-over-time chart).
  std::vector<TimeNs> sim_accepted_ns;
  std::vector<TimeNs> runtime_accepted_ns;
};

// Compares a simulation with a replay of the same scenario and seed.
// INVALID_ARGUMENT when the replay's hosts are not the scenario's.
[[nodiscard]] absl::StatusOr<ValidationReport> CompareRuns(
    const Scenario& scenario, const RunResult& sim,
    const std::vector<DecisionRecord>& sim_decisions, const RuntimeSummary& runtime,
    const std::vector<DecisionRecord>& runtime_decisions, const std::string& runtime_summary_path,
    bool calibrated = false);

std::string FormatValidationTable(const ValidationReport& report);
std::string ValidationJson(const ValidationReport& report);
// A self-contained HTML page (sim/report_html.h): the admission figures, the
// table, and the two worlds side by side in four charts -- accepted
// admissions over time, bytes read by distance, each host's share of the
// bytes served, read latency percentiles. Same report, same bytes.
std::string ValidationHtml(const ValidationReport& report);

// The whole job: reads DIR/summary.json and DIR/decisions.jsonl, runs the
// simulation with the replay's seed (checking that it is the scenario the
// replay ran), and compares. With `calibration`, the simulation runs on the
// scenario with ApplyCalibration.
[[nodiscard]] absl::StatusOr<ValidationReport> ValidateAgainstRuntime(
    const Scenario& scenario, const std::string& runtime_dir,
    const Calibration* calibration = nullptr);

}  // namespace heatsink::sim

#endif  // HEATSINK_SIM_VALIDATE_H_
