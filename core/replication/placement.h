// File: core/replication/placement.h
//
// Placement of a dynamic replica: which readable replica the copy reads from
// (source) and which segment receives it (target). Pure functions over plain
// views that the master fills from its tables; each returns its choice or the
// RejectReason that explains why there is none. Nothing here depends on
// iteration order: every tie ends in a stable hash of the object and the
// segment id, then the segment id itself.
//
// Stage 1 (domain_aware = false), RFC "Source Selection" / "Destination
// Selection":
//   source: among readable MEMORY replicas whose owner can copy now, the
//     smallest PlacementTieHash(object, segment); never "the first returned".
//   target: valid, allocatable, not already holding a replica of the object,
//     enough free bytes, and at most the utilisation cap after the copy; a
//     valid preferred target wins; else avoid hosts that already hold a
//     readable replica when another valid host exists; then (knob
//     dynamic_replication_target_heat_aware, off by default) lower hosted
//     heat, so the copies of the hottest keys spread over hosts instead of
//     piling onto the emptiest one; then lower utilisation after the copy;
//     then the stable tie-break.
// Stage 2 (domain_aware = true), RFC stage 2 and issue 4:
//   source: prefer the target domain (fanout stays domain-local), i.e. the
//     lowest DomainCost(target_domain, replica domain); then lower in-flight
//     pressure; then the stable tie-break.
//   target: additionally must be in the target domain (kNoTargetInDomain
//     otherwise); a preferred target outside it falls back to another target.
//   suppression: a copy from another domain is suppressed
//     (kTargetDomainHasReplica) when the target domain already holds a
//     readable replica; fanout from that replica stays allowed.
//
// Domains are compared normalised: "" and "default" are the same domain.
#ifndef HEATSINK_CORE_REPLICATION_PLACEMENT_H_
#define HEATSINK_CORE_REPLICATION_PLACEMENT_H_

#include <cstddef>
#include <cstdint>
#include <optional>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/model/ids.h"
#include "core/replication/decision.h"

namespace heatsink {

// The fixed domain cost of the RFC's two-level model: 0 for the same domain,
// 1 across domains. No user-visible cost matrix.
int DomainCost(absl::string_view requester_domain, absl::string_view candidate_domain);

// Stable, process-independent tie-break key of (object, segment).
uint64_t PlacementTieHash(const ObjectName& object, SegmentId segment);

// A mounted segment as placement sees it.
struct SegmentCandidate {
  SegmentId id;
  ClientId owner;
  HostId host;
  Domain domain;
  uint64_t capacity_bytes = 0;
  uint64_t used_bytes = 0;
  uint64_t reserved_bytes = 0;  // quota reserved by copies in flight
  bool allocatable = true;
  // Heat-aware targets only: the heat the segment's dynamic replicas (and
  // copies into it) were admitted with (DynamicReplication keeps it).
  int64_t hosted_heat = 0;
};

// One replica of the object (all of them, readable or not: a segment that
// holds any replica of the object is never a target).
struct ReplicaCandidate {
  SegmentId segment;
  ClientId owner;
  HostId host;
  Domain domain;
  // COMPLETE MEMORY replica of the current version: readers may use it.
  bool readable_memory = false;
  // Its owner can run a REPLICA_COPY now (alive, not draining). A readable
  // replica that cannot source still counts for host anti-affinity, the
  // replica limit and suppression.
  bool can_source = true;
  // Copies and reads in flight at this replica's client, as the master knows
  // them (stage 2 source preference).
  int64_t inflight_pressure = 0;
};

struct SourceChoice {
  std::optional<size_t> index;         // into the replicas span
  std::optional<RejectReason> reason;  // kNoSource; set exactly when index is empty
};

// Chooses the replica the copy reads from. `target_domain` matters only
// when domain_aware.
SourceChoice SelectSource(const ObjectName& object, absl::Span<const ReplicaCandidate> replicas,
                          absl::string_view target_domain, bool domain_aware);

// What the target search needs besides the candidate lists. A struct so that
// sizes, ids and flags cannot be swapped silently.
struct PlacementRequest {
  ObjectName object;
  uint64_t size_bytes = 0;
  std::optional<SegmentId> preferred_target;
  Domain target_domain;  // used when domain_aware
  bool domain_aware = false;
  // ReplicationKnobs::target_utilization_cap_ppm(): 850'000 for 0.85.
  int64_t utilization_cap_ppm = 850'000;
  // dynamic_replication_target_heat_aware: lower hosted_heat wins before
  // lower utilisation (beyond the RFC; off keeps the RFC's order).
  bool heat_aware = false;
};

struct TargetChoice {
  std::optional<size_t> index;  // into the segments span
  // kNoTarget, kNoTargetInDomain or kUtilizationCap; set exactly when index
  // is empty. kUtilizationCap only when the cap alone excluded every
  // otherwise valid candidate.
  std::optional<RejectReason> reason;
  bool preferred_used = false;     // the preferred target was chosen
  bool preferred_ignored = false;  // a preferred target was given but not valid
};

TargetChoice SelectTarget(const PlacementRequest& request,
                          absl::Span<const SegmentCandidate> segments,
                          absl::Span<const ReplicaCandidate> replicas);

// kTargetDomainHasReplica when domain-aware placement would copy from
// `source` in another domain into `target_domain` although a readable
// replica already sits there; nullopt otherwise (always when not
// domain-aware).
std::optional<RejectReason> CheckTargetDomainSuppression(
    absl::Span<const ReplicaCandidate> replicas, const ReplicaCandidate& source,
    absl::string_view target_domain, bool domain_aware);

// Readable MEMORY replicas that count against
// dynamic_replication_max_memory_replicas (DESIGN decision 2): all of the
// object's, or those in the target domain when domain-aware.
int64_t CountReplicasForLimit(absl::Span<const ReplicaCandidate> replicas,
                              absl::string_view target_domain, bool domain_aware);

// Source, suppression and target in the RFC's order.
struct PlacementPlan {
  std::optional<size_t> source;        // into replicas
  std::optional<size_t> target;        // into segments
  std::optional<RejectReason> reason;  // set exactly when either is missing
  bool preferred_used = false;
  bool preferred_ignored = false;
  bool cross_domain = false;  // source and target in different domains
};

PlacementPlan PlanCopy(const PlacementRequest& request,
                       absl::Span<const SegmentCandidate> segments,
                       absl::Span<const ReplicaCandidate> replicas);

}  // namespace heatsink

#endif  // HEATSINK_CORE_REPLICATION_PLACEMENT_H_
