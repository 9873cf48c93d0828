// File: tools/replay/replay_run.h
//
// One replay of a scenario against a real loopback cluster (heatsink-replay):
//
//   1. MakeReplayPlan (replay_plan.h) refuses what the runtime cannot honour.
//   2. heatsink-master starts with the scenario's knobs (--set, and its
//      dynamic_replication_mode in OUT/logs/master.conf, --config), writing its
//      decision log to OUT/decisions.jsonl; one heatsink-store per host with
//      segments starts at its domain's join time (fixed client id, domain,
//      segments). Logs go to OUT/logs/.
//   3. The simulator's own operation stream (MakeScenarioOpStream, the
//      workload sub-seed of the same seed) is issued in real time: an
//      operation at simulated time t is due at t0 + t x time_scale of wall
//      time. A dispatcher hands due operations to a bounded pool of threads
//      through a bounded queue; an operation that waits (pool busy, queue
//      full) is issued late and its lag is recorded, never dropped.
//      Operations go through the runtime client library (HeatsinkClient over
//      GrpcMasterClient), one client per scenario client and tenant, with the
//      scenario client's id, host and domain, its host's segments preferred
//      for puts, and the scenario's replica selection policy and seed.
//      kill_worker, restart_worker and set_knob act on the processes instead
//      (cluster_ops.h): the dispatcher kills, starts or signals at once and
//      hands only the wait for their effect to the pool.
//   4. After the scenario's duration, the master's /metrics are read, every
//      process is stopped, and OUT/reads.jsonl (one line per key read),
//      OUT/summary.json and the master's OUT/decisions.jsonl remain.
//
// Every process started here is stopped on return, on error and when `stop`
// is set (the CLI sets it on SIGINT/SIGTERM); a SIGKILL of the replay takes
// them with it (child_process.h). The replay decides nothing the master
// decides: it only drives the operations and records what happened.
#ifndef HEATSINK_TOOLS_REPLAY_REPLAY_RUN_H_
#define HEATSINK_TOOLS_REPLAY_REPLAY_RUN_H_

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "sim/scenario.h"
#include "tools/replay/replay_plan.h"

namespace heatsink::replay {

struct ReplayOptions {
  std::string out_dir;
  // Directory holding heatsink-master and heatsink-store.
  std::string binaries_dir;
  double time_scale = 1.0;
  std::optional<uint64_t> seed;  // overrides the scenario's
  // Threads issuing operations, and operations queued or running at most.
  int threads = 16;
  int ops_in_flight_max = 256;
  // How long the cluster may take to start (master address, store endpoints).
  int64_t start_timeout_ms = 30'000;
  // Progress lines on stderr every this many ms of wall time (0: none).
  int64_t progress_interval_ms = 5'000;
  // Extra-memory samples from the master's /metrics every this many ms.
  int64_t sample_interval_ms = 1'000;
  // Set from another thread to stop early; the run then returns CANCELLED
  // after stopping every process.
  const std::atomic<bool>* stop = nullptr;
  // The run stops, RESOURCE_EXHAUSTED, when the machine's available memory
  // (MemAvailable, read with every sample) falls below this while it runs:
  // the stores commit their segments on write, so a scenario whose data
  // does not fit is stopped before the machine runs out.
  int64_t memory_floor_bytes = int64_t{512} << 20;
  // Where MemAvailable is read (tests point it at a file of their own).
  std::string meminfo_path = "/proc/meminfo";
  // Set by the run itself when it ends early (the memory floor); read like
  // `stop`. Callers leave it null.
  const std::atomic<bool>* halt = nullptr;
};

// Runs the replay; the outputs are in options.out_dir. Errors: the plan's
// refusals, UNAVAILABLE when a process does not start (its log named),
// CANCELLED when stopped, RESOURCE_EXHAUSTED below the memory floor (the
// outputs then hold what ran until then), INTERNAL when an output cannot be
// written.
[[nodiscard]] absl::Status RunReplay(const sim::Scenario& scenario, const ReplayPlan& plan,
                                     const ReplayOptions& options);

}  // namespace heatsink::replay

#endif  // HEATSINK_TOOLS_REPLAY_REPLAY_RUN_H_
