// DynamicReplication, part one: construction, the read path (heat), admission
// and proposals. Sustained heat (re-evaluating keys that stay hot) is in
// dynamic_replication_rechecks.cc, warmup in dynamic_replication_warmup.cc.
// Part two (dynamic_replication_lifecycle.cc): pending state and lease expiry,
// removals, the dynamic copy lifecycle, views and invariants. The contract and the order of checks
// are in dynamic_replication.h; these files say why where it is not obvious.
#include "core/replication/dynamic_replication.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/replication/admission_decision.h"
#include "core/replication/placement.h"

namespace heatsink {
namespace {

// Triggers one admission pass takes before it yields the executor.
constexpr size_t kAdmissionBatchMax = 64;

}  // namespace

absl::string_view PendingPhaseName(PendingPhase p) {
  switch (p) {
    case PendingPhase::kGranted:
      return "granted";
    case PendingPhase::kInFlight:
      return "in_flight";
  }
  HS_CHECK_MSG(false, "bad PendingPhase");
  return {};  // not reached
}

DynamicReplication::DynamicReplication(Env* env, MasterService* master,
                                       const ReplicationKnobs& knobs, DecisionSink* sink,
                                       MetricsRegistry* metrics)
    : env_(env),
      master_(master),
      knobs_(knobs),
      sink_(sink),
      metrics_(*metrics),
      hit_count_(knobs.AdmissionHitCount()),
      mode_(knobs.dynamic_replication_mode),
      window_(HeatWindow::Options::FromKnobs(knobs)),
      reads_(knobs.dynamic_replication_heat_read_buffer_records),
      triggers_(static_cast<size_t>(knobs.dynamic_replication_trigger_queue_max)),
      rechecks_(static_cast<size_t>(knobs.dynamic_replication_cooldown_entries_max)),
      admission_cooldown_("admission",
                          static_cast<size_t>(knobs.dynamic_replication_cooldown_entries_max)),
      recreate_cooldown_("recreate",
                         static_cast<size_t>(knobs.dynamic_replication_cooldown_entries_max)) {
  HS_CHECK(env != nullptr && env->clock != nullptr && env->executor != nullptr);
  HS_CHECK(master != nullptr && metrics != nullptr);
  HS_CHECK_OK(knobs.Validate());
  if (enabled() && knobs_.dynamic_replication_warmup_enabled) ScheduleDomainPoll();
  if (enabled() && knobs_.dynamic_replication_release_enabled) ScheduleReleaseCheck();
}

DynamicReplication::~DynamicReplication() {
  MutexLock lock(&timer_mu_);
  stopping_ = true;
  for (TimerId* t : {&admission_timer_, &domain_poll_timer_, &warmup_timer_, &recheck_timer_,
                     &release_timer_, &drain_timer_, &urgent_drain_timer_}) {
    if (*t != kNoTimer) env_->executor->Cancel(*t);
    *t = kNoTimer;
  }
  for (TimerId t : lease_timers_) env_->executor->Cancel(t);
  lease_timers_.clear();
}

void DynamicReplication::SetFirstLeaseId(uint64_t first) {
  HS_CHECK(first > 0);
  uint64_t expected = 1;
  HS_CHECK_MSG(next_lease_id_.compare_exchange_strong(expected, first),
               "SetFirstLeaseId after the first lease");
}

void DynamicReplication::SetMode(DynamicReplicationMode mode) {
  {
    MutexLock control(&control_mu_);
    const DynamicReplicationMode previous = mode_.exchange(mode, std::memory_order_relaxed);
    if (previous == mode) return;
    // Turning it on starts from the heat recorded from then on: counts left
    // from before the mode went off would keep a hot key above the hit count
    // without a crossing, and its re-evaluations were dropped with the mode.
    if (previous == DynamicReplicationMode::kOff) window_.Clear();
    if (mode == DynamicReplicationMode::kOff) {
      warmup_jobs_.clear();
      // Heat is no longer recorded: nothing to look at again.
      rechecks_.Clear();
    }
  }
  if (mode != DynamicReplicationMode::kOff && knobs_.dynamic_replication_warmup_enabled) {
    ScheduleDomainPoll();
  }
  if (mode != DynamicReplicationMode::kOff && knobs_.dynamic_replication_release_enabled) {
    ScheduleReleaseCheck();
  }
}

Domain DynamicReplication::PendingDomain(absl::string_view target_domain) const {
  return domain_aware() ? NormalizeDomain(target_domain) : Domain();
}

absl::string_view DynamicReplication::ReplicaDomain(const ReplicaDescriptor& d) {
  return d.location != nullptr ? absl::string_view(d.location->domain) : kDefaultDomain;
}

// ---------------------------------------------------------------------------
// Read path
// ---------------------------------------------------------------------------

bool DynamicReplication::AtReplicaLimit(const ReadObservation& read,
                                        absl::string_view domain) const {
  // The replica list is at hand, so this costs one pass over a handful of
  // descriptors.
  int64_t counted = 0;
  if (domain_aware()) {
    for (const ReplicaDescriptor& d : read.readable_replicas) {
      if (DomainCost(domain, ReplicaDomain(d)) == 0) ++counted;
    }
  } else {
    counted = static_cast<int64_t>(read.readable_replicas.size());
  }
  return counted >= knobs_.dynamic_replication_max_memory_replicas;
}

void DynamicReplication::OnKeyRead(const ReadObservation& read) {
  if (!enabled()) return;
  const absl::string_view domain = domain_aware() ? read.requester_domain : absl::string_view();
  // At its cap the read records no heat (DESIGN 2); with the cold release on
  // it still tells the release check that the key's replicas are read.
  const bool at_cap = AtReplicaLimit(read, domain);
  if (at_cap && !knobs_.dynamic_replication_release_enabled) return;
  const HeatKeyView key{read.tenant, read.key, domain};
  // hot_read_observations is not counted here: the window counts its
  // records, and SyncMetrics() carries that count over.
  switch (reads_.Append(read.t_ns, key, at_cap ? HeatReadKind::kAtCap : HeatReadKind::kCounted)) {
    case HeatReadBuffer::AppendResult::kAppended:
      break;
    case HeatReadBuffer::AppendResult::kAppendedHighWater:
      PostUrgentDrain();
      break;
    case HeatReadBuffer::AppendResult::kFull:
      return;  // counted by the buffer; SyncMetrics() carries it over
    case HeatReadBuffer::AppendResult::kTooLong:
      // Rare (keys are short): the old direct path, correct if slower.
      if (at_cap) {
        NoteCappedReads({{read.t_ns, HeatKey(key)}});
      } else {
        ApplyRead(read.t_ns, key);
      }
      return;
  }
  if (!drain_timer_armed_.load(std::memory_order_seq_cst)) ArmDrainTimer();
}

void DynamicReplication::ApplyRead(TimeNs t_ns, HeatKeyView key) {
  const HeatRecord record = window_.Record(t_ns, key);
  if (record.crossed) (void)QueueTrigger(t_ns, key);
}

bool DynamicReplication::QueueTrigger(TimeNs now, HeatKeyView key) {
  absl::StatusOr<TriggerEnqueue> queued = triggers_.Enqueue(now, key);
  if (!queued.ok()) {
    metrics_.trigger_queue_overflows.Add();
    return false;
  }
  if (!queued->queued) return true;
  metrics_.triggers_enqueued.Add();
  if (queued->queue_was_empty) WakeAdmissionWorker();
  return true;
}

int64_t DynamicReplication::DrainReads() {
  MutexLock lock(&drain_mu_);
  capped_reads_.clear();
  auto apply = [this](TimeNs t_ns, HeatKeyView key, HeatReadKind kind)
                   ABSL_EXCLUSIVE_LOCKS_REQUIRED(drain_mu_) {
                     if (kind == HeatReadKind::kCounted) {
                       ApplyRead(t_ns, key);
                     } else {
                       capped_reads_.emplace_back(t_ns, HeatKey(key));
                     }
                   };
  const int64_t drained = reads_.Drain(apply);
  if (!capped_reads_.empty()) NoteCappedReads(capped_reads_);
  return drained;
}

void DynamicReplication::NoteCappedReads(const std::vector<std::pair<TimeNs, HeatKey>>& reads) {
  MutexLock lock(&mu_);
  for (const auto& [t_ns, key] : reads) {
    auto it = dynamic_.find(key.object());
    if (it == dynamic_.end()) continue;
    for (auto& [segment, record] : it->second) {
      if (domain_aware() && record.domain != key.domain) continue;
      record.capped_read_ns = std::max(record.capped_read_ns, t_ns);
    }
  }
}

bool DynamicReplication::TimerFired(TimerId DynamicReplication::*slot) {
  MutexLock lock(&timer_mu_);
  this->*slot = kNoTimer;
  return !stopping_;
}

void DynamicReplication::ArmDrainTimer() {
  if (drain_timer_armed_.exchange(true, std::memory_order_seq_cst)) return;
  MutexLock lock(&timer_mu_);
  if (stopping_) return;
  drain_timer_ = env_->executor->PostAfter(knobs_.heat_drain_interval_ns(), [this]() {
    if (!TimerFired(&DynamicReplication::drain_timer_)) return;
    // Cleared before draining: a read appended from here on either is
    // drained now or finds the flag clear and arms the next timer.
    drain_timer_armed_.store(false, std::memory_order_seq_cst);
    DrainFromTimer();
  });
}

void DynamicReplication::PostUrgentDrain() {
  if (urgent_drain_posted_.load(std::memory_order_relaxed) ||
      urgent_drain_posted_.exchange(true, std::memory_order_relaxed)) {
    return;
  }
  MutexLock lock(&timer_mu_);
  if (stopping_) return;
  urgent_drain_timer_ = env_->executor->PostAfter(0, [this]() {
    if (!TimerFired(&DynamicReplication::urgent_drain_timer_)) return;
    urgent_drain_posted_.store(false, std::memory_order_relaxed);
    DrainFromTimer();
  });
}

void DynamicReplication::DrainFromTimer() {
  DrainReads();
  // A record claimed but not yet written when the drain passed (another
  // thread mid-append) is left for the next drain, which must come.
  if (reads_.HasUndrained()) ArmDrainTimer();
}

void DynamicReplication::WakeAdmissionWorker() {
  MutexLock lock(&timer_mu_);
  if (stopping_ || admission_timer_ != kNoTimer) return;
  // A cancellable zero-delay timer rather than Post, so destruction can
  // withdraw it.
  admission_timer_ = env_->executor->PostAfter(0, [this]() {
    if (!TimerFired(&DynamicReplication::admission_timer_)) return;
    RunAdmissionPass();
    if (triggers_.size() > 0) WakeAdmissionWorker();
  });
}

// ---------------------------------------------------------------------------
// Admission
// ---------------------------------------------------------------------------

int64_t DynamicReplication::RunAdmission() {
  DrainReads();
  return RunAdmissionPass();
}

int64_t DynamicReplication::RunAdmissionPass() {
  MutexLock control(&control_mu_);
  const std::vector<AdmissionTrigger> batch = triggers_.TakeUpTo(kAdmissionBatchMax);
  for (const AdmissionTrigger& trigger : batch) {
    AdmissionInput input;
    input.kind = DecisionKind::kHeat;
    input.heat_key = trigger.key;
    input.target_domain = domain_aware() ? NormalizeDomain(trigger.key.domain) : Domain();
    AdmissionResult result = Admit(input);
    Emit(result.record);
    RearmAfter(input, result);
  }
  MutexLock lock(&mu_);
  ++stats_.admission_passes;
  stats_.triggers_processed += static_cast<int64_t>(batch.size());
  return static_cast<int64_t>(batch.size());
}

DynamicReplication::AdmissionResult DynamicReplication::Reject(AdmissionResult result,
                                                               RejectReason reason,
                                                               std::string message) {
  result.record.outcome = DecisionOutcome::kRejected;
  result.record.reason = reason;
  result.status = RejectionStatus(reason, message);
  result.lease.reset();
  return result;
}

// AdmissionFacts over this object's tables and the master: each answer
// takes the lock it needs and lets it go.
class DynamicReplication::AdmissionTables final : public AdmissionFacts {
 public:
  explicit AdmissionTables(DynamicReplication* r) : r_(r) {}

