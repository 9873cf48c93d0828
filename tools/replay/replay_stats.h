// File: tools/replay/replay_stats.h
//
// What a replay records (replay_run.h): reads.jsonl as the reads complete,
// and at the end summary.json with the simulator's field names where they
// apply (docs/outputs.md): reads.count and reads.latency_ns (nearest-rank
// percentiles of wall-clock read latency), bytes_read by distance,
// host_load.hosts, copies.completed (the master's
// dynamic_replication_copy_tasks_completed_total), extra_memory_bytes (peak
// and final), admissions (counted from the master's decision log), plus the
// replay's own: op_lag_ns (how late operations were issued), puts, failures,
// t0_steady_ns (the steady-clock time of simulated time 0, to place the
// master's decision times on the scenario's time line) and time_scale.
//
// Cluster operations (cluster_ops.h): `cluster_ops` counts the stores killed
// and started again and the mode changes, and lists every kill_worker,
// restart_worker and set_knob with its outcome and how long its effect took
// to show; `metrics` holds the simulator's counters of the same events
// (sim_worker_crashes_total, sim_worker_restarts_total,
// sim_mode_changes_total), counted by the simulator's rules.
//
// Extra memory: the master exports no byte gauge of dynamic replicas, so a
// sample is master_used_bytes + master_reserved_bytes minus the bytes of the
// objects this replay put and still holds (ordinary replicas, one each).
// When the master holds a different number of objects (eviction removed
// some, a put was in flight) the sample is inexact; summary.json says how
// many samples were (`extra_memory_bytes.inexact_samples`).
//
// Thread-safe: the pool, the sampler and the dispatcher call it at once.
#ifndef HEATSINK_TOOLS_REPLAY_REPLAY_STATS_H_
#define HEATSINK_TOOLS_REPLAY_REPLAY_STATS_H_

#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/model/ids.h"
#include "sim/scenario.h"
#include "sim/workloads.h"
#include "tools/replay/replay_plan.h"

namespace heatsink::replay {

struct ReplayOptions;

// One key read.
struct ReadSample {
  int64_t t_ns = 0;  // simulated time it was issued (wall offset / time scale)
  std::string tenant;
  std::string key;
  Domain requester_domain;
  std::string client;
  int64_t host_index = 0;          // the reader's host
  int64_t served_host_index = -1;  // -1 when the read failed
  SegmentId segment;
  int64_t bytes = 0;
  int64_t latency_ns = 0;  // wall clock
  absl::Status status;
};

// A kill_worker, restart_worker or set_knob the replay carried out.
struct ClusterOpSample {
  int64_t t_ns = 0;  // simulated time of the op
  sim::SimOpKind kind = sim::SimOpKind::kKillWorker;
  std::string target;     // the host, or "dynamic_replication_mode=enforce"
  std::string outcome;    // "killed", "started", "not running", "running", "no store", "set"
  bool changed = false;   // killed, started or set (the other outcomes change nothing)
  bool no_store = false;  // the host has no segments, hence no store
  int64_t lag_ns = 0;     // how late it was carried out (wall clock)
};

// Nearest-rank percentile (docs/outputs.md): the sample at 1-based rank
// ceil(p/100 * n) of the sorted samples; 0 without samples. Sorts `v`.
int64_t NearestRankPercentile(std::vector<int64_t>& v, double p);

class ReplayRecorder {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ReplayRecorder>> Open(
      const sim::Scenario& scenario, const ReplayPlan& plan, const ReplayOptions& options,
      uint64_t seed);

  void SetStart(int64_t t0_steady_ns);
  void CountIssued();
  void RecordLag(int64_t lag_ns);
  void RecordRead(const ReadSample& sample);
  void RecordPut(const std::string& tenant, const std::string& key, int64_t size_bytes,
                 const absl::Status& status);
  // One Put or BatchPut call went to the master (its keys are RecordPut's).
  void CountPutCall();
  void RecordRemove(const std::string& tenant, const std::string& key, const absl::Status& status);
  void RecordOpFailure(const sim::SimOp& op, const absl::Status& status);
  // Returns the op's index for SettleClusterOp.
  int64_t RecordClusterOp(const ClusterOpSample& sample);
  // The effect of cluster op `index` showed `settle_ns` of wall time after
  // it was carried out (the restarted store serves, the master shows the
  // mode), or did not (`status`).
  void SettleClusterOp(int64_t index, int64_t settle_ns, const absl::Status& status);
  // Unlabelled samples of the master's /metrics.
  void RecordMasterSample(const std::map<std::string, double>& metrics);
  std::string ProgressLine();
  // Closes reads.jsonl and writes summary.json; reads the master's decision
  // log for the admission counts.
  [[nodiscard]] absl::Status Finish(const std::string& decisions_path);

 private:
  ReplayRecorder(const sim::Scenario& scenario, const ReplayPlan& plan, std::string out_dir,
                 double time_scale, uint64_t seed)
      : scenario_(scenario), plan_(plan), out_dir_(std::move(out_dir)), time_scale_(time_scale),
        seed_(seed), host_bytes_(plan.hosts.size(), 0) {}

  static constexpr size_t kSamplesMax = 20'000'000;
  static constexpr size_t kClusterOpsMax = 100'000;  // listed; every one is counted

  struct ClusterOpRecord {
    ClusterOpSample sample;
    int64_t settle_ns = -1;  // -1: nothing to wait for, or not settled by the end
    std::string settle_error;
  };

  const sim::Scenario& scenario_;
  const ReplayPlan& plan_;
  const std::string out_dir_;
  const double time_scale_;
  const uint64_t seed_;
  absl::Mutex mu_;
  std::ofstream reads_log_ ABSL_GUARDED_BY(mu_);
  int64_t t0_ns_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t issued_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<int64_t> lags_ns_ ABSL_GUARDED_BY(mu_);
  int64_t late_ops_ ABSL_GUARDED_BY(mu_) = 0;  // more than 10 ms late
  std::vector<int64_t> latencies_ns_ ABSL_GUARDED_BY(mu_);
  int64_t reads_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t read_misses_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t reads_failed_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t bytes_same_host_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t bytes_same_domain_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t bytes_cross_domain_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<int64_t> host_bytes_ ABSL_GUARDED_BY(mu_);
  int64_t puts_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t put_calls_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t puts_failed_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t ops_failed_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, int64_t> failures_by_code_ ABSL_GUARDED_BY(mu_);
  std::string first_failure_ ABSL_GUARDED_BY(mu_);
  std::map<std::pair<std::string, std::string>, int64_t> stored_ ABSL_GUARDED_BY(mu_);
  int64_t stored_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t extra_peak_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t extra_final_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t extra_samples_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t extra_inexact_samples_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, double> last_master_ ABSL_GUARDED_BY(mu_);
  std::vector<ClusterOpRecord> cluster_ops_ ABSL_GUARDED_BY(mu_);  // at most kClusterOpsMax
  int64_t cluster_ops_unlisted_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t store_kills_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t store_restarts_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t mode_changes_ ABSL_GUARDED_BY(mu_) = 0;
  // The simulator counts a restart of a host whose worker is down, a host
  // without segments included (its worker is never up).
  int64_t sim_worker_restarts_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace heatsink::replay

#endif  // HEATSINK_TOOLS_REPLAY_REPLAY_STATS_H_
