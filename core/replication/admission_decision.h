// File: core/replication/admission_decision.h
//
// The admission decision as a function: DecideAdmission(now, input, context,
// facts) -> AdmissionVerdict. It changes nothing. What it needs to know of
// the world it asks AdmissionFacts, a read-only view of the tables it
// consults (the key's window count, an action already in flight, the
// cooldowns, the object and the segments, the warmup byte budget), one
// question at a time in the order of the checks, so that a trigger refused
// below the threshold never looks the object up. DynamicReplication answers
// the questions from its tables and the master, and applies the verdict:
// a rejection is logged, would_propose starts the admission cooldown, and a
// grant installs the lease and creates the copy task (which may still fail
// with resource_exhausted or task_create_failed).
//
// The checks, in order, each a rejection with its reason (decision.h):
//   mode_off; for proposals invalid_argument, expired,
//   domain_hint_unsupported; below_threshold (not for warmup);
//   pending (a blocking action for the object and target domain);
//   cooldown (admission cooldown of the heat key, not for warmup);
//   recreate_cooldown (object, + target domain when domain-aware);
//   object_not_found / invalid_argument, not_complete, pending (the object
//   runs a copy task); already_present (warmup) or replica_limit;
//   version_mismatch, size_mismatch (proposals); target_domain_has_replica
//   (a copy for another domain's readers into a domain holding a replica);
//   the placement's own reasons (placement.h); in enforce, for warmup,
//   warmup_limit when the second's byte budget is spent (deferred).
// Observe stops after placement with would_propose.
//
// Thread safety: DecideAdmission is reentrant; the facts object decides
// what its answers cost (DynamicReplication's take its locks one at a
// time).
#ifndef HEATSINK_CORE_REPLICATION_ADMISSION_DECISION_H_
#define HEATSINK_CORE_REPLICATION_ADMISSION_DECISION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/env/time.h"
#include "core/master/master_types.h"
#include "core/replication/decision.h"
#include "core/replication/heat_key.h"
#include "core/replication/placement.h"
#include "core/replication/replica_action.h"
#include "core/replication/replication_knobs.h"

namespace heatsink {

// What an admission needs to know about its origin.
struct AdmissionInput {
  DecisionKind kind = DecisionKind::kHeat;
  HeatKey heat_key;      // tenant, key, requester domain ("" when not domain-aware)
  Domain target_domain;  // normalised when domain-aware, else ""
  const ReplicaActionProposal* proposal = nullptr;
};

// Placement's view of an object and the mounted segments.
struct Candidates {
  std::vector<SegmentCandidate> segments;
  std::vector<ReplicaCandidate> replicas;
  std::vector<const ReplicaDescriptor*> descriptors;  // parallel to replicas, into the object
};

// `segments` in ascending id order (MasterService::ListSegments). The
// descriptors point into `object`, which must outlive the result.
Candidates BuildCandidates(const ObjectView& object, const std::vector<SegmentView>& segments);

// The knobs and the mode the decision runs under.
struct AdmissionContext {
  DynamicReplicationMode mode = DynamicReplicationMode::kOff;
  const ReplicationKnobs* knobs = nullptr;  // not null
  int64_t hit_count = 0;                    // ReplicationKnobs::AdmissionHitCount()
  // The placement's utilisation cap: the knob's, lowered to the level one
  // eviction pass brings a segment down to (DESIGN 12).
  int64_t utilization_cap_ppm = 1'000'000;
};

// The tables the decision reads. Each answer is what holds at the moment it
// is asked.
class AdmissionFacts {
 public:
  virtual ~AdmissionFacts() = default;
  // Reads of `key` in the heat window at `now`.
  virtual int64_t WindowCount(TimeNs now, HeatKeyView key) = 0;
  // The lease of a dynamic action for (object, target domain) that blocks a
  // new one: in flight, or granted with its task still live.
  virtual std::optional<LeaseId> BlockingAction(const ObjectName& name,
                                                absl::string_view target_domain) = 0;
  virtual bool AdmissionCooldownActive(TimeNs now, HeatKeyView key) = 0;
  virtual bool RecreateCooldownActive(TimeNs now, HeatKeyView key) = 0;
  virtual absl::StatusOr<ObjectView> Object(const ObjectName& name) = 0;
  // The object's replicas and the mounted segments (with the heat they host
  // when heat-aware targets are on).
  virtual Candidates CandidatesFor(const ObjectView& object) = 0;
  // Warmup bytes started in the budget window that holds `now` (0 once the
  // window has passed).
  virtual int64_t WarmupBytesUsed(TimeNs now) = 0;
};

enum class AdmissionOutcome {
  kRejected,
  kWouldPropose,  // observe: the plan, nothing created
  kGrant,         // enforce: grant `lease`
};

struct AdmissionVerdict {
  AdmissionOutcome outcome = AdmissionOutcome::kRejected;
  // Outcome kRejected / kWouldPropose set, reason set when rejected,
  // version and segments as far as the checks got. A grant's record is
  // completed when the lease is installed.
  DecisionRecord record;
  std::string message;  // why, when rejected
  // Warmup only: the byte budget is spent; nothing was decided, retry.
  bool deferred = false;
  // The key's window count (0 for warmup).
  int64_t heat = 0;
  // Set when the warmup byte budget was looked at (enforce, warmup): the
  // budget window rolls over from `now` if it has passed.
  bool warmup_budget_checked = false;
  // kWouldPropose and kGrant: the plan (no lease id or expiry yet), the
  // object as read, the source replica and whether the copy crosses domains.
  std::optional<ReplicaActionLease> lease;
  std::optional<ObjectView> object;
  ReplicaId source_replica;
  bool cross_domain = false;
};

AdmissionVerdict DecideAdmission(TimeNs now, const AdmissionInput& input,
                                 const AdmissionContext& context, AdmissionFacts& facts);

}  // namespace heatsink

#endif  // HEATSINK_CORE_REPLICATION_ADMISSION_DECISION_H_
