// DynamicReplication: sustained heat (DESIGN 1). After a heat decision the
// key is scheduled for another look (RearmAfter); due looks re-read the
// window and queue an ordinary trigger for keys still hot (RunRechecks). The
// rules are in dynamic_replication.h, "Sustained heat".
#include <algorithm>
#include <optional>
#include <vector>

#include "core/base/check.h"
#include "core/replication/dynamic_replication.h"
#include "core/replication/placement.h"

namespace heatsink {
namespace {

// Due re-evaluations one recheck pass takes before it yields the executor.
constexpr size_t kRecheckBatchMax = 256;

// Rejections that may pass by themselves: the key is looked at again after
// the retry delay.
bool TransientRejection(RejectReason reason) {
  switch (reason) {
    case RejectReason::kNoTarget:
    case RejectReason::kNoTargetInDomain:
    case RejectReason::kUtilizationCap:
    case RejectReason::kNoSource:
    case RejectReason::kResourceExhausted:
    case RejectReason::kTaskCreateFailed:
    case RejectReason::kNotComplete:
    case RejectReason::kObjectNotFound:
    // At its cap a key's reads record no heat, so the look usually finds it
    // cooled; if it lost a replica meanwhile and is still read, it goes on.
    case RejectReason::kReplicaLimit:
      return true;
    default:
      return false;
  }
}
}  // namespace

bool DynamicReplication::AtReplicaCap(const ObjectView& object,
                                      absl::string_view requester_domain) const {
  int64_t counted = 0;
  for (const ReplicaDescriptor& d : object.replicas) {
    if (d.kind != ReplicaKind::kMemory || d.status != ReplicaStatus::kComplete ||
        d.version != object.version) {
      continue;
    }
    if (!domain_aware() || DomainCost(requester_domain, ReplicaDomain(d)) == 0) ++counted;
  }
  return counted >= knobs_.dynamic_replication_max_memory_replicas;
}

HeatKey DynamicReplication::BlockerOf(const PendingKey& pending_key) {
  return HeatKey(pending_key.name.tenant, pending_key.name.key, pending_key.domain);
}

void DynamicReplication::RearmAfter(const AdmissionInput& input, const AdmissionResult& result) {
  if (input.kind != DecisionKind::kHeat || !enabled()) return;
  const TimeNs now = result.record.t_ns;
  const HeatKeyView key = input.heat_key.view();
  const DurationNs retry = knobs_.admission_retry_ns();
  const PendingKey pending_key{ObjectName{result.record.tenant, result.record.key},
                               PendingDomain(input.target_domain)};
  // Parks the key on its pending copy; false when no dynamic copy of the key
  // (and domain) is pending any more. Checked and parked under mu_, the lock
  // under which a pending action ends and releases what is parked on it.
  auto park = [&]() {
    MutexLock lock(&mu_);
    if (leases_.Find(pending_key) == nullptr) return false;
    if (!rechecks_.Park(BlockerOf(pending_key), key).ok()) {
      metrics_.recheck_overflows.Add();
      ++stats_.rechecks_lost;
    }
    return true;
  };
  switch (result.record.outcome) {
    case DecisionOutcome::kAccepted:
    case DecisionOutcome::kWouldPropose: {
      const DurationNs cooldown = knobs_.admission_cooldown_ns();
      if (cooldown > 0) return ScheduleRecheck(now + cooldown, key);
      if (result.record.outcome == DecisionOutcome::kAccepted && park()) return;
      return ScheduleRecheck(now + retry, key);
    }
    case DecisionOutcome::kRejected:
      break;
    case DecisionOutcome::kDropped:
      return;
  }
  HS_CHECK(result.record.reason.has_value());
  const RejectReason reason = *result.record.reason;
  if (reason == RejectReason::kCooldown) {
    const std::optional<TimeNs> end = admission_cooldown_.Deadline(now, key);
    return ScheduleRecheck(end.value_or(now), key);
  }
  if (reason == RejectReason::kRecreateCooldown) {
    const Domain domain = domain_aware() ? NormalizeDomain(input.target_domain) : Domain();
    const std::optional<TimeNs> end =
        recreate_cooldown_.Deadline(now, HeatKeyView{pending_key.name.tenant, pending_key.name.key,
                                                     domain});
    return ScheduleRecheck(end.value_or(now), key);
  }
  if (reason == RejectReason::kPending) {
    // A dynamic copy: when it ends or fails. An ordinary copy task of the
    // key: after the retry delay.
    if (park()) return;
    return ScheduleRecheck(now + retry, key);
  }
  if (TransientRejection(reason)) ScheduleRecheck(now + retry, key);
}

bool DynamicReplication::ParkOnPendingCopyOf(const HeatKey& key) {
  MutexLock lock(&mu_);
  // The object's pending copies sort together, the empty domain first.
  const auto* first = leases_.FirstOf(key.object());
  if (first == nullptr) return false;
  if (!rechecks_.Park(BlockerOf(first->first), key.view()).ok()) {
    metrics_.recheck_overflows.Add();
    ++stats_.rechecks_lost;
  }
  return true;
}

void DynamicReplication::ScheduleRecheck(TimeNs due_ns, HeatKeyView key) {
  if (!rechecks_.Schedule(due_ns, key).ok()) {
    metrics_.recheck_overflows.Add();
    MutexLock lock(&mu_);
    ++stats_.rechecks_lost;
    return;
  }
  ArmRecheckTimer(due_ns);
}

void DynamicReplication::ArmRecheckTimer(TimeNs due_ns) {
  MutexLock lock(&timer_mu_);
  if (stopping_) return;
  if (recheck_timer_ != kNoTimer) {
    if (recheck_timer_due_ns_ <= due_ns) return;
    env_->executor->Cancel(recheck_timer_);
  }
  recheck_timer_due_ns_ = due_ns;
  const uint64_t generation = ++recheck_timer_generation_;
  recheck_timer_ =
      env_->executor->PostAfter(std::max<DurationNs>(0, due_ns - Now()), [this, generation]() {
        {
          MutexLock timer_lock(&timer_mu_);
          // A timer that started while a re-arm replaced it leaves the
          // newer one's id alone.
          if (generation == recheck_timer_generation_) recheck_timer_ = kNoTimer;
          if (stopping_) return;
        }
        RunRechecks();
      });
}

void DynamicReplication::RunRechecks() {
  const TimeNs now = Now();
  const std::vector<HeatKey> due = rechecks_.TakeDue(now, kRecheckBatchMax);
  if (enabled()) {
    // A copy task of the object still running would only turn the look into
    // a `pending` line. While a dynamic copy of the object is pending (for
    // any domain), the key parks on it and is looked at when it ends or
    // fails: polling could keep missing the instant between back-to-back
    // copies of another domain whose leases expire (swarm seed 2917).
    // Otherwise (an ordinary copy task, or a dynamic copy that ended and
    // whose worker has not reported the task complete yet) it is looked at
    // again one heat sub-bucket later, without a decision.
    const DurationNs defer = window_.options().window_ns / window_.options().sub_buckets;
    for (const HeatKey& key : due) {
      if (window_.CountInWindow(now, key.view()) < hit_count_) {
        metrics_.rechecks_cooled.Add();
        continue;
      }
      absl::StatusOr<ObjectView> object = master_->GetObjectView(key.object());
      if (object.ok() && object->replication_task.valid()) {
        if (!ParkOnPendingCopyOf(key)) ScheduleRecheck(now + defer, key.view());
        continue;
      }
      if (object.ok() && AtReplicaCap(*object, key.domain)) {
        // At its cap a key stays silent (DESIGN 2): no decision. Its reads
        // record no heat, so the next look usually finds it cooled; one that
        // is still counted (a replica the read path no longer lists, or one
        // lost meanwhile) is looked at again after the retry delay.
        metrics_.rechecks_at_cap.Add();
        ScheduleRecheck(now + knobs_.admission_retry_ns(), key.view());
        continue;
      }
      metrics_.rechecks_requeued.Add();
      (void)QueueTrigger(now, key.view());
    }
  }
  if (const std::optional<TimeNs> next = rechecks_.NextDue(); next.has_value()) {
    ArmRecheckTimer(*next);
  }
}

}  // namespace heatsink
