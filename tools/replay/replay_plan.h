// File: tools/replay/replay_plan.h
//
// What `heatsink-replay` will start for a scenario, decided before anything
// starts: one heatsink-master with the scenario's master and replication
// knobs, one heatsink-store per host that has segments (its domain, segment
// count and size, a fixed client id), and the readers' and writers' client
// options. MakeReplayPlan refuses, naming the JSON field, every part of a
// scenario the real processes on this machine cannot honour:
//
//   - workloads other than trace, zipf, cross_domain_reuse, cold_start, and
//     scripted ops other than put, get, batch_put, batch_get, remove,
//     advance_time, kill_worker, restart_worker and set_knob (of
//     dynamic_replication_mode only: the one knob the simulator lets change
//     during a run; another knob, or a value the knobs refuse, is refused
//     at the op's JSON position);
//   - the faults the replay cannot reproduce (master crashes, segment
//     unmounts, copy failures, control message faults, trunk faults). Store
//     crashes and restarts ($.faults.worker_crashes) are replayed: the
//     store process is killed with SIGKILL and started again
//     (cluster_ops.h);
//   - NUMA models (numa_nodes on a host, tiering knobs), network-model and
//     engine knobs, topology.network overrides: the simulator's model of a
//     machine, which the runtime replaces by the machine itself;
//   - a host whose segments differ in size or are not whole MiB (a store
//     mounts equal segments of --segment-mib);
//   - under a time scale X != 1, a heat window that X does not stretch to
//     whole seconds (the master's replication periods are stretched by X and
//     the QPS threshold divided by X, so the master sees the scenario's
//     window and hit count in wall time; the stores' fetch period too);
//   - more hosts than ReplayLimits::hosts_max, objects put beyond the memory
//     the machine has available (the segments themselves may be larger: the
//     stores commit them on write, and the replay stops the run if the
//     machine's available memory falls below ReplayOptions::
//     memory_floor_bytes), and a run longer than run_time_max_ns in wall time
//     (duration x time scale).
//
// The plan decides nothing the master decides: it only translates the
// scenario's shape and knobs into process flags.
//
// Example:
//   HS_ASSIGN_OR_RETURN(ReplayPlan plan, MakeReplayPlan(scenario, limits));
//   for (const ReplayStore& s : plan.stores) ... start heatsink-store ...
#ifndef HEATSINK_TOOLS_REPLAY_REPLAY_PLAN_H_
#define HEATSINK_TOOLS_REPLAY_REPLAY_PLAN_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/env/time.h"
#include "core/model/ids.h"
#include "core/replication/replication_knobs.h"
#include "sim/scenario.h"

