// File: core/replication/dynamic_replication.h
//
// Dynamic hot replication (RFC stage 1 and stage 2) on top of a MasterService:
// centralised admission, distributed execution.
//
// Read path (ReadObserver::OnKeyRead, foreground, after the master has
// released the object's lock). Mode off: nothing. Else, unless the object is
// already at its replica cap (in the requester's domain when domain-aware;
// DESIGN 2: no heat), the read's heat key (tenant + key, + requester domain
// when domain-aware) and time are appended to the calling thread's stripe of
// the HeatReadBuffer (heat_read_buffer.h): a compare-exchange on the stripe's
// own tail and a store of one record, no lock, no allocation, no per-key
// state. A full stripe drops the read and counts it
// (dynamic_replication_heat_reads_dropped_total); the read never waits. A key
// too long for a record (over HeatReadBuffer::kKeyBytesMax bytes of tenant,
// key and domain) is counted in the window directly, as a drain would.
// The first read after a drain arms the drain timer (one lock, once per
// drain interval); a read that brings its stripe to its high-water mark
// posts an immediate drain (once until that drain runs).
//
// Drain (background, on the Executor; DrainReads). At most
// dynamic_replication_heat_drain_interval_ms after the first read it has not
// applied yet, and as soon as the Executor runs it after a high-water read,
// one drainer applies every buffered read, stripe by stripe in append order,
// to the HeatWindow with the read's own time. When a read brings its key's
// window to the admission hit count, one deduplicated trigger is queued and,
// if the queue was empty, the admission worker is posted to the Executor.
// The window therefore sees every read at most one drain interval late
// (heat_window.h "Drain lag").
//
// Admission (background, on the Executor; also SubmitReplicaActionProposal).
// The decision is DecideAdmission (admission_decision.h), which changes
// nothing and reads this object's tables through AdmissionFacts; the
// granted actions live in a DynamicLeaseTable (dynamic_lease_table.h).
// Checks in this order, each with its own reason word (decision.h) and status
// code (replica_action.h RejectionCode):
//   mode_off; for proposals: invalid_argument, expired,
//   domain_hint_unsupported, conflict (idempotency);
//   below_threshold (the master's own window, re-read now: a trigger whose
//   key has cooled is logged, never dropped, DESIGN 8);
//   pending (a dynamic action for the object and target domain, or any copy
//   task of the key, is in flight); cooldown (admission cooldown of the heat
//   key); recreate_cooldown (object, + target domain when domain-aware);
//   object_not_found, not_complete; replica_limit; version_mismatch,
//   size_mismatch (proposals); then placement (placement.h): no_source,
//   target_domain_has_replica, utilization_cap, no_target /
//   no_target_in_domain; finally resource_exhausted when the pending table is
//   full and task_create_failed when the master refuses the task (the pending
//   state installed just before is rolled back).
// Observe mode stops after placement with outcome would_propose (and starts
// the admission cooldown, so observe counts what enforce would create).
// Enforce grants the lease (lease_id, deadline min(now + lease TTL, the
// proposal's expiration)), installs the pending state, creates the
// REPLICA_COPY task for the selected source client through
// MasterService::CreateCopyTaskForPlan, starts the admission cooldown, and
// arms a timer at the lease's expiry.
//
// Sustained heat (DESIGN 1). The read path fires a trigger only on the read
// that brings a key's window to the hit count; a key that stays hot is
// evaluated again, off the read path, from the events that already run in
// the background (HeatRecheckQueue): after an accepted (or would_propose)
// heat admission, at the end of its admission cooldown; after a cooldown or
// recreate_cooldown rejection, at that cooldown's end; after a pending
// rejection, when that pending dynamic copy ends or fails (an ordinary copy
// task: after the retry delay); after a transient rejection (no_target,
// no_target_in_domain, utilization_cap, no_source, resource_exhausted,
// task_create_failed, not_complete, object_not_found) and after
// replica_limit (at its cap a key's reads record no heat, so the look finds
// it cooled unless it lost a replica and is still read), after
// dynamic_replication_admission_retry_ms. When the look is due the key's
// window count is read again and, if still at or above the hit count, an
// ordinary trigger is queued; a key that cooled is dropped; one that holds
// its cap now is looked at again after the retry delay without a decision
// (its reads record no heat, so it soon cools); one whose object still runs a
// copy task is looked at again when a pending dynamic copy of the object
// (of any domain) ends or fails, or, with none pending, one heat sub-bucket
// later. Nothing is
// re-armed after below_threshold, target_domain_has_replica or mode_off, nor
// for proposals and warmup. So a hot key gets a new decision at each cooldown end
// until it holds its cap or cools.
//
// Optional replicas (DESIGN 12). Dynamic replicas never cost unique data:
// the master's eviction drops them (coldest first by this object's window
// count, OptionalReplicaRanker) before any object, and a dynamic CopyStart
// whose target reservation fails evicts nothing (resource_exhausted, pending
// cleared). Each readable dynamic replica dropped by eviction is logged as a
// decision of kind "evict" (outcome "dropped") and starts the recreate
// cooldown. With dynamic_replication_release_enabled (off by default), a
// dynamic replica whose key held fewer than release_below_count reads in the
// release span (the window, or its newest sub-buckets covering
// dynamic_replication_release_span_ms) and was not read at its cap in the
// span, at every check (one per heat sub-bucket) for release_after_ms, while
// its object was not read-leased, is dropped (kind "release", recreate
// cooldown started). Reads at the cap record no heat (DESIGN 2); with the
// release on they go through the read buffer marked kAtCap, and the drain
// notes their time on the replicas of their key and domain instead, so a
// replica read at its cap less often than its read lease lasts is not
// taken for cold.
//
// Copy lifecycle (MasterEndpoint's Dynamic* calls). DynamicReplicaCopyStart
// checks, in order: the lease exists and is pending (else FAILED_PRECONDITION, nothing
// cleared: a stale task without pending state); expiry (clears); the fence
// version equals the lease's (ABORTED version_mismatch, stale caller, nothing
// cleared) and the object's current version still equals it (clears); the
// fence's task is the lease's task (stale, nothing cleared); the task's
// source and target are the lease's (nothing cleared); the caller is the
// lease's source client (PERMISSION_DENIED, nothing cleared); the target
// segment is still mounted and allocatable (clears); unless warmup, the
// object's readable replicas (in the target's domain when domain-aware) are
// still below the cap, which a store reporting late after a master restart
// can fill after admission (RESOURCE_EXHAUSTED replica_limit, clears). Then
// the master reserves
// target quota; if that fails, the pending state is cleared and the task
// retired, so the key is neither stuck nor blocking an ordinary copy.
// DynamicReplicaCopyEnd and ...Revoke must present the lease id and version
// recorded in the in-flight task; a stale one changes nothing.
// End makes the dynamic replica readable and records it; Revoke drops the
// target (recreate cooldown starts).
// The copied bytes carry their heat: in the target store's head pool the
// replica's chunks start at the source chunks' decayed scores (ADR-0019
// score inheritance, TieringKnobs::copy_score_inheritance; the store side of
// the copy applies it, the master is not involved; docs/numa.md), so a hot
// replica that lands in foreign memory is ranked for promotion at once.
//
// Expiry (a timer per lease, DESIGN 9): a lease that is still pending retires
// its unconsumed task; an in-flight copy is cancelled (its target replica is
// removed) and the recreate cooldown starts. Expired dynamic state never
// blocks an ordinary copy: the task slot is freed at expiry.
//
// Removals (ReplicaRemovalObserver): removing a readable dynamic replica
// drops its record; eviction, revoke and reaping (task timeout, lease expiry)
// start the recreate cooldown (object, + the replica's domain when domain-aware;
// DESIGN 3); unmount, a dead client and an explicit Remove do not.
//
// Warmup (stage 2, Target Scenario 3; knob dynamic_replication_warmup_enabled,
// off by default). When a domain's first segment appears (checked every
// dynamic_replication_warmup_domain_poll_ms) or on RequestWarmup(domain), the
// candidates are the objects in recent heat (heat-window keys with at least
// one read in the window, summed over domains) plus the objects holding
// dynamic replicas, hottest first, at most warmup_objects_max. Each is copied
// into the domain with the same lease/version fence as a dynamic copy,
// skipping objects already present there (already_present); at most
// warmup_copies_in_flight_max warmup copies run at once and at most
// warmup_bytes_per_second_max bytes start per second; the rest wait and are
// resumed by a timer. Warmup decisions are logged with kind "warmup".
//
// Decisions: every admission, proposal and warmup decision goes to the
// DecisionSink (nullable) and to ReplicationMetrics, under one lock so the
// log order is the decision order.
//
// Dynamic state lives in master memory only; it is not persisted across a
// master restart (DESIGN 11).
//
// Thread safety: every public method is thread-safe. The read path takes no
// lock (but timer_mu_ when it arms the drain timer, once per drain
// interval); reads with over-long keys take the heat window's shard lock.
// Drains serialise on drain_mu_ and take the window's and the trigger
// queue's leaf locks and timer_mu_. Decisions and
// the copy lifecycle serialise on one control lock (never taken by the read
// path or by the removal observer); the master is never called with the
// state lock held, because its observers take that lock.
// Determinism: ordered containers only; used from one thread (the
// simulator), the same calls give the same decisions, ids and log.
#ifndef HEATSINK_CORE_REPLICATION_DYNAMIC_REPLICATION_H_
#define HEATSINK_CORE_REPLICATION_DYNAMIC_REPLICATION_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/base/mutex.h"
#include "core/env/env.h"
#include "core/master/master_observers.h"
#include "core/master/master_service.h"
#include "core/replication/admission_decision.h"
#include "core/replication/admission_trigger_queue.h"
#include "core/replication/cooldown.h"
#include "core/replication/decision.h"
#include "core/replication/dynamic_lease_table.h"
#include "core/replication/heat_read_buffer.h"
#include "core/replication/heat_recheck.h"
#include "core/replication/heat_window.h"
#include "core/replication/placement.h"
#include "core/replication/replica_action.h"
#include "core/replication/replication_knobs.h"
#include "core/replication/replication_metrics.h"

