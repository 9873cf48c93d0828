// File: sim/internal/recovery_audit.h
//
// The recovery invariants of a run whose master crashes (the scenario's
// faults.master_crashes, docs/master-crash.md; private to the runner). The
// master loses its memory, comes back empty, and rebuilds from the manifests
// its store workers report. RecoveryAudit owns what the checks need to
// remember across a crash: the master's restart count, the copies in flight
// (and those in flight at the last crash), the replicas removed since the
// last restart, the store workers that ran through the last crash and their
// manifest reports to the restarted master. The simulation
// (sim/internal/simulation_crash.cc) crashes and restarts the master and
// feeds this class the events; it checks:
//
//   recovery.objects_readable   once the master no longer recovers, every
//                               complete entry in the manifest of a live
//                               store that has reported is readable: the
//                               master's object has that version and a
//                               COMPLETE replica at that segment and offset
//                               (unless the replica was removed since the
//                               restart: evicted, removed, superseded by a
//                               newer version another store reported)
//   recovery.used_bytes         right after a store's last report is applied,
//                               each of its segments' used bytes equal the
//                               ranges its reported entries took there (the
//                               complete ones, and the incomplete ones whose
//                               bytes stay taken until the put release
//                               timeout), less what was removed since
//   recovery.copy_discarded     a copy in flight at the crash leaves no
//                               readable replica at its target when the
//                               recovery ends
//
// A violation is an INTERNAL status "recovery invariant <name>: ..." (the
// swarm names the failure after <name>). The swarm checker adds
// recovery.no_lease_outlives_crash (the new master starts with no lease,
// pending action or task).
//
// Determinism: every table is ordered (std::map, std::set), so the checks
// run in host, segment and offset order.
//
// Thread safety: none (engine thread only).
#ifndef HEATSINK_SIM_INTERNAL_RECOVERY_AUDIT_H_
#define HEATSINK_SIM_INTERNAL_RECOVERY_AUDIT_H_

#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/env/data_mover.h"
#include "core/master/master_service.h"
#include "core/model/ids.h"
#include "sim/internal/cluster_directory.h"

namespace heatsink::sim::runner_internal {

class RecoveryAudit {
 public:
  // `cluster` must outlive this object.
  explicit RecoveryAudit(const ClusterDirectory* cluster) : cluster_(cluster) {}
  RecoveryAudit(const RecoveryAudit&) = delete;
  RecoveryAudit& operator=(const RecoveryAudit&) = delete;

  // How many times the master restarted.
  int64_t master_restarts() const { return master_restarts_; }

  // A copy of the store workers starts: its number, for CopyEnded. Only a
  // run whose master crashes keeps it as in flight (`track`).
  uint64_t CopyStarted(const CopyRange& range, bool track);
  // Copy `copy` ended (its worker was told).
  void CopyEnded(uint64_t copy) { copies_in_flight_.erase(copy); }
  size_t copies_in_flight() const { return copies_in_flight_.size(); }

  // The master crashed: remembers the copies in flight and the store workers
  // up that ran through the crash, and forgets the reports and removals
  // since the last restart.
  void OnMasterCrash();
  // The master restarted: its recovery is to be checked.
  void OnMasterRestart();
  // The master removed a replica (evicted, removed, superseded).
  void OnReplicaRemoved(const ReplicaDescriptor& replica);
  // The master `master` applied a manifest report of store `client`:
  // after a restart, the first report of a store that ran through the crash
  // claims ranges, and once its last call is applied its segments' used
  // bytes are checked (recovery.used_bytes).
  [[nodiscard]] absl::Status OnReportApplied(const MasterService& master, ClientId client,
                                             const ReportManifestRequest& req,
                                             const absl::StatusOr<ReportManifestResponse>& result);
  // Store `client` has the answer to its manifest report: its manifest is to
  // be checked (recovery.objects_readable).
  void OnReportAnswered(ClientId client, const absl::StatusOr<ReportManifestResponse>& result);
  // After every event while the master `master` is up: once it no longer
  // recovers, the copies in flight at the crash (recovery.copy_discarded)
  // and the stores whose report was answered since the last check.
  [[nodiscard]] absl::Status Check(const MasterService& master);
  // Whether a live store's manifest holds `name` complete (after a restart,
  // a NOT_FOUND for it is a lost object).
  bool HeldCompleteByLiveStore(const ObjectName& name) const;

 private:
  // A store's manifest report to the master that restarted last: the ranges
  // its entries took, by (segment, offset) (a report retried after a lost
  // answer names them again), checked against the segments' used bytes once
  // its last report is applied.
  struct StoreReportRt {
    std::map<std::pair<SegmentId, uint64_t>, uint64_t> claimed_ranges;
    bool applied = false;   // the master applied its last report
    bool answered = false;  // the store has the answer to its last report
    bool checked = false;   // recovery.objects_readable ran for it
  };

  // recovery.used_bytes for the segments of `host`, whose last report is
  // applied.
  absl::Status CheckUsedBytes(const MasterService& master, ClientId client, int host,
                              const StoreReportRt& report) const;
  absl::Status CheckCopiesDiscarded(const MasterService& master) const;
  absl::Status CheckStoreRecovered(const MasterService& master, int host) const;

  const ClusterDirectory* const cluster_;
  int64_t master_restarts_ = 0;
  // Copies under way (by start order) and those that were under way when the
  // master crashed: none may leave a readable replica.
  std::map<uint64_t, CopyRange> copies_in_flight_;
  uint64_t next_copy_ = 0;
  std::vector<CopyRange> copies_at_crash_;
  // Since the last restart: replicas removed, by (segment, offset), and the
  // bytes removed from each segment.
  std::set<std::pair<SegmentId, uint64_t>> removed_since_restart_;
  std::map<SegmentId, uint64_t> removed_bytes_since_restart_;
  // Hosts whose StoreWorker ran through the last crash (by host index, the
  // worker_starts of the one that ran), and their report to the new master.
  std::map<int, int64_t> workers_at_crash_;
  std::map<int, StoreReportRt> reports_;
  bool recovery_checked_ = true;  // copies_at_crash_ checked since the restart
};

}  // namespace heatsink::sim::runner_internal

#endif  // HEATSINK_SIM_INTERNAL_RECOVERY_AUDIT_H_
