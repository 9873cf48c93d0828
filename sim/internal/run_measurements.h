// File: sim/internal/run_measurements.h
//
// What one simulation run measures (private to the runner, sim/runner.h).
// RunMeasurements owns the RunResult being collected and what goes into it
// at the end: the run's identity, the sampling intervals, the per-request
// rows (requests.csv), the read latencies and bytes by distance, the copies,
// the counters (sim_* metrics), the extra memory, the background bytes per
// interval, the limit-line recorder and when the core's audit last ran. The
// simulation tells it what happened, at what time; it never looks at the
// simulated world itself.
//
// Determinism: the counters and request rows are ordered maps; everything
// else is appended in event order.
//
// Thread safety: none (engine thread only).
#ifndef HEATSINK_SIM_INTERNAL_RUN_MEASUREMENTS_H_
#define HEATSINK_SIM_INTERNAL_RUN_MEASUREMENTS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/env/time.h"
#include "sim/limit_lines.h"
#include "sim/network_topology.h"
#include "sim/numa_model.h"
#include "sim/run_result.h"
#include "sim/runner.h"
#include "sim/scenario.h"
#include "sim/sim_env.h"
#include "sim/workloads.h"

namespace heatsink::sim::runner_internal {

// What the master holds at a sample.
struct MasterSample {
  uint64_t stored_bytes = 0;  // everything but dynamic replicas
  int64_t replica_count = 0;
  int64_t dynamic_replica_count = 0;
  uint64_t extra_memory_bytes = 0;  // dynamic replicas and in-flight reservations
};

class RunMeasurements {
 public:
  // `scenario` and `options` must outlive this object.
  RunMeasurements(const Scenario& scenario, const RunOptions& options);
  RunMeasurements(const RunMeasurements&) = delete;
  RunMeasurements& operator=(const RunMeasurements&) = delete;

  // The identity of the run (scenario, seeds, knobs, topology) and its
  // sampling intervals. Call once, before the run.
  void StartResult(uint64_t seed, const std::vector<SeedEntry>& seeds,
                   std::vector<std::pair<std::string, std::string>> knobs);

  // Adds `delta` to the counter `name` (a sim_* metric of the result).
  void CountMetric(const std::string& name, int64_t delta = 1) { counters_[name] += delta; }

  // Sampling intervals: how many, where one ends, and the one `t` falls in
  // (the last one for t >= the end).
  size_t interval_count() const { return result_.intervals.size(); }
  TimeNs IntervalEndNs(size_t interval) const;
  size_t IntervalIndex(TimeNs t) const;

  // The row of requests.csv that `op` belongs to, if the scenario writes
  // one and `op` is part of a request (a trace request, or a synthetic read).
  std::optional<size_t> RequestRowFor(const SimOp& op);
  // An operation of request `row` (if any) finished at `now_ns`.
  void FinishRequest(std::optional<size_t> row, TimeNs now_ns);

  // A key of a read issued at `issued_ns` was read at `now_ns`: `bytes` at
  // `distance`, for request `request_row` (if any).
  void CountKeyRead(TimeNs now_ns, TimeNs issued_ns, uint64_t bytes, Distance distance,
                    std::optional<size_t> request_row);
  // The heads a worker host read out of its memory for a read at `now_ns`.
  void CountNumaRead(TimeNs now_ns, const NumaReadCost& cost);
  // Host `host` served `bytes` of a read at `now_ns`.
  void CountBytesServed(TimeNs now_ns, int host, uint64_t bytes);
  // The reads for the limit lines (sim/limit_lines.h).
  LimitLineRecorder& limit_lines() { return *limit_lines_; }

  // A copy ended at `now_ns`: completed (`bytes`, across domains or not)
  // or failed.
  void CountCopyCompleted(TimeNs now_ns, uint64_t bytes, bool cross_domain);
  void CountCopyFailed() { ++result_.copies_failed; }

  // The sample of `interval` (at its end; the last one again at the end of
  // the run), in this order: SampleBackground with the network's background
  // bytes so far; SampleMaster, or CarryMasterSample while the master is
  // down (the figures it holds stay those of the last sample); then
  // AddNumaInterval per NUMA host and AuditDue.
  void SampleBackground(size_t interval, uint64_t background_bytes);
  void SampleMaster(size_t interval, const MasterSample& master);
  void CarryMasterSample(size_t interval);
  void AddNumaInterval(size_t interval, int host, const NumaIntervalStats& stats);
  // Whether the core's audit runs at this sample, `events` having run so
  // far and the core holding `audit_entries` objects and heat-window
  // entries (counted in the result when it does). It runs once at least
  // that many events ran since the last audit, so auditing costs about one
  // entry visit per event however large the state grows (a small run is
  // audited at every sample), and it always runs at the last sample.
  bool AuditDue(size_t interval, uint64_t events, uint64_t audit_entries);

  // At the end of the run: the read latencies, the extra memory and the
  // limit lines (computed with `limit_options`).
  void CloseResult(const LimitLineOptions& limit_options);
  // The result, its metrics `master_metrics` with the counters over them.
  // Call once, after CloseResult.
  RunResult TakeResult(std::map<std::string, int64_t> master_metrics);

 private:
  IntervalSample& IntervalAt(TimeNs t) { return result_.intervals[IntervalIndex(t)]; }

  const Scenario& scenario_;
  const RunOptions& options_;
  RunResult result_;
  std::vector<TimeNs> read_latencies_;
  // (workload, trace request) -> its row in result_.requests.
  std::map<std::pair<int32_t, int64_t>, size_t> trace_requests_;
  int64_t synthetic_requests_ = 0;
  std::map<std::string, int64_t> counters_;
  uint64_t extra_memory_peak_ = 0;
  // Background bytes the network had moved at the last sample, and at the
  // end of the interval before the one last sampled.
  uint64_t background_bytes_sampled_ = 0;
  uint64_t background_bytes_base_ = 0;
  uint64_t extra_memory_now_ = 0;
  std::shared_ptr<LimitLineRecorder> limit_lines_ = std::make_shared<LimitLineRecorder>();
  size_t sampled_intervals_ = 0;
  uint64_t audited_at_events_ = 0;  // events run at the last sample-time audit
};

}  // namespace heatsink::sim::runner_internal

#endif  // HEATSINK_SIM_INTERNAL_RUN_MEASUREMENTS_H_