namespace heatsink {

absl::string_view PendingPhaseName(PendingPhase p);

// A read-only copy of one pending action, for tests and reports.
struct PendingActionView {
  ReplicaActionLease lease;
  PendingPhase phase = PendingPhase::kGranted;
  ReplicaId target_replica;  // valid once in flight
  bool cross_domain = false;
};

// A readable dynamic replica the master holds.
struct DynamicReplicaView {
  ObjectName name;
  SegmentId segment;
  Domain domain;
  LeaseId lease_id;
  Version version = 0;
  uint64_t size_bytes = 0;  // the object's size, the bytes the replica holds
};

struct WarmupRequestResult {
  Domain domain;
  int64_t candidates = 0;  // objects the warmup will consider
};

// Counters for tests and summaries (the metrics registry has the same
// numbers under stable names).
struct DynamicReplicationStats {
  int64_t admission_passes = 0;  // background worker runs
  int64_t triggers_processed = 0;
  int64_t decisions = 0;  // records emitted (heat, proposal, warmup)
  int64_t leases_granted = 0;
  int64_t leases_expired = 0;
  int64_t copies_started = 0;
  int64_t copies_completed = 0;
  int64_t copies_failed = 0;  // start failures and in-flight copies reaped at expiry
  int64_t copies_revoked = 0;
  int64_t warmup_copies = 0;
  int64_t pending = 0;           // now
  int64_t dynamic_replicas = 0;  // now
  // Sustained heat: re-evaluations lost to a full recheck table, and
  // triggers lost to a full trigger queue (read path and re-evaluations).
  int64_t rechecks_lost = 0;
  int64_t triggers_lost = 0;
};

class DynamicReplication final : public ReadObserver,
                                 public ReplicaRemovalObserver,
                                 public OptionalReplicaRanker {
 public:
  // Does not register itself as an observer (ReplicatedMaster does).
  // REQUIRES: knobs.Validate().ok() (checked); env, master and metrics
  // outlive this object; sink may be null.
  DynamicReplication(Env* env, MasterService* master, const ReplicationKnobs& knobs,
                     DecisionSink* sink, MetricsRegistry* metrics);
  // Cancels every timer it armed. REQUIRES: no call into this object runs
  // concurrently with or after destruction.
  ~DynamicReplication() override;
  DynamicReplication(const DynamicReplication&) = delete;
  DynamicReplication& operator=(const DynamicReplication&) = delete;

  // The knobs as given at construction; the mode may have changed since
  // (mode()).
  const ReplicationKnobs& knobs() const { return knobs_; }

  // --- Mode (the RFC's rollout: off -> observe -> enforce) -------------------
  // A flag on its own (nothing is published with it), so relaxed: admission
  // reads it under control_mu_, which SetMode holds to change it.
  DynamicReplicationMode mode() const { return mode_.load(std::memory_order_relaxed); }
  // Changes dynamic_replication_mode while the master runs, effective for
  // every read and admission that starts afterwards. Turning it off stops
  // heat recording and new admissions (queued triggers and proposals are
  // rejected with mode_off) and drops queued warmup work; leases already
  // granted keep their copies, which finish or expire as usual. Turning it
  // on starts from the heat recorded from then on (and the warmup domain
  // poll, when warmup is enabled). Observe <-> enforce changes only what
  // admission does with a complete decision.
  void SetMode(DynamicReplicationMode mode);
  // Lease ids start at `first` (ReplicatedMaster::SetIdEpoch).
  // REQUIRES: no lease granted yet (HS_CHECK), first > 0.
  void SetFirstLeaseId(uint64_t first);

  // --- Observers (called by the master) ------------------------------------
  // The heat observation: appends the read to the read buffer (see "Read
  // path" above).
  void OnKeyRead(const ReadObservation& read) override;
  void OnReplicaRemoved(const ReplicaRemoval& removal) override;
  // The window count of (object, `domain` when domain-aware): eviction drops
  // the coldest dynamic replicas first.
  int64_t OptionalReplicaHeat(const ObjectName& name, absl::string_view domain) const override;

  // --- Control plane --------------------------------------------------------
  // Internal control-plane entry (not a public client RPC). Drains the read
  // buffer first (DrainReads), so the proposal sees every earlier read. OK: the lease
  // (enforce) or the would-be plan (observe, would_propose = true). Same
  // proposal id and identical content returns the same lease while it lives
  // (a repeat is not a new decision: nothing is logged); different content
  // is ALREADY_EXISTS (conflict). Rejections carry their reason
  // (RejectReasonOf).
  [[nodiscard]] absl::StatusOr<ReplicaActionLease> SubmitReplicaActionProposal(
      const ReplicaActionProposal& proposal);

  // --- Dynamic copy lifecycle (the source store worker) --------------------
  // MasterEndpoint::CheckCopyLease: a read under a copy lease, checked
  // against the pending action of the lease (granted or in flight).
  [[nodiscard]] absl::StatusOr<CopyLeaseGrant> CheckCopyLease(ClientId asker,
                                                              const CopyLeaseQuery& query);
  [[nodiscard]] absl::StatusOr<CopyStartResponse> DynamicReplicaCopyStart(
      ClientId client, const CopyStartRequest& req);
  [[nodiscard]] absl::Status DynamicReplicaCopyEnd(ClientId client, const CopyEndRequest& req);
  [[nodiscard]] absl::Status DynamicReplicaCopyRevoke(ClientId client,
                                                      const CopyRevokeRequest& req);

  // --- Warmup (stage 2) -----------------------------------------------------
  // Starts (or extends) a warmup of `domain`, after draining the read buffer
  // (DrainReads) so that its candidates include every earlier read.
  // FAILED_PRECONDITION when warmup
  // is disabled or the mode is not enforce; INVALID_ARGUMENT for a bad domain.
  [[nodiscard]] absl::StatusOr<WarmupRequestResult> RequestWarmup(absl::string_view domain);

  // --- Background work --------------------------------------------------------
  // Applies every buffered read to the heat window now, on the caller's
  // thread, and queues the triggers of reads that crossed (the Executor does
  // this by itself; tests and benchmarks may call it). Returns reads applied.
  int64_t DrainReads();
  // Drains (DrainReads) and then runs the admission worker now on the
  // caller's thread (the Executor does both by itself; tests and benchmarks
  // may call it). Returns triggers taken.
  int64_t RunAdmission();

  // --- Views ------------------------------------------------------------------
  std::vector<PendingActionView> PendingActions() const;  // by (object, domain)
  std::optional<PendingActionView> FindPending(const ObjectName& name,
                                               absl::string_view target_domain = "") const;
  std::vector<DynamicReplicaView> DynamicReplicas() const;  // by (object, segment)
  // Whether the recreate / admission cooldown is active for the object (and
  // domain when domain-aware) now.
  bool RecreateCooldownActive(const ObjectName& name, absl::string_view domain = "");
  bool AdmissionCooldownActive(const ObjectName& name, absl::string_view requester_domain = "");
  int64_t HeatCount(const ObjectName& name, absl::string_view requester_domain = "") const;
  DynamicReplicationStats Stats() const;
  const HeatWindow& heat_window() const { return window_; }
  const HeatReadBuffer& read_buffer() const { return reads_; }
  const AdmissionTriggerQueue& trigger_queue() const { return triggers_; }
  const HeatRecheckQueue& recheck_queue() const { return rechecks_; }
  // Carries counts kept off the read path into the metrics registry (the
  // heat window's record count becomes hot_read_observations_total, the read
  // buffer's drops heat_reads_dropped_total). Call before reading the
  // registry; ReplicatedMaster::SyncMetrics() does.
  void SyncMetrics();

  // OK, or INTERNAL naming the first violated invariant: every pending action
  // has a live master task carrying its lease id and version (or its expiry
  // timer is due), in-flight actions have a PROCESSING dynamic target
  // replica, every dynamic replica record matches a COMPLETE dynamic replica
  // of the current version, the replica gauge equals the record count,
  // tables within their limits, heat window consistent.
  [[nodiscard]] absl::Status CheckInvariants() const;

 private:
  using PendingKey = DynamicLeaseTable::Key;
  using Pending = DynamicLeaseTable::Action;
  struct DynamicRecord {
    Domain domain;
    LeaseId lease_id;
    Version version = 0;
    uint64_t size_bytes = 0;
    // Cold release: since when every check found the key cold (kNotCold: the
    // last check found it hot or read-leased, or none ran yet).
    TimeNs cold_since_ns = kNotCold;
    // The newest read of the key (in this replica's domain when
    // domain-aware) made while the object was at its cap: such reads record
    // no heat (DESIGN 2), so the release check looks here too. kNotCold: none.
    TimeNs capped_read_ns = kNotCold;
  };
  static constexpr TimeNs kNotCold = -1;
  struct AdmissionResult {
    DecisionRecord record;
    std::optional<ReplicaActionLease> lease;
    absl::Status status;  // OK exactly when accepted or would_propose
    // Warmup only: the byte budget is spent; nothing was decided, retry.
    bool deferred = false;
    // The key's window count when it was admitted (0 for warmup).
    int64_t heat = 0;
  };
  struct WarmupJob {
    Domain domain;
    std::vector<ObjectName> queue;  // remaining candidates, hottest first
    size_t next = 0;
  };

  // The warmup byte budget is spent per window of this length.
  static constexpr DurationNs kWarmupBudgetWindowNs = kNsPerSec;

  bool domain_aware() const { return knobs_.dynamic_replication_domain_aware; }
  Domain PendingDomain(absl::string_view target_domain) const;
  // The replica's domain (the default domain when it has no location).
  static absl::string_view ReplicaDomain(const ReplicaDescriptor& d);

  // The admission decision: DecideAdmission (admission_decision.h) over
  // this object's tables (AdmissionTables), then the verdict applied: a
  // rejection returned as it is, would_propose with the admission cooldown
  // started, a grant through Grant.
  AdmissionResult Admit(const AdmissionInput& input) ABSL_EXCLUSIVE_LOCKS_REQUIRED(control_mu_);
  class AdmissionTables;
  AdmissionContext AdmissionContextNow() const;
  // The cap at a copy's start: replica_limit when `object` already holds
  // dynamic_replication_max_memory_replicas readable MEMORY replicas (in
  // `target_domain` when domain-aware); OK otherwise.
  absl::Status CheckCapAtCopyStart(const ObjectView& object, const ReplicaActionLease& lease,
                                   absl::string_view target_domain) const;
  AdmissionResult Reject(AdmissionResult result, RejectReason reason, std::string message);
  // Installs the pending state, creates the task, arms the expiry timer;
  // rolls the pending state back when the task cannot be created.
  AdmissionResult Grant(AdmissionResult result, const AdmissionInput& input,
                        const ObjectView& object, ReplicaId source_replica, bool cross_domain,
                        ReplicaActionLease lease) ABSL_EXCLUSIVE_LOCKS_REQUIRED(control_mu_);
  void Emit(const DecisionRecord& record) ABSL_EXCLUSIVE_LOCKS_REQUIRED(control_mu_);

  void WakeAdmissionWorker();
  // Queues an admission trigger for `key` (deduplicated) and wakes the
  // worker when the queue was empty. False when the queue is full.
  bool QueueTrigger(TimeNs now, HeatKeyView key);

  // Sustained heat: schedules the next look at a heat decision's key
  // (see "Sustained heat" above).
  void RearmAfter(const AdmissionInput& input, const AdmissionResult& result)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(control_mu_);
  void ScheduleRecheck(TimeNs due_ns, HeatKeyView key);
  // Parks `key` on a pending dynamic copy of its object, of any domain
  // (the first in PendingKey order); false when none is pending.
  bool ParkOnPendingCopyOf(const HeatKey& key) ABSL_LOCKS_EXCLUDED(mu_);
  // Arms the recheck timer for `due_ns` unless it is armed for that time or
  // earlier.
  void ArmRecheckTimer(TimeNs due_ns);
  // Takes the due keys, queues triggers for those still hot, re-arms.
  void RunRechecks();
  // The object holds its cap of readable MEMORY replicas (in the requester's
  // domain when domain-aware), as the read path counts them (DESIGN 2).
  bool AtReplicaCap(const ObjectView& object, absl::string_view requester_domain) const;
  // The blocker a heat key parks on while `pending_key`'s copy runs.
  static HeatKey BlockerOf(const PendingKey& pending_key);

  // Cold release (knob dynamic_replication_release_enabled).
  void ScheduleReleaseCheck();
  void RunReleaseCheck();
  // Logs the drop of a readable dynamic replica (evict / release).
  void EmitDrop(const ReplicaRemoval& removal);
  // The admission worker's pass: up to one batch of triggers.
  int64_t RunAdmissionPass();
  // DESIGN 2: the read's object already has its replica cap (in `domain`
  // when domain-aware), so the read records no heat.
  bool AtReplicaLimit(const ReadObservation& read, absl::string_view domain) const;
  // Counts one read in the window and queues a trigger if it crossed.
  void ApplyRead(TimeNs t_ns, HeatKeyView key);
  // Notes reads made at the replica cap on the dynamic replicas they read
  // (DynamicRecord::capped_read_ns), for the cold release.
  void NoteCappedReads(const std::vector<std::pair<TimeNs, HeatKey>>& reads);
  // The drain timer (armed by the first read after a drain) and the
  // immediate drain a high-water read asks for; each at most once at a time.
  void ArmDrainTimer();
  void PostUrgentDrain();
  void DrainFromTimer();
  void OnLeaseTimer(LeaseId lease_id);
  // First step of a one-shot timer's callback: clears the member the timer's
  // id was kept in and returns false once the object is stopping (the
  // callback then does nothing).
  bool TimerFired(TimerId DynamicReplication::*slot) ABSL_LOCKS_EXCLUDED(timer_mu_);
  TimerId ArmLeaseTimerLocked(LeaseId lease_id, DurationNs delay)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CancelTimerLocked(TimerId id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops the pending action of `lease_id` (if still there) and, when
  // `retire_task`, retires its task with `cause` (a started copy's target is
  // then removed and the removal observer sees `cause`).
  void ClearPending(LeaseId lease_id, bool retire_task, RemovalCause cause)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(control_mu_);
  // `copied`: the copy ended and its target is now a readable replica (the
  // target keeps its heat share); otherwise the action failed or was replaced.
  std::optional<Pending> TakePendingLocked(LeaseId lease_id, bool copied = false)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void StartRecreateCooldown(TimeNs now, const ObjectName& name, absl::string_view domain);
  absl::StatusOr<Pending> FindLeaseForCall(const CopyTaskFence& fence) const;
  // End and Revoke: the call presents the lease's fence (task and version),
  // comes from its source client, and finds the copy in flight.
  absl::Status CheckInFlightCall(ClientId client, const CopyTaskFence& fence,
                                 const Pending& p) const;

  // Warmup.
  void PollDomains();
  void ScheduleDomainPoll();
  void StartWarmup(const Domain& domain) ABSL_EXCLUSIVE_LOCKS_REQUIRED(control_mu_);
  void RunWarmup() ABSL_EXCLUSIVE_LOCKS_REQUIRED(control_mu_);
  void ScheduleWarmupResume(DurationNs delay) ABSL_EXCLUSIVE_LOCKS_REQUIRED(control_mu_);
  void ResumeWarmupIfWaiting() ABSL_EXCLUSIVE_LOCKS_REQUIRED(control_mu_);
  int64_t WarmupInFlight() const;

  TimeNs Now() const { return env_->NowNs(); }

  Env* const env_;
  MasterService* const master_;
  const ReplicationKnobs knobs_;
  DecisionSink* const sink_;
  ReplicationMetrics metrics_;
  const int64_t hit_count_;
  std::atomic<DynamicReplicationMode> mode_;  // SetMode holds control_mu_ to change it
  bool enabled() const { return mode() != DynamicReplicationMode::kOff; }

  HeatWindow window_;
  HeatReadBuffer reads_;
  // Set while a drain timer is armed (cleared when it fires, before it
  // drains); sequentially consistent against the stripes' tails, so a read
  // either sees it clear and arms a timer, or the firing drain sees the read.
  alignas(64) std::atomic<bool> drain_timer_armed_{false};
  std::atomic<bool> urgent_drain_posted_{false};
  // Serialises drains (the buffer has one consumer).
  Mutex drain_mu_ ABSL_ACQUIRED_BEFORE(timer_mu_);
  // A drain's reads made at the cap (cold release only); reused between drains.
  std::vector<std::pair<TimeNs, HeatKey>> capped_reads_ ABSL_GUARDED_BY(drain_mu_);
  AdmissionTriggerQueue triggers_;
  HeatRecheckQueue rechecks_;
  CooldownTable admission_cooldown_;
  CooldownTable recreate_cooldown_;

  // Serialises decisions and the copy lifecycle (outer lock; held across
  // master calls).
  mutable Mutex control_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  // Guards the tables below (inner lock; never held across a master call).
  mutable Mutex mu_;
  // Granted actions by (object, target domain) and lease id, and the
  // proposals they answer.
  DynamicLeaseTable leases_ ABSL_GUARDED_BY(mu_);
  std::map<ObjectName, std::map<SegmentId, DynamicRecord>> dynamic_ ABSL_GUARDED_BY(mu_);
  int64_t dynamic_count_ ABSL_GUARDED_BY(mu_) = 0;
  // Heat-aware targets (dynamic_replication_target_heat_aware): an admitted
  // object's heat (its window count at its latest admission) is shared
  // evenly by the segments of its readable replicas and granted copies;
  // hosted_heat_ sums the shares per segment (in thousandths). An object
  // leaves the table when it keeps one segment (no dynamic replica, no copy).
  struct HeatShare {
    int64_t heat = 0;
    std::set<SegmentId> segments;
  };
  std::map<ObjectName, HeatShare> heat_shares_ ABSL_GUARDED_BY(mu_);
  std::map<SegmentId, int64_t> hosted_heat_ ABSL_GUARDED_BY(mu_);
  void AddHostedHeatLocked(SegmentId segment, int64_t delta) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Applies `change` to the object's share and moves the per-segment sums.
  template <typename Change>
  void UpdateHeatShareLocked(const ObjectName& name, Change change)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    HeatShare& share = heat_shares_[name];
    auto apply = [&](int64_t sign) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      if (share.segments.empty()) return;
      const int64_t each = share.heat * 1000 / static_cast<int64_t>(share.segments.size());
      for (SegmentId s : share.segments) AddHostedHeatLocked(s, sign * each);
    };
    apply(-1);
    change(share);
    apply(1);
    if (share.segments.size() < 2) {
      apply(-1);
      heat_shares_.erase(name);
    }
  }
  std::set<Domain> known_domains_ ABSL_GUARDED_BY(control_mu_);
  std::vector<WarmupJob> warmup_jobs_ ABSL_GUARDED_BY(control_mu_);
  TimeNs warmup_budget_window_start_ns_ ABSL_GUARDED_BY(control_mu_) = 0;
  int64_t warmup_budget_bytes_used_ ABSL_GUARDED_BY(control_mu_) = 0;
  DynamicReplicationStats stats_ ABSL_GUARDED_BY(mu_);

