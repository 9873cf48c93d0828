// DynamicReplication, part two: pending state and lease expiry, replica
// removals and the recreate cooldown, the dynamic copy lifecycle
// (DynamicReplicaCopyStart/End/Revoke), views and invariants. Part one is
// dynamic_replication.cc; sustained heat is dynamic_replication_rechecks.cc
// and warmup dynamic_replication_warmup.cc.
#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/base/status_macros.h"
#include "core/replication/dynamic_replication.h"
#include "core/replication/placement.h"

namespace heatsink {
namespace {

// Removal causes that are reclaim (eviction, cold release) or the failure of a dynamic copy
// (revoke, reaping at timeout or lease expiry): they start the recreate
// cooldown (DESIGN 3). Unmount, a dead client, a cancelled copy (the master
// cancels copies whose source or target segment leaves), an explicit Remove
// and put failures do not: the target vanished or the object went away, no
// reclaim freed that capacity.
bool StartsRecreateCooldown(RemovalCause cause) {
  switch (cause) {
    case RemovalCause::kEviction:
    case RemovalCause::kReleased:
    case RemovalCause::kCopyRevoked:
    case RemovalCause::kCopyTimedOut:
      return true;
    case RemovalCause::kCopyCancelled:
    case RemovalCause::kUnmount:
    case RemovalCause::kClientDead:
    case RemovalCause::kRemove:
    case RemovalCause::kPutRevoked:
    case RemovalCause::kPutDiscarded:
    case RemovalCause::kSuperseded:
      return false;
  }
  return false;
}

}  // namespace

// ---------------------------------------------------------------------------
// Pending state, timers
// ---------------------------------------------------------------------------

TimerId DynamicReplication::ArmLeaseTimerLocked(LeaseId lease_id, DurationNs delay) {
  MutexLock lock(&timer_mu_);
  if (stopping_) return kNoTimer;
  const TimerId id = env_->executor->PostAfter(std::max<DurationNs>(0, delay),
                                               [this, lease_id]() { OnLeaseTimer(lease_id); });
  lease_timers_.insert(id);
  return id;
}

void DynamicReplication::CancelTimerLocked(TimerId id) {
  if (id == kNoTimer) return;
  MutexLock lock(&timer_mu_);
  lease_timers_.erase(id);
  env_->executor->Cancel(id);
}

std::optional<DynamicReplication::Pending> DynamicReplication::TakePendingLocked(LeaseId lease_id,
                                                                                bool copied) {
  std::optional<std::pair<PendingKey, Pending>> taken = leases_.Take(lease_id);
  if (!taken.has_value()) return std::nullopt;
  const PendingKey key = std::move(taken->first);
  Pending p = std::move(taken->second);
  if (!copied && heat_shares_.count(p.lease.name) > 0) {
    UpdateHeatShareLocked(p.lease.name,
                          [&](HeatShare& share) { share.segments.erase(p.lease.target_segment); });
  }
  --stats_.pending;
  CancelTimerLocked(p.expiry_timer);
  if (p.phase == PendingPhase::kInFlight && p.cross_domain) {
    metrics_.cross_domain_copies_in_flight.Add(-1);
  }
  // Sustained heat: the keys this copy held back are looked at now.
  const TimeNs now = Now();
  if (rechecks_.ReleaseParked(BlockerOf(key), now) > 0) ArmRecheckTimer(now);
  return p;
}

void DynamicReplication::ClearPending(LeaseId lease_id, bool retire_task, RemovalCause cause) {
  std::optional<Pending> p;
  {
    MutexLock lock(&mu_);
    p = TakePendingLocked(lease_id);
  }
  if (!p.has_value()) return;
  // Called without the state lock: the master notifies removals (a started
  // copy's target) to OnReplicaRemoved, which takes it.
  if (retire_task && p->lease.task_id.valid()) {
    (void)master_->CancelCopyTask(p->lease.task_id, cause);
  }
}

void DynamicReplication::OnLeaseTimer(LeaseId lease_id) {
  MutexLock control(&control_mu_);
  std::optional<Pending> p;
  {
    MutexLock lock(&mu_);
    Pending* found = leases_.FindByLease(lease_id);
    if (found == nullptr) return;
    Pending& live = *found;
    {
      MutexLock timer_lock(&timer_mu_);
      lease_timers_.erase(live.expiry_timer);
    }
    live.expiry_timer = kNoTimer;  // this timer is the one running
    p = live;
    ++stats_.leases_expired;
    if (p->phase == PendingPhase::kInFlight) {
      ++stats_.copies_failed;
      metrics_.copy_tasks_failed.Add();
    }
  }
  // Granted: the task was never consumed; retire it so the key's task slot
  // is free (expired dynamic state never blocks an ordinary copy).
  // In flight: the copy is cancelled; its target replica is removed with
  // kCopyTimedOut, which starts the recreate cooldown in OnReplicaRemoved.
  ClearPending(lease_id, /*retire_task=*/true,
               p->phase == PendingPhase::kInFlight ? RemovalCause::kCopyTimedOut
                                                   : RemovalCause::kCopyCancelled);
  ResumeWarmupIfWaiting();
}

void DynamicReplication::StartRecreateCooldown(TimeNs now, const ObjectName& name,
                                               absl::string_view domain) {
  const Domain d = domain_aware() ? NormalizeDomain(domain) : Domain();
  // A full table only loses the damping.
  (void)recreate_cooldown_.Start(now, HeatKeyView{name.tenant, name.key, d},
                                 knobs_.recreate_cooldown_ns());
}

void DynamicReplication::OnReplicaRemoved(const ReplicaRemoval& removal) {
  if (removal.replica.status == ReplicaStatus::kComplete) {
    MutexLock lock(&mu_);
    if (heat_shares_.count(removal.name) > 0) {
      UpdateHeatShareLocked(removal.name, [&](HeatShare& share) {
        share.segments.erase(removal.replica.segment_id);
      });
    }
  }
  if (!removal.replica.dynamic) return;
  const ReplicaDescriptor& replica = removal.replica;
  bool dropped = false;
  {
    MutexLock lock(&mu_);
    if (replica.status == ReplicaStatus::kComplete) {
      auto obj = dynamic_.find(removal.name);
      auto rec = obj != dynamic_.end() ? obj->second.find(replica.segment_id)
                                       : std::map<SegmentId, DynamicRecord>::iterator();
      if (obj != dynamic_.end()) {
        if (rec != obj->second.end()) {
          obj->second.erase(rec);
          --dynamic_count_;
          metrics_.dynamic_replicas.Add(-1);
          dropped = removal.cause == RemovalCause::kEviction ||
                    removal.cause == RemovalCause::kReleased;
        }
        if (obj->second.empty()) dynamic_.erase(obj);
      }
    } else {
      // The PROCESSING target of an in-flight copy (unmount, dead client,
      // revoke, timeout): the action is over.
      if (const Pending* found = leases_.FindByLease(replica.lease_id); found != nullptr) {
        const Pending& p = *found;
        if (p.phase == PendingPhase::kInFlight && p.target_replica == replica.replica_id) {
          (void)TakePendingLocked(replica.lease_id);
        }
      }
    }
  }
  if (StartsRecreateCooldown(removal.cause)) {
    StartRecreateCooldown(removal.t_ns, removal.name, ReplicaDomain(replica));
  }
  if (dropped) EmitDrop(removal);
}

void DynamicReplication::EmitDrop(const ReplicaRemoval& removal) {
  // Not under control_mu_ (the removal observer never takes it): in the
  // runtime a drop may interleave with an admission's line; in the
  // simulator (one thread) the log order is the event order.
  DecisionRecord r;
  r.t_ns = removal.t_ns;
  r.kind = removal.cause == RemovalCause::kReleased ? DecisionKind::kRelease : DecisionKind::kEvict;
  r.tenant = removal.name.tenant;
  r.key = removal.name.key;
  if (domain_aware()) r.target_domain = std::string(ReplicaDomain(removal.replica));
  r.outcome = DecisionOutcome::kDropped;
  r.target_segment = removal.replica.segment_id;
  r.lease_id = removal.replica.lease_id;
  r.version = removal.replica.version;
  {
    MutexLock lock(&mu_);
    ++stats_.decisions;
  }
  metrics_.CountDecision(r);
  if (sink_ != nullptr) sink_->Record(r);
}

int64_t DynamicReplication::OptionalReplicaHeat(const ObjectName& name,
                                                absl::string_view domain) const {
  const absl::string_view d = domain_aware() ? domain : absl::string_view();
  return window_.CountInWindow(Now(), HeatKeyView{name.tenant, name.key, d});
}

// ---------------------------------------------------------------------------
// Cold release (beyond the RFC; off by default)
// ---------------------------------------------------------------------------

void DynamicReplication::ScheduleReleaseCheck() {
  MutexLock lock(&timer_mu_);
  if (stopping_ || release_timer_ != kNoTimer) return;
  // One check per heat sub-bucket: the window's count changes no faster.
  const DurationNs period = window_.options().window_ns / window_.options().sub_buckets;
  release_timer_ = env_->executor->PostAfter(period, [this]() {
    if (!TimerFired(&DynamicReplication::release_timer_)) return;
    // Mode off stops the checks; SetMode starts them again.
    if (!enabled()) return;
    RunReleaseCheck();
    ScheduleReleaseCheck();
  });
}

void DynamicReplication::RunReleaseCheck() {
  const TimeNs now = Now();
  struct Due {
    ObjectName name;
    SegmentId segment;
  };
  std::vector<Due> due;
  const int32_t span_sub_buckets = knobs_.release_span_sub_buckets();
  const DurationNs bucket_ns = window_.options().window_ns / window_.options().sub_buckets;
  {
    MutexLock lock(&mu_);
    for (auto& [name, by_segment] : dynamic_) {
      for (auto& [segment, record] : by_segment) {
        const absl::string_view domain = domain_aware() ? absl::string_view(record.domain) : "";
        const int64_t count = window_.CountInLastSubBuckets(
            now, HeatKeyView{name.tenant, name.key, domain}, span_sub_buckets);
        // A read at the cap in the span (same sub-bucket rule) keeps it warm.
        const bool read_at_cap =
            record.capped_read_ns != kNotCold &&
            record.capped_read_ns / bucket_ns > now / bucket_ns - span_sub_buckets;
        if (count >= knobs_.dynamic_replication_release_below_count || read_at_cap) {
          record.cold_since_ns = kNotCold;
        } else if (record.cold_since_ns == kNotCold) {
          record.cold_since_ns = now;
        } else if (now - record.cold_since_ns >= knobs_.release_after_ns()) {
          due.push_back({name, segment});
        }
      }
    }
  }
  for (const Due& d : due) {
    // OK: OnReplicaRemoved logs the release and starts the recreate cooldown.
    const absl::Status released = master_->ReleaseDynamicReplica(d.name, d.segment);
    if (!absl::IsFailedPrecondition(released)) continue;
    // Read-leased (its reads may not record heat: at its cap, DESIGN 2) or
    // busy: in use, so the wait starts again.
    MutexLock lock(&mu_);
    auto obj = dynamic_.find(d.name);
    if (obj == dynamic_.end()) continue;
    auto rec = obj->second.find(d.segment);
    if (rec != obj->second.end()) rec->second.cold_since_ns = now;
  }
}

// ---------------------------------------------------------------------------
// Dynamic copy lifecycle
// ---------------------------------------------------------------------------

absl::StatusOr<DynamicReplication::Pending> DynamicReplication::FindLeaseForCall(
    const CopyTaskFence& fence) const {
  if (!fence.lease_id.valid()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "task ", fence.task_id.value, " carries no lease; use the ordinary copy calls"));
  }
  MutexLock lock(&mu_);
  const Pending* found = leases_.FindByLease(fence.lease_id);
  if (found == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("no pending dynamic action for lease ",
                                                      fence.lease_id.value, " (task ",
                                                      fence.task_id.value, "): stale task"));
  }
  return *found;
}

