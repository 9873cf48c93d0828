// File: sim/estimate.h
//
// Observe-mode volume estimates: what `enforce` would cost, computed from the
// decisions an `observe` run logged (decisions.jsonl, docs/decision-log.md).
// The same estimator reads a log of the simulator or of the production
// runtime in observe mode; `heatsink-sim estimate` is its command line
// (docs/estimate.md).
//
// The model. Observe mode stops every admission after placement with outcome
// `would_propose` and starts the admission cooldown, so each would_propose is
// a copy enforce would have started. What observe cannot see is the effect of
// the copies themselves: the replicas they would create count against
// `dynamic_replication_max_memory_replicas`. The estimator replays the
// would_propose records in time order and keeps, per object (tenant + key,
// + target domain when the log is domain-aware), the replicas enforce would
// hold:
//   - a would_propose whose object already holds `max_memory_replicas`
//     readable MEMORY replicas (originals included: `original_replicas` per
//     object in stage 1; in a domain-aware log the originals' domain is not
//     logged and they count as 0 in the target domain) is counted as
//     `capped` (enforce would reject it with `replica_limit`), otherwise as
//     one copy of the object's size;
//   - a would-be replica is held until the object is removed or put again
//     (a new version: known from the scenario's operations, or from a
//     would_propose record with a different version), and then released.
// Eviction of dynamic replicas is not modelled: the extra memory is what the
// copies would hold without eviction (an upper bound while segments have
// room). Copy duration is not modelled either: a copy counts at its decision
// time.
//
// Determinism: records are processed in log order (time order), groups and
// objects are ordered maps; the output is a pure function of the inputs.
#ifndef HEATSINK_SIM_ESTIMATE_H_
#define HEATSINK_SIM_ESTIMATE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/env/time.h"
#include "sim/decision_log.h"
#include "sim/runner.h"
#include "sim/scenario.h"

namespace heatsink::sim {

struct EstimateOptions {
  // dynamic_replication_max_memory_replicas of the run the log comes from.
  int64_t max_memory_replicas = 2;
  // Readable replicas an object has before any dynamic copy (stage 1).
  int64_t original_replicas = 1;
  // Size of an object whose size is not known from the scenario or the log
  // (an extra `size_bytes` key in a record is used when present).
  uint64_t default_object_bytes = 0;
  // Interval of the time series (copies per second peak, extra memory).
  DurationNs time_step_ns = kNsPerSec;
  // Length of the observed period; 0: up to the last record's interval end.
  DurationNs duration_ns = 0;
};

// A put (size_bytes > 0 or 0) or a remove (removed) of an object at t_ns,
// in time order; the estimator takes sizes and replica releases from them.
struct ObjectEvent {
  TimeNs t_ns = 0;
  std::string tenant;
  std::string key;
  bool removed = false;
  uint64_t size_bytes = 0;
};

// Totals for one (requester domain, target domain) pair; "-" stands for a
// null domain (stage 1 logs).
struct EstimateGroup {
  std::string requester_domain;
  std::string target_domain;
  int64_t would_propose = 0;
  int64_t copies = 0;
  int64_t capped = 0;
  uint64_t bytes = 0;
  uint64_t extra_memory_peak_bytes = 0;  // this group's own peak
};

struct EstimateInterval {
  TimeNs t_start_ns = 0;
  int64_t copies = 0;
  uint64_t bytes = 0;
  uint64_t extra_memory_bytes = 0;  // at the end of the interval
};

// The limit lines of an estimate's observe run (sim/limit_lines.h) and what
// the would-be replicas would have removed of its avoidable cross-domain
// bytes: a would_propose placing a replica of (object, version) in its
// target domain at time t removes that pair's avoidable reads completed
// after t (copy time not counted, so an upper bound on what enforce
// removes). Only logs that name target domains (domain-aware) say which
// domain a replica serves; otherwise removed_bytes is nullopt.
struct EstimateLimits {
  uint64_t avoidable_bytes = 0;
  uint64_t online_removed_bytes = 0;
  uint64_t clairvoyant_removed_bytes = 0;
  uint64_t clairvoyant_memory_mean_bytes = 0;
  std::optional<uint64_t> removed_bytes;
};

struct Estimate {
  int64_t decisions = 0;        // records read
  int64_t would_propose = 0;    // outcome would_propose
  int64_t accepted = 0;         // outcome accepted (an enforce log; not estimated)
  int64_t rejected = 0;
  int64_t copies = 0;           // would_propose that enforce would copy
  int64_t capped = 0;           // would_propose enforce would reject at the replica limit
  uint64_t bytes = 0;           // bytes those copies would move
  int64_t sizes_unknown = 0;    // copies sized with default_object_bytes
  DurationNs duration_ns = 0;
  DurationNs time_step_ns = 0;
  uint64_t extra_memory_peak_bytes = 0;
  TimeNs extra_memory_peak_t_ns = 0;
  uint64_t extra_memory_final_bytes = 0;
  int64_t copies_interval_peak = 0;     // most copies in one interval
  TimeNs copies_interval_peak_t_ns = 0;
  std::vector<EstimateInterval> intervals;
  std::vector<EstimateGroup> groups;    // sorted by (requester, target)
  // Scenario estimates only (the observe run's reads); nullopt for a log.
  std::optional<EstimateLimits> limits;

