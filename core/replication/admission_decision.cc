#include "core/replication/admission_decision.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"

namespace heatsink {
namespace {

// Why an admission is refused: the decision record's reason and message.
struct Rejection {
  RejectReason reason;
  std::string message;
};

// One decision: the input, the context and what the checks found so far.
class Decision {
 public:
  Decision(TimeNs now, const AdmissionInput& input, const AdmissionContext& context,
           AdmissionFacts& facts)
      : now_(now),
        input_(input),
        context_(context),
        knobs_(*context.knobs),
        facts_(facts),
        name_{NormalizeTenant(input.heat_key.tenant), input.heat_key.key},
        warmup_(input.kind == DecisionKind::kWarmup),
        what_(absl::StrCat("'", name_.tenant, "/", name_.key, "'")) {
    HS_CHECK(context.knobs != nullptr);
  }

  AdmissionVerdict Decide();

 private:
  bool domain_aware() const { return knobs_.dynamic_replication_domain_aware; }
  AdmissionVerdict Reject(Rejection no);
  void StartRecord();
  std::optional<Rejection> CheckRequest();
  std::optional<Rejection> CheckKeyState();
  std::optional<Rejection> CheckObject(const absl::StatusOr<ObjectView>& object);
  std::optional<Rejection> CheckReplicas(const ObjectView& object,
                                         absl::Span<const ReplicaCandidate> replicas) const;
  PlacementRequest PlacementFor(const ObjectView& object) const;
  ReplicaActionLease LeaseFor(const ObjectView& object, const Candidates& c,
                              const PlacementPlan& plan) const;

