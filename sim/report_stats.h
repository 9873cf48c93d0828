// File: sim/report_stats.h
//
// The numbers every simulator report is built from, computed from a
// RunResult: exact read latency percentiles, per-host read load balance,
// local-hit fraction, admissions by outcome, and the rows of the `compare`
// table. All deterministic: integer inputs, fixed iteration order (hosts in
// scenario order, std::map keys in sorted order), ties broken by the lowest
// index.
#ifndef HEATSINK_SIM_REPORT_STATS_H_
#define HEATSINK_SIM_REPORT_STATS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/env/time.h"
#include "sim/run_result.h"

namespace heatsink::sim {

// Checks the shape invariants the report writers rely on: hosts and
// host_domains have the same length, every per-host vector (whole run and
// per interval) has one entry per host, intervals are in increasing time
// order and time_step_ns > 0 when there are intervals. INVALID_ARGUMENT
// naming the first violation.
[[nodiscard]] absl::Status ValidateRunResult(const RunResult& run);

// Nearest-rank percentile of sorted samples: the smallest sample v such that
// at least `parts_per_million` / 1e6 of the samples are <= v, i.e. the
// sample at 1-based rank ceil(q * n) (at least rank 1). Exact: no
// interpolation, integer arithmetic. Returns 0 for no samples.
// REQUIRES: `sorted` ascending; 0 < parts_per_million <= 1'000'000.
TimeNs NearestRankPercentile(const std::vector<TimeNs>& sorted, int64_t parts_per_million);

inline constexpr int64_t kP50 = 500'000;
inline constexpr int64_t kP90 = 900'000;
inline constexpr int64_t kP99 = 990'000;
inline constexpr int64_t kP999 = 999'000;

// Read latency summary. Every field is 0 when count == 0. mean_ns is the
// floor of the exact mean.
struct LatencyPercentiles {
  int64_t count = 0;
  TimeNs min_ns = 0;
  TimeNs p50_ns = 0;
  TimeNs p90_ns = 0;
  TimeNs p99_ns = 0;
  TimeNs p999_ns = 0;
  TimeNs max_ns = 0;
  TimeNs mean_ns = 0;
};

// REQUIRES: `sorted` ascending.
LatencyPercentiles PercentilesOfSorted(const std::vector<TimeNs>& sorted);
// Sorts a copy of the samples.
LatencyPercentiles ComputeLatencyPercentiles(std::vector<TimeNs> latencies_ns);

// Read load balance across hosts (bytes served). mean = total / hosts;
// max_over_mean = max * hosts / total: 1.0 is perfectly even, `hosts` means
// one host served everything. With no hosts or no bytes, mean and
// max_over_mean are 0 and busiest_host is -1. The busiest host is the one
// with the most bytes, the lowest index on a tie.
struct HostLoad {
  uint64_t total_bytes = 0;
  uint64_t max_bytes = 0;
  double mean_bytes = 0;
  double max_over_mean = 0;
  int busiest_host = -1;  // index into RunResult::hosts
};

HostLoad ComputeHostLoad(const std::vector<uint64_t>& bytes_per_host);

// numa_local_reads / numa_reads; nullopt when there were no NUMA reads
// (the fraction is undefined, not zero).
std::optional<double> LocalHitFraction(int64_t numa_reads, int64_t numa_local_reads);

// Admission decisions by outcome, from RunResult::decisions_by_outcome
// ("accepted", "would_propose", "rejected/<reason>"). Keys of any other form
// are kept in `other` rather than dropped.
struct AdmissionCounts {
  int64_t accepted = 0;
  int64_t would_propose = 0;
  int64_t rejected = 0;                             // sum of rejected_by_reason
  int64_t dropped = 0;  // dynamic replicas dropped ("dropped/evict", "dropped/release")
  std::map<std::string, int64_t> rejected_by_reason;  // reason word -> count
  std::map<std::string, int64_t> other;
};

AdmissionCounts CountAdmissions(const std::map<std::string, int64_t>& decisions_by_outcome);

// Per-interval derived values, parallel to RunResult::intervals.
struct IntervalStats {
  HostLoad host_load;
  // The reads completed in the interval (count 0 without any, or when the
  // run's latencies do not split by interval).
  LatencyPercentiles latency;
  std::optional<double> local_hit_fraction;
  // The oracle line: the whole-block oracle's local reads / head reads
  // (nullopt without head reads).
  std::optional<double> local_hit_oracle;
};

// What a report derives from RunResult::limits and the memory samples
// (docs/outputs.md, Limit lines). Time-averaged values weigh each interval's
// end-of-interval sample by the interval's length within the run.
struct LimitStats {
  // avoidable_removed_bytes / avoidable_bytes (the run's own base); nullopt
  // when nothing was avoidable.
  std::optional<double> avoidable_removed_fraction;
  // avoidable_removed_bytes / the line's removed bytes; nullopt when the line
  // removes nothing.
  std::optional<double> of_online;
  std::optional<double> of_clairvoyant;
  uint64_t extra_memory_mean_bytes = 0;  // time-averaged (floor)
  uint64_t stored_bytes_mean = 0;        // time-averaged (floor)
  std::optional<double> extra_memory_of_stored;  // nullopt when nothing was stored
  // Time-averaged extra memory / the clairvoyant line's; nullopt when that
  // line holds nothing.
  std::optional<double> memory_of_clairvoyant;
  double extra_gib_seconds = 0;  // extra memory integrated over the run
  // extra_gib_seconds per GiB of avoidable bytes removed; nullopt when none was removed.
  std::optional<double> extra_gib_seconds_per_removed_gib;
  uint64_t even_share_bytes = 0;  // bytes served / hosts (floor)
};

LimitStats ComputeLimitStats(const RunResult& run);

// 1 - run.repeat / off.repeat: the share of the off run's avoidable bytes
// that `run` removed (compare); nullopt when the off run had none.
std::optional<double> AvoidableRemovedVsOff(const RunResult& run, const RunResult& off);

// The first run whose knob dynamic_replication_mode is `off`, or nullptr.
const RunResult* FindOffRun(const std::vector<RunResult>& runs);

// Everything a report derives from a run. REQUIRES: ValidateRunResult(run) ok.
struct RunStats {
  std::vector<TimeNs> sorted_latencies_ns;
  LatencyPercentiles latency;
  HostLoad host_load;
  std::optional<double> local_hit_fraction;
  // The run's oracle line: every interval placed at its own best (an upper
  // bound for any policy that moves whole blocks).
  std::optional<double> local_hit_oracle;
  AdmissionCounts admissions;
  std::vector<IntervalStats> intervals;
  // Highest per-interval max/mean and the first interval that reached it
  // (-1 without intervals or load).
  double interval_max_over_mean_peak = 0;
  int interval_max_over_mean_peak_index = -1;
  // Steady state: the intervals starting at or after the warm-up (the heat
  // window plus the admission cooldown, from the run's knobs: a hot key's
  // first admission and its first re-evaluation are behind it). The mean of
  // their host-load max/mean (intervals that served bytes only); nullopt when
  // none did.
  TimeNs steady_state_from_ns = 0;
  std::optional<double> steady_state_max_over_mean;
  // Time-averaged bytes held by dynamic replicas over the intervals
  // (limits.extra_memory_mean_bytes).
  double extra_memory_mean_bytes = 0;
  LimitStats limits;
  // Reads of keys that did not exist (metric sim_read_misses_total).
  int64_t read_misses = 0;
};

RunStats ComputeRunStats(const RunResult& run);

// Where RunStats' steady state starts: heat window + admission cooldown from
// the run's knobs (their defaults when the echo lacks them).
TimeNs SteadyStateFromNs(const RunResult& run);

// The label a run is shown under: RunResult::label, or "run<index+1>" when
// the label is empty.
std::string RunLabel(const RunResult& run, size_t index);

// One row of the `compare` table: a metric and one formatted cell per run.
struct CompareRow {
  std::string metric;
  std::vector<std::string> cells;
};

// The compare table's rows, in display order: latency p50/p90/p99/p999 (ms),
// reads, bytes cross-domain, bottleneck (busiest) host and its bytes, host
// load max/mean (whole run and steady state), read misses, copies, copy
// bytes, cross-domain copy bytes, extra memory peak and time-averaged,
// would-propose, accepted and dropped counts, local-hit fraction.
// REQUIRES: stats[i] == ComputeRunStats(runs[i]).
std::vector<CompareRow> BuildCompareRows(const std::vector<RunResult>& runs,
                                         const std::vector<RunStats>& stats);

}  // namespace heatsink::sim

#endif  // HEATSINK_SIM_REPORT_STATS_H_