  Mutex sync_mu_;
  int64_t synced_window_records_ ABSL_GUARDED_BY(sync_mu_) = 0;
  int64_t synced_reads_dropped_ ABSL_GUARDED_BY(sync_mu_) = 0;

  Mutex timer_mu_ ABSL_ACQUIRED_AFTER(mu_);
  TimerId admission_timer_ ABSL_GUARDED_BY(timer_mu_) = kNoTimer;
  TimerId drain_timer_ ABSL_GUARDED_BY(timer_mu_) = kNoTimer;
  TimerId urgent_drain_timer_ ABSL_GUARDED_BY(timer_mu_) = kNoTimer;
  TimerId domain_poll_timer_ ABSL_GUARDED_BY(timer_mu_) = kNoTimer;
  TimerId warmup_timer_ ABSL_GUARDED_BY(timer_mu_) = kNoTimer;
  TimerId recheck_timer_ ABSL_GUARDED_BY(timer_mu_) = kNoTimer;
  TimeNs recheck_timer_due_ns_ ABSL_GUARDED_BY(timer_mu_) = 0;
  uint64_t recheck_timer_generation_ ABSL_GUARDED_BY(timer_mu_) = 0;
  TimerId release_timer_ ABSL_GUARDED_BY(timer_mu_) = kNoTimer;
  std::set<TimerId> lease_timers_ ABSL_GUARDED_BY(timer_mu_);
  bool stopping_ ABSL_GUARDED_BY(timer_mu_) = false;
  std::atomic<uint64_t> next_lease_id_{1};
};

}  // namespace heatsink

#endif  // HEATSINK_CORE_REPLICATION_DYNAMIC_REPLICATION_H_