  int64_t WindowCount(TimeNs now, HeatKeyView key) override {
    return r_->window_.CountInWindow(now, key);
  }
  std::optional<LeaseId> BlockingAction(const ObjectName& name,
                                        absl::string_view target_domain) override {
    std::optional<Pending> existing;
    {
      MutexLock lock(&r_->mu_);
      if (const Pending* found =
              r_->leases_.Find(PendingKey{name, r_->PendingDomain(target_domain)});
          found != nullptr) {
        existing = *found;
      }
    }
    // A granted action whose task the master already retired (its target
    // was unmounted) is stale: it must not keep the key blocked until its
    // lease expires. Grant replaces it.
    if (existing.has_value() && (existing->phase == PendingPhase::kInFlight ||
                                 r_->master_->GetTask(existing->lease.task_id).has_value())) {
      return existing->lease.lease_id;
    }
    return std::nullopt;
  }
  bool AdmissionCooldownActive(TimeNs now, HeatKeyView key) override {
    return r_->admission_cooldown_.Active(now, key);
  }
  bool RecreateCooldownActive(TimeNs now, HeatKeyView key) override {
    return r_->recreate_cooldown_.Active(now, key);
  }
  absl::StatusOr<ObjectView> Object(const ObjectName& name) override {
    return r_->master_->GetObjectView(name);
  }
  Candidates CandidatesFor(const ObjectView& object) override {
    Candidates c = BuildCandidates(object, r_->master_->ListSegments());
    if (r_->knobs_.dynamic_replication_target_heat_aware) {
      MutexLock lock(&r_->mu_);
      for (SegmentCandidate& sc : c.segments) {
        auto it = r_->hosted_heat_.find(sc.id);
        if (it != r_->hosted_heat_.end()) sc.hosted_heat = it->second;
      }
    }
    return c;
  }
  int64_t WarmupBytesUsed(TimeNs now) override {
    r_->control_mu_.AssertHeld();  // Admit holds it
    if (now - r_->warmup_budget_window_start_ns_ >= kWarmupBudgetWindowNs) return 0;
    return r_->warmup_budget_bytes_used_;
  }

