// File: sim/swarm_checker.h
//
// The named invariants of `heatsink-sim swarm` (docs/swarm.md) that the
// core's own CheckInvariants() does not state, checked after every event of
// a run as a RunObserver, plus the liveness checks at its end. The core's
// checks (segment used + reserved bytes equal its replicas and reservations,
// no readable replica of another version, pending state matches its task,
// dynamic replica records) run in the same place through the driver knob
// invariant_check_events = 1.
//
//   lease_ends_within_ttl        an accepted lease is pending no longer than
//                                dynamic_replication_lease_ttl_ms plus the
//                                reaping period (sweep_interval_ms) after
//                                its acceptance, and its expiry is at most
//                                the TTL after it
//   pending_has_live_lease       no pending action outlives its lease's
//                                expiry by more than the reaping period
//   no_task_after_key_removed    no pending action (and so no copy task)
//                                for a key that no longer exists, once the
//                                lease TTL plus the reaping period has passed
//   copy_end_with_live_lease     a DynamicReplicaCopyEnd succeeds only for a
//                                pending, unexpired lease whose version is
//                                the object's current version
//   dynamic_replica_limit        an object with dynamic replicas has at most
//                                dynamic_replication_max_memory_replicas
//                                readable MEMORY replicas (in each domain
//                                holding a dynamic replica, in stage 2)
//   proposal_idempotent          within a scripted proposal burst, an
//                                accepted (enforce) proposal resubmitted with
//                                the same id and content gets the same lease
//   proposal_burst_one_lease     a burst of proposals with identical content
//                                but distinct ids is granted at most one
//                                lease (the rest are pending / cooldown)
//   warmup_copies_in_flight      pending warmup copies never exceed
//                                dynamic_replication_warmup_copies_in_flight_max
//   tiering_scores               each host's tiering core: scores finite,
//                                exactly one score owner per key
//                                (TierManager::CheckInvariants)
//   optional_replicas_first      no object eviction began while a dynamic
//                                replica of an unleased object could have
//                                been dropped instead (DESIGN 12;
//                                MasterStats::evictions_with_optional_left)
//   liveness.hot_key_reevaluated a heat key that had a decision and is still
//                                at or above the hit count, below its cap,
//                                with its object complete and the mode on,
//                                gets a new decision (counted from the later
//                                of its last decision and the last check that
//                                found it at its cap) within max(admission
//                                cooldown, recreate cooldown, retry delay,
//                                lease TTL + reaping period, pending + processing
//                                task timeouts + reaping period) + two heat
//                                sub-buckets + the drain interval + 1 s
//                                (DESIGN 1); checked once
//                                per simulated second, and not once a
//                                trigger or re-evaluation was lost to a full
//                                table
//   recovery.no_lease_outlives_crash
//                                after a master_crash, the restarted master
//                                starts with no lease, pending action or
//                                task, and every lease seen afterwards was
//                                granted by it (the leases of the crashed
//                                master are forgotten; their copies may only
//                                fail). The run itself checks the other
//                                recovery.* invariants
//                                (sim/internal/recovery_audit.h); the
//                                master's checks pause while it is down
//   liveness.no_in_flight_lease  at the end: no copy in flight
//   liveness.pending_actions_end at the end: no pending action
//   liveness.no_processing_replica at the end: no PROCESSING replica, no
//                                reserved bytes on any segment
//
// The checker keeps the last events (operations, decisions, copy ends,
// notes) in a ring buffer for the failure report.
#ifndef HEATSINK_SIM_SWARM_CHECKER_H_
#define HEATSINK_SIM_SWARM_CHECKER_H_

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "core/model/ids.h"
#include "core/replication/heat_key.h"
#include "sim/runner.h"