absl::StatusOr<CopyLeaseGrant> DynamicReplication::CheckCopyLease(
    ClientId asker, const CopyLeaseQuery& query) {
  const TimeNs now = Now();
  std::optional<ReplicaActionLease> found;
  {
    MutexLock lock(&mu_);
    if (const Pending* p = leases_.FindByLease(query.lease_id); p != nullptr) found = p->lease;
  }
  if (!found.has_value() || IsExpired(now, found->expiration_ns)) {
    return absl::NotFoundError(
        absl::StrCat("copy lease ", query.lease_id.value, " is not live"));
  }
  const ReplicaActionLease& lease = *found;
  if (asker != lease.source_client) {
    return absl::PermissionDeniedError(absl::StrCat(
        "client ", asker.value, " does not serve the source of copy lease ",
        lease.lease_id.value));
  }
  // The lease's task names the source replica's range; the target segment's
  // owner is the other store of the copy.
  const std::optional<Task> task = master_->GetTask(lease.task_id);
  if (!task.has_value()) {
    return absl::NotFoundError(
        absl::StrCat("copy lease ", query.lease_id.value, " has no task any more"));
  }
  const std::optional<SegmentView> target = master_->GetSegment(lease.target_segment);
  const bool reader_holds = query.reader == lease.source_client ||
                            (target.has_value() && query.reader == target->location.owner);
  if (!query.reader.valid() || !reader_holds) {
    return absl::PermissionDeniedError(absl::StrCat("client ", query.reader.value,
                                                    " holds no part of copy lease ",
                                                    lease.lease_id.value));
  }
  const ReplicaCopyPayload& copy = task->copy;
  if (query.segment != copy.source_segment || query.offset < copy.source_offset ||
      query.size > copy.size_bytes ||
      query.offset - copy.source_offset > copy.size_bytes - query.size) {
    return absl::OutOfRangeError(absl::StrCat(
        "segment ", query.segment.value, " [", query.offset, ", +", query.size,
        ") is not within the source of copy lease ", lease.lease_id.value, " (segment ",
        copy.source_segment.value, " [", copy.source_offset, ", +", copy.size_bytes, "))"));
  }
  return CopyLeaseGrant{lease.expiration_ns - now};
}