  const TimeNs now_;
  const AdmissionInput& input_;
  const AdmissionContext& context_;
  const ReplicationKnobs& knobs_;
  AdmissionFacts& facts_;
  const ObjectName name_;
  const bool warmup_;
  const std::string what_;
  AdmissionVerdict v_;
};

AdmissionVerdict Decision::Reject(Rejection no) {
  v_.outcome = AdmissionOutcome::kRejected;
  v_.record.outcome = DecisionOutcome::kRejected;
  v_.record.reason = no.reason;
  v_.message = std::move(no.message);
  v_.lease.reset();
  v_.object.reset();
  return std::move(v_);
}

void Decision::StartRecord() {
  const ReplicaActionProposal* proposal = input_.proposal;
  DecisionRecord& record = v_.record;
  record.t_ns = now_;
  record.kind = input_.kind;
  record.tenant = name_.tenant;
  record.key = name_.key;
  if (domain_aware() && !warmup_) {
    record.requester_domain = NormalizeDomain(input_.heat_key.domain);
    record.target_domain = input_.target_domain;
  } else if (warmup_) {
    record.target_domain = input_.target_domain;
  } else if (proposal != nullptr) {
    // Stage 1 logs the hints a proposal carried (they get it rejected).
    if (!proposal->requester_domain.empty()) record.requester_domain = proposal->requester_domain;
    if (!proposal->target_domain.empty()) record.target_domain = proposal->target_domain;
  }
}

std::optional<Rejection> Decision::CheckRequest() {
  if (context_.mode == DynamicReplicationMode::kOff) {
    return Rejection{RejectReason::kModeOff, "dynamic_replication_mode is off"};
  }
  if (const ReplicaActionProposal* proposal = input_.proposal; proposal != nullptr) {
    if (!proposal->proposal_id.valid() || name_.key.empty() ||
        proposal->action != ReplicaAction::kAdd) {
      return Rejection{RejectReason::kInvalidArgument,
                       "proposal needs a proposal id, a key and action ADD"};
    }
    if (IsExpired(now_, proposal->expiration_ns)) {
      return Rejection{RejectReason::kExpired,
                       absl::StrCat("proposal ", proposal->proposal_id.value, " expired at ",
                                    proposal->expiration_ns, " ns (now ", now_, ")")};
    }
    if (!domain_aware() &&
        (!proposal->requester_domain.empty() || !proposal->target_domain.empty())) {
      return Rejection{RejectReason::kDomainHintUnsupported,
                       "domain hints need dynamic_replication_domain_aware"};
    }
  }
  if (!warmup_) {
    const int64_t count = facts_.WindowCount(now_, input_.heat_key.view());
    v_.heat = count;
    if (count < context_.hit_count) {
      return Rejection{
          RejectReason::kBelowThreshold,
          absl::StrCat(what_, " has ", count, " reads in the heat window, admission needs ",
                       context_.hit_count)};
    }
  }
  return std::nullopt;
}

std::optional<Rejection> Decision::CheckKeyState() {
  if (const std::optional<LeaseId> blocking = facts_.BlockingAction(name_, input_.target_domain)) {
    return Rejection{RejectReason::kPending,
                     absl::StrCat(what_, " has dynamic lease ", blocking->value, " in flight")};
  }
  if (!warmup_ && facts_.AdmissionCooldownActive(now_, input_.heat_key.view())) {
    return Rejection{RejectReason::kCooldown, absl::StrCat(what_, " is in its admission cooldown")};
  }
  const Domain cooldown_domain = domain_aware() ? NormalizeDomain(input_.target_domain) : Domain();
  if (facts_.RecreateCooldownActive(now_, HeatKeyView{name_.tenant, name_.key, cooldown_domain})) {
    return Rejection{RejectReason::kRecreateCooldown,
                     absl::StrCat(what_, " lost a dynamic replica recently (recreate cooldown)")};
  }
  return std::nullopt;
}

std::optional<Rejection> Decision::CheckObject(const absl::StatusOr<ObjectView>& object) {
  if (!object.ok()) {
    return Rejection{absl::IsNotFound(object.status()) ? RejectReason::kObjectNotFound
                                                       : RejectReason::kInvalidArgument,
                     std::string(object.status().message())};
  }
  v_.record.version = object->version;
  if (object->put_in_progress) {
    return Rejection{RejectReason::kNotComplete, absl::StrCat(what_, " is still being put")};
  }
  if (object->replication_task.valid()) {
    return Rejection{
        RejectReason::kPending,
        absl::StrCat(what_, " has copy task ", object->replication_task.value, " running")};
  }
  return std::nullopt;
}

std::optional<Rejection> Decision::CheckReplicas(
    const ObjectView& object, absl::Span<const ReplicaCandidate> replicas) const {
  // Whether a readable MEMORY replica sits in the target domain.
  const auto target_domain_has_replica = [&] {
    for (const ReplicaCandidate& rc : replicas) {
      if (rc.readable_memory && DomainCost(input_.target_domain, rc.domain) == 0) return true;
    }
    return false;
  };
  if (warmup_) {
    if (target_domain_has_replica()) {
      return Rejection{
          RejectReason::kAlreadyPresent,
          absl::StrCat(what_, " already has a replica in domain ", input_.target_domain)};
    }
  } else {
    const int64_t counted = CountReplicasForLimit(replicas, input_.target_domain, domain_aware());
    if (counted >= knobs_.dynamic_replication_max_memory_replicas) {
      return Rejection{
          RejectReason::kReplicaLimit,
          absl::StrCat(what_, " has ", counted,
                       " readable MEMORY replicas (dynamic_replication_max_memory_replicas ",
                       knobs_.dynamic_replication_max_memory_replicas, ")")};
    }
  }
  if (const ReplicaActionProposal* proposal = input_.proposal; proposal != nullptr) {
    if (proposal->observed_version != object.version) {
      return Rejection{RejectReason::kVersionMismatch,
                       absl::StrCat("proposal saw version ", proposal->observed_version, " of ",
                                    what_, ", the master has ", object.version)};
    }
    if (proposal->expected_size_bytes != object.size_bytes) {
      return Rejection{RejectReason::kSizeMismatch,
                       absl::StrCat("proposal expects ", proposal->expected_size_bytes,
                                    " bytes of ", what_, ", the master has ", object.size_bytes)};
    }
  }
  // A copy on behalf of another domain's readers into a domain that already
  // holds a readable replica adds nothing there; fanout inside the target
  // domain is asked for by that domain's own heat.
  if (domain_aware() && !warmup_ && DomainCost(input_.heat_key.domain, input_.target_domain) != 0 &&
      target_domain_has_replica()) {
    return Rejection{
        RejectReason::kTargetDomainHasReplica,
        absl::StrCat("domain ", input_.target_domain, " already has a replica of ", what_)};
  }
  return std::nullopt;
}

PlacementRequest Decision::PlacementFor(const ObjectView& object) const {
  PlacementRequest request;
  request.object = name_;
  request.size_bytes = object.size_bytes;
  if (input_.proposal != nullptr) {
    request.preferred_target = input_.proposal->preferred_target_segment;
  }
  request.target_domain = input_.target_domain;
  // Warmup always places inside its domain; otherwise the knob decides.
  request.domain_aware = domain_aware() || warmup_;
  request.utilization_cap_ppm = context_.utilization_cap_ppm;
  request.heat_aware = knobs_.dynamic_replication_target_heat_aware;
  return request;
}

ReplicaActionLease Decision::LeaseFor(const ObjectView& object, const Candidates& c,
                                      const PlacementPlan& plan) const {
  const SegmentCandidate& target = c.segments[*plan.target];
  const ReplicaDescriptor& source = *c.descriptors[*plan.source];
  ReplicaActionLease lease;
  if (input_.proposal != nullptr) lease.proposal_id = input_.proposal->proposal_id;
  lease.name = name_;
  lease.source_segment = source.segment_id;
  lease.source_client = c.replicas[*plan.source].owner;
  lease.target_segment = target.id;
  lease.target_domain = NormalizeDomain(target.domain);
  lease.version = object.version;
  lease.size_bytes = object.size_bytes;
  lease.warmup = warmup_;
  return lease;
}

AdmissionVerdict Decision::Decide() {
  StartRecord();
  if (std::optional<Rejection> no = CheckRequest()) return Reject(*std::move(no));
  if (std::optional<Rejection> no = CheckKeyState()) return Reject(*std::move(no));
  absl::StatusOr<ObjectView> object = facts_.Object(name_);
  if (std::optional<Rejection> no = CheckObject(object)) return Reject(*std::move(no));
  const Candidates c = facts_.CandidatesFor(*object);
  if (std::optional<Rejection> no = CheckReplicas(*object, c.replicas)) {
    return Reject(*std::move(no));
  }
  const PlacementPlan plan = PlanCopy(PlacementFor(*object), c.segments, c.replicas);
  if (plan.source.has_value()) v_.record.source_segment = c.replicas[*plan.source].segment;
  if (plan.reason.has_value()) {
    return Reject({*plan.reason,
                   absl::StrCat("no placement for ", what_, ": ", RejectReasonName(*plan.reason))});
  }
  v_.record.target_segment = c.segments[*plan.target].id;
  v_.lease = LeaseFor(*object, c, plan);
  v_.source_replica = c.descriptors[*plan.source]->replica_id;
  v_.cross_domain = plan.cross_domain;
  if (context_.mode == DynamicReplicationMode::kObserve) {
    v_.outcome = AdmissionOutcome::kWouldPropose;
    v_.record.outcome = DecisionOutcome::kWouldPropose;
    v_.lease->would_propose = true;
    v_.object = *std::move(object);
    return std::move(v_);
  }
  if (warmup_) {
    // The byte budget is spent per window; an object larger than the whole
    // budget still goes, alone, in an otherwise empty window.
    v_.warmup_budget_checked = true;
    const int64_t used = facts_.WarmupBytesUsed(now_);
    const int64_t size = static_cast<int64_t>(object->size_bytes);
    if (used > 0 && used + size > knobs_.dynamic_replication_warmup_bytes_per_second_max) {
      v_.deferred = true;
      return Reject({RejectReason::kWarmupLimit,
                     "dynamic_replication_warmup_bytes_per_second_max spent for this second"});
    }
  }
  v_.outcome = AdmissionOutcome::kGrant;
  v_.object = *std::move(object);
  return std::move(v_);
}

}  // namespace

Candidates BuildCandidates(const ObjectView& object, const std::vector<SegmentView>& segments) {
  Candidates c;
  c.segments.reserve(segments.size());
  for (const SegmentView& s : segments) {
    SegmentCandidate sc;
    sc.id = s.location.id;
    sc.owner = s.location.owner;
    sc.host = s.location.host;
    sc.domain = s.location.domain;
    sc.capacity_bytes = s.capacity_bytes;
    sc.used_bytes = s.used_bytes;
    sc.reserved_bytes = s.reserved_bytes;
    sc.allocatable = s.allocatable && !s.unmounting;
    c.segments.push_back(std::move(sc));
  }
  for (const ReplicaDescriptor& d : object.replicas) {
    ReplicaCandidate rc;
    rc.segment = d.segment_id;
    if (d.location != nullptr) {
      rc.owner = d.location->owner;
      rc.host = d.location->host;
      rc.domain = d.location->domain;
    }
    rc.readable_memory = d.kind == ReplicaKind::kMemory && d.status == ReplicaStatus::kComplete &&
                         d.version == object.version;
    // ListSegments is in ascending id order.
    auto it =
        std::lower_bound(segments.begin(), segments.end(), d.segment_id,
                         [](const SegmentView& s, SegmentId id) { return s.location.id < id; });
    const bool mounted = it != segments.end() && it->location.id == d.segment_id;
    // A drained (non-allocatable) segment's replica stays readable but does
    // not source copies: its store is about to leave.
    rc.can_source = mounted && !it->unmounting && it->allocatable;
    // In-flight pressure as the master knows it: copy tasks queued on the
    // source plus copies running into or out of it. Reads go from reader to
    // store directly, so the master has no count of reads in flight.
    if (mounted) {
      rc.inflight_pressure = it->load.copy_tasks_as_source + it->load.copies_in_flight_as_source +
                             it->load.copies_in_flight_as_target;
    }
    c.replicas.push_back(std::move(rc));
    c.descriptors.push_back(&d);
  }
  return c;
}

AdmissionVerdict DecideAdmission(TimeNs now, const AdmissionInput& input,
                                 const AdmissionContext& context, AdmissionFacts& facts) {
  return Decision(now, input, context, facts).Decide();
}

}  // namespace heatsink
