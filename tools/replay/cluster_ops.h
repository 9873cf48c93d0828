// File: tools/replay/cluster_ops.h
//
// The scenario operations that act on the cluster rather than on objects,
// replayed as the simulator means them (Simulation::KillWorker,
// RestartWorker and SetKnob in sim/internal/simulation_ops.cc):
//
//   - kill_worker (scripted, or $.faults.worker_crashes[].at_s): the host's
//     heatsink-store gets SIGKILL and is reaped. It unmounts nothing, so the
//     master keeps listing its segments until its heartbeat TTL
//     (client_live_ttl_sec) runs out; copies to or from it fail, and reads
//     that choose one of its replicas fail. Those failures are recorded as
//     the reads' outcomes (reads.jsonl, summary.json ops.failures), not as
//     replay errors.
//   - restart_worker (scripted, or restart_at_s): the store starts again
//     from its plan entry (same client id, domain and segments). It first
//     unmounts what the master still lists of its previous run, then
//     registers and mounts its segments afresh, empty
//     (runtime/store/store_node.h), as the simulator's restarted worker does:
//     an object whose replicas were all on that store is lost in both.
//   - set_knob of dynamic_replication_mode (the only knob MakeReplayPlan lets
//     through): the master's config file is rewritten and the master gets
//     SIGHUP, on which it applies the new mode at once (heatsink-master
//     --config).
//
// As in the simulator, a kill of a store that does not run (its domain has
// not joined, or it was killed already), a restart of one that runs, and
// either on a host without segments (it has no store) change nothing; the
// summary lists them with their outcome. A restart of a store whose domain
// has not joined yet starts it early, as the simulator's does.
//
// Threads: Begin runs on the dispatcher, the replay's main thread, which
// started the cluster (a store restarted from a pool thread would die with
// that thread, child_process.h). It does only the quick part: SIGKILL and
// reap, fork and exec, rewriting the config file and SIGHUP, so the other
// operations keep their times. What waits (until the master lists a
// restarted store's segments again, or shows the new mode on /metrics) is
// returned as a task for the operation pool; a task that fails ends the
// replay with its error (error()), as a store that does not start does.
#ifndef HEATSINK_TOOLS_REPLAY_CLUSTER_OPS_H_
#define HEATSINK_TOOLS_REPLAY_CLUSTER_OPS_H_

#include <cstdint>
#include <functional>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "sim/workloads.h"
#include "tools/replay/cluster.h"
#include "tools/replay/replay_stats.h"

namespace heatsink::replay {

class ClusterOps {
 public:
  // `cluster` and `recorder` outlive this object and every task it returns.
  ClusterOps(Cluster* cluster, ReplayRecorder* recorder) : cluster_(cluster), recorder_(recorder) {}
  ClusterOps(const ClusterOps&) = delete;
  ClusterOps& operator=(const ClusterOps&) = delete;

  // kill_worker, restart_worker and set_knob.
  static bool Handles(sim::SimOpKind kind);

  // Carries out `op` (due at `due_ns` on the steady clock) and records it.
  // Returns the task that waits for its effect (empty when nothing waits),
  // or an error that ends the replay (fork failed, the config file could
  // not be written, the master has exited). REQUIRES: Handles(op.kind); the
  // thread that started the cluster.
  [[nodiscard]] absl::StatusOr<std::function<void()>> Begin(const sim::SimOp& op, int64_t due_ns);

  // The first failure of a task (a restarted store that does not serve, a
  // mode the master does not take); OK when none. Thread-safe.
  absl::Status error() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Records the outcome of the task of record `index`, started at
  // `start_ns`.
  void Settle(int64_t index, int64_t start_ns, const absl::Status& status) ABSL_LOCKS_EXCLUDED(mu_);

  Cluster* const cluster_;
  ReplayRecorder* const recorder_;
  absl::Mutex mu_;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace heatsink::replay

#endif  // HEATSINK_TOOLS_REPLAY_CLUSTER_OPS_H_