 private:
  DynamicReplication* const r_;
};

AdmissionContext DynamicReplication::AdmissionContextNow() const {
  AdmissionContext context;
  context.mode = mode();
  context.knobs = &knobs_;
  context.hit_count = hit_count_;
  // An optional replica never takes its target into the band that makes
  // eviction run either (DESIGN 12): above the level one eviction pass brings
  // usage down to from the high watermark, watermark x (1 - eviction_ratio),
  // a copy would only make the next put start a pass that drops it again or
  // costs another object.
  const MasterKnobs& mk = master_->knobs();
  const int64_t watermark_ppm =
      std::llround(mk.eviction_high_watermark_ratio * (1.0 - mk.eviction_ratio) * 1e6);
  context.utilization_cap_ppm = std::clamp<int64_t>(
      std::min(knobs_.target_utilization_cap_ppm(), watermark_ppm), 1, 1'000'000);
  return context;
}

DynamicReplication::AdmissionResult DynamicReplication::Admit(const AdmissionInput& input) {
  const TimeNs now = Now();
  AdmissionTables tables(this);
  AdmissionVerdict v = DecideAdmission(now, input, AdmissionContextNow(), tables);
  AdmissionResult r;
  r.record = std::move(v.record);
  r.heat = v.heat;
  r.deferred = v.deferred;
  switch (v.outcome) {
    case AdmissionOutcome::kRejected:
      r.status = RejectionStatus(*r.record.reason, v.message);
      return r;
    case AdmissionOutcome::kWouldPropose:
      r.lease = std::move(v.lease);
      r.status = absl::OkStatus();
      // Observe counts what enforce would create, so it honours the same
      // cooldown; a full cooldown table only loses the damping.
      if (input.kind != DecisionKind::kWarmup) {
        (void)admission_cooldown_.Start(now, input.heat_key.view(), knobs_.admission_cooldown_ns());
      }
      return r;
    case AdmissionOutcome::kGrant:
      break;
  }
  if (v.warmup_budget_checked && now - warmup_budget_window_start_ns_ >= kWarmupBudgetWindowNs) {
    warmup_budget_window_start_ns_ = now;
    warmup_budget_bytes_used_ = 0;
  }
  return Grant(std::move(r), input, *v.object, v.source_replica, v.cross_domain, *v.lease);
}

DynamicReplication::AdmissionResult DynamicReplication::Grant(
    AdmissionResult result, const AdmissionInput& input, const ObjectView& object,
    ReplicaId source_replica, bool cross_domain, ReplicaActionLease lease) {
  const TimeNs now = Now();
  const PendingKey key{object.name, PendingDomain(input.target_domain)};
  lease.lease_id = LeaseId(next_lease_id_.fetch_add(1, std::memory_order_relaxed));
  lease.expiration_ns = now + knobs_.lease_ttl_ns();
  if (input.proposal != nullptr) {
    lease.expiration_ns = std::min(lease.expiration_ns, input.proposal->expiration_ns);
  }
  {
    MutexLock lock(&mu_);
    if (leases_.size() >= knobs_.dynamic_replication_pending_actions_max) {
      return Reject(std::move(result), RejectReason::kResourceExhausted,
                    absl::StrCat("dynamic_replication_pending_actions_max (",
                                 knobs_.dynamic_replication_pending_actions_max, ") reached"));
    }
    if (input.proposal != nullptr &&
        leases_.proposal_count() >= knobs_.dynamic_replication_proposals_max) {
      leases_.ReclaimProposals(now);
      if (leases_.proposal_count() >= knobs_.dynamic_replication_proposals_max) {
        return Reject(std::move(result), RejectReason::kResourceExhausted,
                      absl::StrCat("dynamic_replication_proposals_max (",
                                   knobs_.dynamic_replication_proposals_max, ") reached"));
      }
    }
    // A stale entry for the key (its task retired underneath) is replaced.
    if (const Pending* stale = leases_.Find(key); stale != nullptr) {
      (void)TakePendingLocked(stale->lease.lease_id);
    }
    // The RFC's order: pending state first, then the task.
    Pending p;
    p.lease = lease;
    p.cross_domain = cross_domain;
    UpdateHeatShareLocked(object.name, [&](HeatShare& share) {
      share.heat = std::max(share.heat, result.heat);
      for (const ReplicaDescriptor& d : object.replicas) {
        if (d.kind == ReplicaKind::kMemory && d.status == ReplicaStatus::kComplete &&
            d.version == object.version) {
          share.segments.insert(d.segment_id);
        }
      }
      share.segments.insert(lease.target_segment);
    });
    leases_.Insert(key, std::move(p));
    ++stats_.pending;
  }
  absl::StatusOr<CopyTaskResponse> task = master_->CreateCopyTaskForPlan(
      CopyPlan{object.name, object.version, source_replica, lease.target_segment, lease.lease_id});
  if (!task.ok()) {
    {
      MutexLock lock(&mu_);
      (void)TakePendingLocked(lease.lease_id);
    }
    result.record.lease_id.reset();
    return Reject(std::move(result), RejectReason::kTaskCreateFailed,
                  absl::StrCat("REPLICA_COPY task creation failed: ", task.status().ToString()));
  }
  lease.task_id = task->task_id;
  lease.source_client = task->source_client;
  {
    MutexLock lock(&mu_);
    Pending* granted = leases_.Find(key);
    HS_CHECK(granted != nullptr && granted->lease.lease_id == lease.lease_id);
    granted->lease = lease;
    granted->expiry_timer = ArmLeaseTimerLocked(lease.lease_id, lease.expiration_ns - now);
    if (input.proposal != nullptr) leases_.AddProposal(*input.proposal, lease);
    ++stats_.leases_granted;
    if (lease.warmup) ++stats_.warmup_copies;
  }
  if (input.kind != DecisionKind::kWarmup) {
    // A full cooldown table only loses the damping, never the admission.
    (void)admission_cooldown_.Start(now, input.heat_key.view(), knobs_.admission_cooldown_ns());
  } else {
    warmup_budget_bytes_used_ += static_cast<int64_t>(lease.size_bytes);
    metrics_.WarmupCopies(lease.target_domain).Add();
  }
  metrics_.copy_tasks_created.Add();
  result.record.outcome = DecisionOutcome::kAccepted;
  result.record.reason.reset();
  result.record.lease_id = lease.lease_id;
  result.lease = lease;
  result.status = absl::OkStatus();
  return result;
}

void DynamicReplication::AddHostedHeatLocked(SegmentId segment, int64_t delta) {
  if (delta == 0) return;
  auto [it, inserted] = hosted_heat_.try_emplace(segment, 0);
  it->second += delta;
  HS_CHECK(it->second >= 0);
  if (it->second == 0) hosted_heat_.erase(it);
}

void DynamicReplication::Emit(const DecisionRecord& record) {
  {
    MutexLock lock(&mu_);
    ++stats_.decisions;
  }
  metrics_.CountDecision(record);
  if (sink_ != nullptr) sink_->Record(record);
}

absl::StatusOr<ReplicaActionLease> DynamicReplication::SubmitReplicaActionProposal(
    const ReplicaActionProposal& proposal) {
  // A proposal sees every read made before it (below_threshold reads the
  // window), not only those the drain timer has applied.
  DrainReads();
  MutexLock control(&control_mu_);
  const TimeNs now = Now();
  ReplicaActionProposal normalised = proposal;
  normalised.name.tenant = NormalizeTenant(proposal.name.tenant);
  // Idempotency before anything else that could change with time (the mode
  // included): the same proposal id and identical content returns the lease
  // while it lives.
  if (proposal.proposal_id.valid()) {
    std::optional<DynamicLeaseTable::ProposalEntry> previous;
    {
      MutexLock lock(&mu_);
      leases_.ReclaimProposals(now);
      if (const DynamicLeaseTable::ProposalEntry* entry =
              leases_.FindProposal(proposal.proposal_id);
          entry != nullptr) {
        previous = *entry;
      }
    }
    if (previous.has_value()) {
      if (previous->proposal == normalised) return previous->lease;
      DecisionRecord record;
      record.t_ns = now;
      record.kind = DecisionKind::kProposal;
      record.tenant = normalised.name.tenant;
      record.key = normalised.name.key;
      if (!proposal.requester_domain.empty()) record.requester_domain = proposal.requester_domain;
      if (!proposal.target_domain.empty()) record.target_domain = proposal.target_domain;
      record.outcome = DecisionOutcome::kRejected;
      record.reason = RejectReason::kConflict;
      Emit(record);
      return RejectionStatus(RejectReason::kConflict,
                             absl::StrCat("proposal id ", proposal.proposal_id.value,
                                          " was used with different content"));
    }
  }
  AdmissionInput input;
  input.kind = DecisionKind::kProposal;
  const Domain requester = domain_aware() ? NormalizeDomain(proposal.requester_domain) : Domain();
  input.heat_key = HeatKey(normalised.name.tenant, normalised.name.key, requester);
  input.target_domain =
      domain_aware() ? NormalizeDomain(proposal.target_domain.empty() ? proposal.requester_domain
                                                                      : proposal.target_domain)
                     : Domain();
  input.proposal = &normalised;
  AdmissionResult result = Admit(input);
  Emit(result.record);
  if (!result.status.ok()) return result.status;
  HS_CHECK(result.lease.has_value());
  return *result.lease;
}

}  // namespace heatsink