namespace heatsink::sim {

struct SwarmViolation {
  std::string invariant;  // one of the names above, or "core" for CheckInvariants
  std::string message;
  TimeNs t_ns = 0;
  uint64_t event = 0;
};

struct SwarmCheckerOptions {
  // Events kept for the failure report.
  size_t recent_events_max = 20;
  // Test hook: treat copy ends as if the lease had expired this much earlier
  // (0: off). Lets a test prove copy_end_with_live_lease fires.
  DurationNs test_lease_expiry_shift_ns = 0;
};

class SwarmChecker final : public RunObserver {
 public:
  explicit SwarmChecker(SwarmCheckerOptions options = {}) : options_(options) {}

  void OnOp(TimeNs now_ns, const SimOp& op) override;
  void OnDecision(const DecisionRecord& record) override;
  void OnCopyEnd(const CopyEndObservation& copy_end) override;
  void OnProposal(const ProposalObservation& proposal) override;
  void OnNote(TimeNs now_ns, absl::string_view what) override;
  void OnMasterCrash(TimeNs now_ns) override;
  void OnMasterRestart(TimeNs now_ns) override;
  absl::Status AfterEvent(const RunWorld& world) override;
  absl::Status AtEnd(const RunWorld& world) override;

  // The first violation found, if any.
  const std::optional<SwarmViolation>& violation() const { return violation_; }
  // The last events, oldest first.
  std::vector<std::string> RecentEvents() const {
    return std::vector<std::string>(recent_.begin(), recent_.end());
  }
  int64_t copy_ends_accepted() const { return copy_ends_accepted_; }
  int64_t proposals_accepted() const { return proposals_accepted_; }
  // Events run and simulated time at the last check.
  uint64_t events_seen() const { return events_seen_; }
  TimeNs last_event_ns() const { return last_event_ns_; }
  int64_t leases_accepted() const {
    return leases_before_crashes_ + static_cast<int64_t>(lease_accepted_ns_.size());
  }
  int64_t master_crashes() const { return master_crashes_; }

 private:
  void Remember(TimeNs t_ns, std::string what);
  absl::Status Violate(const RunWorld& world, absl::string_view invariant, std::string message);
  absl::Status CheckLeases(const RunWorld& world);
  absl::Status CheckReplicaLimit(const RunWorld& world);
  absl::Status CheckTiering(const RunWorld& world);
  absl::Status CheckSustainedHeat(const RunWorld& world);

  const SwarmCheckerOptions options_;
  std::deque<std::string> recent_;
  std::optional<SwarmViolation> violation_;
  // A copy end that broke copy_end_with_live_lease, reported after the event.
  std::optional<std::string> bad_copy_end_;
  // A proposal answer that broke a proposal_* invariant: (name, message).
  std::optional<std::pair<std::string, std::string>> bad_proposal_;
  // The current burst: leases granted, by proposal id.
  std::map<ProposalId, ReplicaActionLease> burst_leases_;
  int64_t proposals_accepted_ = 0;
  std::map<LeaseId, TimeNs> lease_accepted_ns_;  // of the live master
  int64_t leases_before_crashes_ = 0;
  // Keys whose object was seen missing while an action was pending, since when.
  std::map<ObjectName, TimeNs> missing_since_ns_;
  std::set<ObjectName> keys_;
  // Sustained heat: the last heat decision per heat key, since when the mode
  // has been on (-1: off now), when the check last ran.
  std::map<HeatKey, TimeNs> last_heat_decision_ns_;
  // The last check that found the heat key at its replica cap.
  std::map<HeatKey, TimeNs> at_cap_ns_;
  TimeNs mode_on_since_ns_ = -1;
  TimeNs last_heat_check_ns_ = 0;
  int64_t copy_ends_accepted_ = 0;
  // A master restarted and not yet looked at (recovery.no_lease_outlives_crash).
  bool restarted_ = false;
  int64_t master_crashes_ = 0;
  uint64_t events_seen_ = 0;
  TimeNs last_event_ns_ = 0;
};

}  // namespace heatsink::sim

#endif  // HEATSINK_SIM_SWARM_CHECKER_H_