absl::Status DynamicReplication::CheckCapAtCopyStart(const ObjectView& object,
                                                     const ReplicaActionLease& lease,
                                                     absl::string_view target_domain) const {
  // Admission counted the cap; a store that reported its replicas late
  // (after a master restart) may have filled it since.
  int64_t counted = 0;
  for (const ReplicaDescriptor& d : object.replicas) {
    if (d.kind != ReplicaKind::kMemory || d.status != ReplicaStatus::kComplete) continue;
    if (domain_aware() && DomainCost(target_domain, ReplicaDomain(d)) != 0) continue;
    ++counted;
  }
  if (counted < knobs_.dynamic_replication_max_memory_replicas) return absl::OkStatus();
  return RejectionStatus(
      RejectReason::kReplicaLimit,
      absl::StrCat("object '", lease.name.key, "' has ", counted,
                   " readable MEMORY replicas (dynamic_replication_max_memory_replicas ",
                   knobs_.dynamic_replication_max_memory_replicas, ") since lease ",
                   lease.lease_id.value, " was granted"));
}

absl::StatusOr<CopyStartResponse> DynamicReplication::DynamicReplicaCopyStart(
    ClientId client, const CopyStartRequest& req) {
  MutexLock control(&control_mu_);
  const TimeNs now = Now();
  HS_ASSIGN_OR_RETURN(const Pending p, FindLeaseForCall(req));
  const ReplicaActionLease& lease = p.lease;
  if (p.phase != PendingPhase::kGranted) {
    return absl::FailedPreconditionError(
        absl::StrCat("dynamic copy of lease ", lease.lease_id.value, " already started"));
  }
  // Checks that clear the pending state are failures of the action itself;
  // the others come from stale or foreign callers and leave it alone
  // (DESIGN 5).
  auto fail = [&](absl::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(control_mu_) {
    {
      MutexLock lock(&mu_);
      ++stats_.copies_failed;
    }
    metrics_.copy_tasks_failed.Add();
    ClearPending(lease.lease_id, /*retire_task=*/true, RemovalCause::kCopyCancelled);
    ResumeWarmupIfWaiting();
    return status;
  };
  if (IsExpired(now, lease.expiration_ns)) {
    {
      MutexLock lock(&mu_);
      ++stats_.leases_expired;
    }
    return fail(RejectionStatus(
        RejectReason::kExpired,
        absl::StrCat("lease ", lease.lease_id.value, " expired at ", lease.expiration_ns, " ns")));
  }
  if (req.version != lease.version) {
    return RejectionStatus(RejectReason::kVersionMismatch,
                           absl::StrCat("fence version ", req.version, " differs from lease ",
                                        lease.lease_id.value, "'s version ", lease.version));
  }
  absl::StatusOr<ObjectView> object = master_->GetObjectView(lease.name);
  if (!object.ok() || object->version != lease.version) {
    return fail(
        RejectionStatus(RejectReason::kVersionMismatch,
                        absl::StrCat("object '", lease.name.key, "' changed since lease ",
                                     lease.lease_id.value, " (version ", lease.version, ")")));
  }
  if (req.task_id != lease.task_id) {
    return absl::AbortedError(absl::StrCat("task ", req.task_id.value, " is not lease ",
                                           lease.lease_id.value, "'s task ", lease.task_id.value));
  }
  const std::optional<Task> task = master_->GetTask(lease.task_id);
  if (!task.has_value()) {
    // The master retired the task (its source or target was unmounted).
    return fail(absl::NotFoundError(absl::StrCat("task ", lease.task_id.value, " of lease ",
                                                 lease.lease_id.value, " is gone")));
  }
  if (task->copy.source_segment != lease.source_segment ||
      task->copy.target_segment != lease.target_segment || task->copy.lease_id != lease.lease_id) {
    return absl::AbortedError(
        absl::StrCat("task ", lease.task_id.value, " does not match lease ", lease.lease_id.value));
  }
  if (client != lease.source_client) {
    return absl::PermissionDeniedError(
        absl::StrCat("client ", client.value, " is not the source client (",
                     lease.source_client.value, ") of lease ", lease.lease_id.value));
  }
  if (task->status != TaskStatus::kProcessing) {
    return absl::FailedPreconditionError(
        absl::StrCat("task ", lease.task_id.value, " was not fetched"));
  }
  const std::optional<SegmentView> target = master_->GetSegment(lease.target_segment);
  if (!target.has_value() || target->unmounting || !target->allocatable) {
    return fail(absl::FailedPreconditionError(absl::StrCat(
        "target segment ", lease.target_segment.value, " is no longer a valid target")));
  }
  if (!lease.warmup) {
    absl::Status cap = CheckCapAtCopyStart(*object, lease, target->location.domain);
    if (!cap.ok()) return fail(std::move(cap));
  }
  absl::StatusOr<CopyStartResponse> started = master_->LeasedCopyStart(client, req);
  if (!started.ok()) {
    const absl::StatusCode code = started.status().code();
    if (code == absl::StatusCode::kPermissionDenied || code == absl::StatusCode::kAborted) {
      return started.status();  // a stale fence: not this action's failure
    }
    // Quota or target failure: clear, so the key is not stuck.
    return fail(started.status());
  }
  {
    MutexLock lock(&mu_);
    Pending* found = leases_.FindByLease(lease.lease_id);
    HS_CHECK(found != nullptr);
    Pending& live = *found;
    live.phase = PendingPhase::kInFlight;
    live.target_replica = started->target_replica;
    if (live.cross_domain) metrics_.cross_domain_copies_in_flight.Add(1);
    ++stats_.copies_started;
  }
  return started;
}

absl::Status DynamicReplication::CheckInFlightCall(ClientId client, const CopyTaskFence& fence,
                                                   const Pending& p) const {
  const ReplicaActionLease& lease = p.lease;
  if (fence.version != lease.version || fence.task_id != lease.task_id) {
    return RejectionStatus(
        RejectReason::kVersionMismatch,
        absl::StrCat("fence (task ", fence.task_id.value, ", version ", fence.version,
                     ") does not match lease ", lease.lease_id.value));
  }
  if (client != lease.source_client) {
    return absl::PermissionDeniedError(absl::StrCat(
        "client ", client.value, " is not the source client of lease ", lease.lease_id.value));
  }
  if (p.phase != PendingPhase::kInFlight) {
    return absl::FailedPreconditionError(
        absl::StrCat("dynamic copy of lease ", lease.lease_id.value, " is not in progress"));
  }
  return absl::OkStatus();
}

absl::Status DynamicReplication::DynamicReplicaCopyEnd(ClientId client, const CopyEndRequest& req) {
  MutexLock control(&control_mu_);
  const TimeNs now = Now();
  HS_ASSIGN_OR_RETURN(const Pending p, FindLeaseForCall(req));
  const ReplicaActionLease& lease = p.lease;
  HS_RETURN_IF_ERROR(CheckInFlightCall(client, req, p));
  if (IsExpired(now, lease.expiration_ns)) {
    {
      MutexLock lock(&mu_);
      ++stats_.leases_expired;
      ++stats_.copies_failed;
    }
    metrics_.copy_tasks_failed.Add();
    ClearPending(lease.lease_id, /*retire_task=*/true, RemovalCause::kCopyTimedOut);
    ResumeWarmupIfWaiting();
    return RejectionStatus(RejectReason::kExpired,
                           absl::StrCat("lease ", lease.lease_id.value, " expired"));
  }
  HS_RETURN_IF_ERROR(master_->LeasedCopyEnd(client, req));
  {
    MutexLock lock(&mu_);
    std::optional<Pending> done = TakePendingLocked(lease.lease_id, /*copied=*/true);
    HS_CHECK(done.has_value());
    const std::optional<SegmentView> target = master_->GetSegment(lease.target_segment);
    DynamicRecord record;
    record.domain = target.has_value() ? target->location.domain : lease.target_domain;
    record.lease_id = lease.lease_id;
    record.version = lease.version;
    record.size_bytes = lease.size_bytes;
    if (dynamic_[lease.name].emplace(lease.target_segment, std::move(record)).second) {
      ++dynamic_count_;
      metrics_.dynamic_replicas.Add(1);

    }
    ++stats_.copies_completed;
  }
  metrics_.copy_tasks_completed.Add();
  metrics_.Copies(p.cross_domain).Add();
  metrics_.CopyBytes(p.cross_domain).Add(static_cast<int64_t>(lease.size_bytes));
  ResumeWarmupIfWaiting();
  return absl::OkStatus();
}

absl::Status DynamicReplication::DynamicReplicaCopyRevoke(ClientId client,
                                                          const CopyRevokeRequest& req) {
  MutexLock control(&control_mu_);
  HS_ASSIGN_OR_RETURN(const Pending p, FindLeaseForCall(req));
  const ReplicaActionLease& lease = p.lease;
  HS_RETURN_IF_ERROR(CheckInFlightCall(client, req, p));
  // The master removes the target with kCopyRevoked; OnReplicaRemoved drops
  // the pending state and starts the recreate cooldown. The task itself ends
  // when the worker reports it.
  HS_RETURN_IF_ERROR(master_->LeasedCopyRevoke(client, req));
  {
    MutexLock lock(&mu_);
    (void)TakePendingLocked(lease.lease_id);  // normally gone already
    ++stats_.copies_revoked;
  }
  metrics_.copy_tasks_revoked.Add();
  ResumeWarmupIfWaiting();
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Views and invariants
// ---------------------------------------------------------------------------

std::vector<PendingActionView> DynamicReplication::PendingActions() const {
  MutexLock lock(&mu_);
  std::vector<PendingActionView> out;
  out.reserve(static_cast<size_t>(leases_.size()));
  for (const auto& [key, p] : leases_.actions()) {
    out.push_back(PendingActionView{p.lease, p.phase, p.target_replica, p.cross_domain});
  }
  return out;
}

std::optional<PendingActionView> DynamicReplication::FindPending(
    const ObjectName& name, absl::string_view target_domain) const {
  MutexLock lock(&mu_);
  const Pending* found = leases_.Find(
      PendingKey{ObjectName{NormalizeTenant(name.tenant), name.key}, PendingDomain(target_domain)});
  if (found == nullptr) return std::nullopt;
  const Pending& p = *found;
  return PendingActionView{p.lease, p.phase, p.target_replica, p.cross_domain};
}

std::vector<DynamicReplicaView> DynamicReplication::DynamicReplicas() const {
  MutexLock lock(&mu_);
  std::vector<DynamicReplicaView> out;
  for (const auto& [name, replicas] : dynamic_) {
    for (const auto& [segment, r] : replicas) {
      out.push_back(
          DynamicReplicaView{name, segment, r.domain, r.lease_id, r.version, r.size_bytes});
    }
  }
  return out;
}

bool DynamicReplication::RecreateCooldownActive(const ObjectName& name, absl::string_view domain) {
  const Domain d = domain_aware() ? NormalizeDomain(domain) : Domain();
  return recreate_cooldown_.Deadline(Now(), HeatKeyView{NormalizeTenant(name.tenant), name.key, d})
      .has_value();
}

bool DynamicReplication::AdmissionCooldownActive(const ObjectName& name,
                                                 absl::string_view requester_domain) {
  const Domain d = domain_aware() ? NormalizeDomain(requester_domain) : Domain();
  return admission_cooldown_.Deadline(Now(), HeatKeyView{NormalizeTenant(name.tenant), name.key, d})
      .has_value();
}

int64_t DynamicReplication::HeatCount(const ObjectName& name,
                                      absl::string_view requester_domain) const {
  const Domain d = domain_aware() ? NormalizeDomain(requester_domain) : Domain();
  return window_.CountInWindow(Now(), HeatKeyView{NormalizeTenant(name.tenant), name.key, d});
}

void DynamicReplication::SyncMetrics() {
  MutexLock lock(&sync_mu_);
  const int64_t records = window_.stats().records;
  metrics_.hot_read_observations.Add(records - synced_window_records_);
  synced_window_records_ = records;
  const int64_t dropped = reads_.dropped();
  metrics_.heat_reads_dropped.Add(dropped - synced_reads_dropped_);
  synced_reads_dropped_ = dropped;
}

DynamicReplicationStats DynamicReplication::Stats() const {
  MutexLock lock(&mu_);
  DynamicReplicationStats s = stats_;
  s.dynamic_replicas = dynamic_count_;
  s.triggers_lost = triggers_.stats().overflows;
  return s;
}

absl::Status DynamicReplication::CheckInvariants() const {
  auto violation = [](const std::string& what) {
    return absl::InternalError(absl::StrCat("dynamic replication invariant violated: ", what));
  };
  MutexLock control(&control_mu_);
  const TimeNs now = Now();
  std::vector<Pending> pending;
  std::map<ObjectName, std::map<SegmentId, DynamicRecord>> dynamic;
  {
    MutexLock lock(&mu_);
    if (!leases_.IndexConsistent() || leases_.size() != stats_.pending) {
      return violation("pending table and lease index disagree");
    }
    if (leases_.size() > knobs_.dynamic_replication_pending_actions_max ||
        leases_.proposal_count() > knobs_.dynamic_replication_proposals_max) {
      return violation("a table exceeds its limit");
    }
    int64_t records = 0;
    for (const auto& [name, replicas] : dynamic_) records += static_cast<int64_t>(replicas.size());
    if (records != dynamic_count_ || metrics_.dynamic_replicas.value() != dynamic_count_) {
      return violation(absl::StrCat(records, " dynamic replica records, count ", dynamic_count_,
                                    ", gauge ", metrics_.dynamic_replicas.value()));
    }
    for (const auto& [key, p] : leases_.actions()) pending.push_back(p);
    dynamic = dynamic_;
  }
  for (const Pending& p : pending) {
    const std::string where = absl::StrCat("lease ", p.lease.lease_id.value);
    const std::optional<Task> task = master_->GetTask(p.lease.task_id);
    if (!task.has_value()) {
      // Allowed only while the expiry timer is due, or for a granted action
      // whose task the master retired (target unmounted): both are cleared
      // at the next touch of the key or at expiry.
      if (p.phase == PendingPhase::kInFlight && !IsExpired(now, p.lease.expiration_ns)) {
        return violation(where + " is in flight without its task");
      }
      continue;
    }
    if (task->copy.lease_id != p.lease.lease_id || task->copy.version != p.lease.version ||
        task->assigned_client != p.lease.source_client) {
      return violation(where + " does not match its task");
    }
    if (p.phase == PendingPhase::kInFlight) {
      absl::StatusOr<ObjectView> object = master_->GetObjectView(p.lease.name);
      bool found = false;
      if (object.ok()) {
        for (const ReplicaDescriptor& d : object->replicas) {
          found |= d.replica_id == p.target_replica && d.dynamic &&
                   d.status == ReplicaStatus::kProcessing && d.lease_id == p.lease.lease_id;
        }
      }
      if (!found) return violation(where + " is in flight without a PROCESSING target");
    }
  }
  for (const auto& [name, replicas] : dynamic) {
    absl::StatusOr<ObjectView> object = master_->GetObjectView(name);
    if (!object.ok()) return violation(absl::StrCat("dynamic replica of missing '", name.key, "'"));
    for (const auto& [segment, record] : replicas) {
      bool found = false;
      for (const ReplicaDescriptor& d : object->replicas) {
        found |= d.segment_id == segment && d.dynamic && d.status == ReplicaStatus::kComplete &&
                 d.version == object->version && d.version == record.version &&
                 d.size_bytes == record.size_bytes;
      }
      if (!found) {
        return violation(absl::StrCat("dynamic replica record of '", name.key, "' on segment ",
                                      segment.value,
                                      " has no COMPLETE dynamic replica of its version and size"));
      }
    }
  }
  return window_.CheckInvariants();
}

}  // namespace heatsink