  // copies / duration; 0 for an empty period.
  double copies_per_second_mean() const;
  // copies_interval_peak scaled to one second.
  double copies_per_second_peak() const;
};

// The estimate of a decision log. `objects` (may be empty) must be in time
// order. INVALID_ARGUMENT for options out of range.
[[nodiscard]] absl::StatusOr<Estimate> EstimateFromDecisions(
    const std::vector<LoggedDecision>& decisions, const std::vector<ObjectEvent>& objects,
    const EstimateOptions& options);

// The puts and removes of a scenario's operation stream for the given seed
// (the stream the run replays), restricted to `keys` ("tenant\0key") when
// not empty.
[[nodiscard]] absl::StatusOr<std::vector<ObjectEvent>> ScenarioObjectEvents(
    const Scenario& scenario, uint64_t seed, const std::vector<std::string>& keys);

// Runs `scenario` in observe mode (dynamic_replication_mode=observe appended
// to `run_options.overrides`), writing its outputs into run_options.out_dir
// (required), and estimates from its decision log with the run's knobs
// (max replicas, sampling step, duration) and the scenario's object sizes.
struct ScenarioEstimate {
  RunResult run;
  Estimate estimate;
};
[[nodiscard]] absl::StatusOr<ScenarioEstimate> EstimateScenario(const Scenario& scenario,
                                                               RunOptions run_options);

// A scenario that replays a Mooncake trace on the default topology: two
// prefill and two decode domains of two hosts each (one 16 GiB segment, one
// client and one instance per host), dynamic replication domain-aware, the
// trace's blocks `tokens_per_block` x `kv_bytes_per_token` bytes, replayed
// at `replay_speed`, for the trace's span plus 10 s (or `duration_s`).
struct TraceScenarioOptions {
  double replay_speed = 1.0;
  int64_t request_limit = 0;  // 0: every request
  int64_t duration_s = 0;     // 0: from the trace
  uint64_t seed = 1;
};
[[nodiscard]] absl::StatusOr<Scenario> TraceScenario(const std::string& trace_path,
                                                     const TraceScenarioOptions& options);

// Human report: totals, per (requester, target) domain, the busiest interval.
std::string FormatEstimate(const Estimate& estimate, const std::string& source);

// One JSON object (keys in a fixed order; numbers with fixed decimals) with
// the totals, groups and intervals: estimate.json, and what a sweep cell
// hands back to the parent process.
std::string EstimateToJson(const Estimate& estimate, const std::string& source);

// Copies per second, extra memory and the other totals read back from
// EstimateToJson's output (a sweep cell's result).
struct EstimateTotals {
  int64_t would_propose = 0;
  int64_t copies = 0;
  int64_t capped = 0;
  uint64_t bytes = 0;
  double copies_per_second_mean = 0;
  double copies_per_second_peak = 0;
  uint64_t extra_memory_peak_bytes = 0;
  std::optional<EstimateLimits> limits;
};
[[nodiscard]] absl::StatusOr<EstimateTotals> ParseEstimateTotals(const std::string& json_text);
EstimateTotals TotalsOf(const Estimate& estimate);

}  // namespace heatsink::sim

#endif  // HEATSINK_SIM_ESTIMATE_H_