namespace heatsink::replay {

struct ReplayLimits {
  // Hosts (store processes) at most: each takes three loopback ports and a
  // process on a machine shared with the readers.
  int64_t hosts_max = 32;
  // Bytes of memory the machine can give (MemAvailable). The stores commit
  // their segments on write (heatsink-store --segment-commit-on-write), so
  // the segments may add up to more than this; the objects the scenario puts
  // (each distinct key once, at its largest size) must fit.
  int64_t memory_available_bytes = 0;
  // The workload seed (the scenario's, or --seed): the puts are counted from
  // the operation stream the replay will issue.
  uint64_t seed = 0;
  // Wall time of the run at most (scenario duration x time scale).
  DurationNs run_time_max_ns = 30 * 60 * kNsPerSec;
  // Wall time = simulated time x time_scale (> 0).
  double time_scale = 1.0;
};

// One heatsink-store process.
struct ReplayStore {
  HostId host;
  Domain domain;
  int64_t host_index = 0;  // in scenario order (every host, with or without segments)
  ClientId client_id;      // fixed: 1 + host index, as the simulator's workers
  int64_t segments = 0;
  int64_t segment_mib = 0;
  // The store's segments are first_segment_id, +1, ...: the simulator's ids
  // (heatsink-store --first-segment-id).
  uint64_t first_segment_id = 0;
  TimeNs join_at_ns = 0;   // simulated time the store starts (its domain's join)
  // Segment full names "<host>/<name>" in scenario order; the store mounts
  // them as segments 0 .. n-1.
  std::vector<std::string> segment_names;
};

// One scenario client ("<host>/<client>").
struct ReplayClient {
  std::string full_name;
  HostId host;
  Domain domain;
  int64_t host_index = 0;
  ClientId client_id;  // 1'000'000 + index in scenario order, as the simulator's
};

struct ReplayPlan {
  std::vector<ReplayStore> stores;                 // scenario order
  std::map<std::string, ReplayClient> clients;     // by full name
  std::vector<HostId> hosts;                       // every host, scenario order
  std::vector<Domain> host_domains;                // parallel to hosts
  // --set name=value for heatsink-master, scenario order; never
  // dynamic_replication_mode, which goes in the master's --config file so
  // that a set_knob can change it with SIGHUP (--set would override the
  // file on every reload).
  std::vector<std::string> master_sets;
  // The scenario's dynamic_replication_mode, the master's mode at start.
  DynamicReplicationMode dynamic_replication_mode = DynamicReplicationMode::kOff;
  // Store pacing (the simulator's driver knobs of the same meaning).
  int64_t heartbeat_interval_ms = 1'000;
  int64_t fetch_interval_ms = 100;
  // A read of an object still being put (UNAVAILABLE) is tried again after
  // read_retry_ms (x the time scale), at most read_retries_max times, as the
  // simulator's clients do (driver knobs of the same names).
  int64_t read_retry_ms = 1;
  int64_t read_retries_max = 1'000;
  // Readers' replica choice (replication knob and driver knob).
  ReplicaSelectionPolicy replica_selection_policy = ReplicaSelectionPolicy::kFirst;
  uint64_t replica_selection_seed = 0;
  int64_t segment_bytes_total = 0;
  // The master's batch_keys_max: a batch put of more keys goes in several
  // calls, as the simulator's clients split it.
  int64_t batch_keys_max = 1024;
  // The objects the operation stream puts: each distinct (tenant, key) once,
  // at its largest size, one replica. What the stores must hold at least if
  // nothing is removed or evicted.
  int64_t put_bytes_distinct = 0;
  // The largest object put: each operation thread's read buffer is this
  // large, its pages touched, before the run starts.
  int64_t object_bytes_max = 0;
  // The --set lines that put the scenario's time knobs into wall time under a
  // time scale other than 1 (also in master_sets); empty at scale 1.
  std::vector<std::string> time_scaled_knobs;
  // Driver knobs the replay has no use for, named so the summary can list them.
  std::vector<std::string> ignored_knobs;
};

// The index of the host whose store owns `segment`; -1 for none.
int64_t HostIndexOfSegment(const ReplayPlan& plan, SegmentId segment);

// The client id of a store for a host (1 + host index).
ClientId StoreClientIdForHost(int64_t host_index);

// The plan, or FAILED_PRECONDITION / RESOURCE_EXHAUSTED naming the scenario
// file and the JSON field that cannot be honoured.
[[nodiscard]] absl::StatusOr<ReplayPlan> MakeReplayPlan(const sim::Scenario& scenario,
                                                        const ReplayLimits& limits);

// What the scenario's operation stream (workload seed `seed`) puts.
struct PutFootprint {
  // Each distinct (tenant, key) once, at its largest size.
  int64_t distinct_bytes = 0;
  // The largest object.
  int64_t object_bytes_max = 0;
};
// Errors: the stream's.
[[nodiscard]] absl::StatusOr<PutFootprint> ScenarioPutFootprint(const sim::Scenario& scenario,
                                                                uint64_t seed);

// MemAvailable from /proc/meminfo in bytes; UNAVAILABLE when unreadable.
[[nodiscard]] absl::StatusOr<int64_t> ReadMemAvailableBytes(const std::string& meminfo_path);

}  // namespace heatsink::replay

#endif  // HEATSINK_TOOLS_REPLAY_REPLAY_PLAN_H_
