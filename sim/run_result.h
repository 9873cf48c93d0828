// File: sim/run_result.h
//
// What one simulated run measured, as plain data: the driver fills it, the
// report writers (sim/report*.h) turn it into summary.json, CSV time series,
// per-request CSV and report.html, and `compare` puts several side by side.
// Everything here is deterministic for a scenario and seed except
// `wall_time_ms`, which report writers keep out of the files that the
// determinism check hashes (it goes to timing.json and stdout only).
#ifndef HEATSINK_SIM_RUN_RESULT_H_
#define HEATSINK_SIM_RUN_RESULT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/env/time.h"
#include "sim/limit_lines.h"

namespace heatsink::sim {

// Bytes read by the distance between reader and the replica it read.
struct DistanceBytes {
  uint64_t same_host = 0;
  uint64_t same_domain = 0;   // other host, same domain
  uint64_t cross_domain = 0;
};

// One sampling interval of the time series ([t_start_ns, t_start_ns + step)).
struct IntervalSample {
  TimeNs t_start_ns = 0;
  int64_t reads = 0;                       // object reads completed in the interval
  DistanceBytes bytes;                     // bytes read in the interval by distance
  std::vector<uint64_t> host_bytes_served; // per host (RunResult::hosts order)
  int64_t replica_count = 0;               // readable MEMORY replicas at the end of the interval
  int64_t dynamic_replica_count = 0;       // of which dynamic
  uint64_t extra_memory_bytes = 0;         // bytes held by dynamic replicas (incl. in-flight reservations)
  uint64_t stored_bytes = 0;               // bytes held by everything else (ordinary replicas, puts)
  int64_t copies_completed = 0;            // REPLICA_COPY completions in the interval
  uint64_t copy_bytes = 0;
  // Bytes background flows (every copy) moved in the interval, as the
  // network counts them (partial progress of moving copies included).
  uint64_t background_bytes = 0;
  int64_t numa_reads = 0;                  // head reads inside worker hosts
  int64_t numa_local_reads = 0;            // of which served from the preferred (local) node
  // The oracle line: local reads of the best whole-block placement for this
  // interval's reads, summed over hosts (NumaIntervalStats below).
  int64_t numa_oracle_local_reads = 0;
};

// One sampling interval of one host, for numa.csv and the oracle line.
struct NumaIntervalStats {
  int64_t head_reads = 0;
  int64_t local_reads = 0;
  // The oracle line (whole blocks): the local reads of the best placement of
  // whole fixed-head blocks for this interval's reads: the preferred
  // region's block count of the blocks that served the most reads, blocks as
  // they are composed at the interval's end (exchanges move whole blocks, so
  // a block keeps its heads). Arena chunks and chunks removed before the
  // interval ended count as they were served. An upper bound: moves are free
  // and arena blocks in the preferred region are not subtracted.
  int64_t oracle_local_reads = 0;
  // The same with single heads instead of whole blocks (the preferred
  // region's head count of the most-read heads): the gap between the two
  // lines is what mixed blocks (hot and cold heads together) cost.
  int64_t head_oracle_local_reads = 0;
  // Promotion state at the interval's end.
  int64_t exchanges = 0;         // in the interval
  int64_t promotion_rounds = 0;  // in the interval
  int64_t head_trades = 0;       // hot copies traded into the preferred region
  int64_t eligible_local_blocks = 0;
  int64_t eligible_foreign_blocks = 0;
  std::optional<double> coldest_local_score;   // eligible preferred block
  std::optional<double> hottest_foreign_score;  // eligible foreign block
};

// One NUMA host in one interval (numa.csv).
struct NumaHostSample {
  TimeNs t_start_ns = 0;
  int32_t host = 0;  // index into RunResult::hosts
  NumaIntervalStats stats;
};

// One request of a P/D trace replay (or one read op of a synthetic workload).
struct RequestSample {
  int64_t id = 0;
  TimeNs arrival_ns = 0;
  TimeNs done_ns = 0;          // all of the request's store reads/writes finished
  std::string prefill_instance;
  std::string decode_instance;
  int64_t blocks_hit = 0;      // prefix blocks read from the store
  int64_t blocks_missed = 0;   // blocks computed and put
  uint64_t bytes_read = 0;
  uint64_t cross_domain_bytes = 0;
};

struct RunResult {
  // Identity.
  std::string scenario_name;
  std::string scenario_path;
  std::string scenario_json;                          // the scenario echo (as loaded, canonical)
  std::string label;                                  // e.g. "enforce" in a compare
  uint64_t seed = 0;
  std::vector<std::pair<std::string, uint64_t>> sub_seeds;
  std::vector<std::pair<std::string, std::string>> knobs;  // every knob name=value, registry order
  std::string replay_command;
  TimeNs duration_ns = 0;
  DurationNs time_step_ns = 0;

  // Topology names, in scenario order.
  std::vector<std::string> hosts;
  std::vector<std::string> host_domains;              // parallel to hosts
  std::vector<std::string> domains;

  // Totals.
  std::vector<TimeNs> read_latencies_ns;              // every object read, completion order
  DistanceBytes bytes_read;
  std::vector<uint64_t> host_bytes_served;            // per host, whole run
  int64_t reads = 0;
  int64_t copies_completed = 0;
  int64_t copies_failed = 0;
  uint64_t copy_bytes = 0;
  uint64_t copy_bytes_cross_domain = 0;
  uint64_t extra_memory_peak_bytes = 0;
  uint64_t extra_memory_final_bytes = 0;
  std::map<std::string, int64_t> decisions_by_outcome;  // "accepted", "would_propose", "rejected/<reason>"
  std::map<std::string, int64_t> metrics;             // flat counter/gauge snapshot: "name{labels}" -> value
  int64_t numa_reads = 0;
  int64_t numa_local_reads = 0;
  int64_t numa_oracle_local_reads = 0;
  // The run's split of its cross-domain bytes and the limit lines computed
  // from its reads (sim/limit_lines.h).
  LimitLines limits;
  // The recorder itself, with every avoidable read, when the run was asked
  // for it (RunOptions::keep_limit_reads); null otherwise.
  std::shared_ptr<const LimitLineRecorder> limit_recorder;
  int64_t events_simulated = 0;
  // Audits of the core's invariants at sampling steps (see Sample in
  // sim/runner.cc); not written to the outputs.
  int64_t audits = 0;
  int64_t wall_time_ms = 0;                           // not deterministic; see file comment
  // GLIBC_TUNABLES of the process that ran it (sim/malloc_tuning.h); nullopt
  // when unset. Like the wall time, written to timing.json only.
  std::optional<std::string> malloc_tunables;

  std::vector<IntervalSample> intervals;
  // Interval-major, hosts in index order; empty without NUMA hosts.
  std::vector<NumaHostSample> numa_samples;
  std::vector<RequestSample> requests;
};

}  // namespace heatsink::sim

#endif  // HEATSINK_SIM_RUN_RESULT_H_
