// File: core/replication/replica_action.h
//
// The control-plane contract of dynamic replication (RFC "Proposal Contract"
// and "Lease And Version Fence"): a ReplicaActionProposal asks the master to
// add one dynamic MEMORY replica of an object; an accepted proposal returns a
// ReplicaActionLease that binds the plan (source, target, version) to a lease
// id and a deadline. The REPLICA_COPY task created for the lease carries the
// lease id and version, and every dynamic copy call presents them.
//
// A rejected proposal (or a failed dynamic copy call) returns a status whose
// code comes from RejectionCode() and which carries its reason word as a
// payload; RejectReasonOf() reads it back, so gRPC and tests see the same
// stable vocabulary as the decision log.
#ifndef HEATSINK_CORE_REPLICATION_REPLICA_ACTION_H_
#define HEATSINK_CORE_REPLICATION_REPLICA_ACTION_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/env/time.h"
#include "core/model/ids.h"
#include "core/replication/decision.h"

namespace heatsink {

// The only action of this stage.
enum class ReplicaAction { kAdd };

absl::string_view ReplicaActionName(ReplicaAction a);

// SubmitReplicaActionProposal's request. Internal control plane (not a public
// client RPC). Every field takes part in idempotency: a resubmission with the
// same proposal_id must repeat every field exactly, or it is a conflict.
struct ReplicaActionProposal {
  ReplicaAction action = ReplicaAction::kAdd;
  ProposalId proposal_id;  // chosen by the proposer; must be valid (non-zero)
  ObjectName name;         // empty tenant = default
  // Domain hints. Must be empty while domain-aware placement is off
  // (domain_hint_unsupported). With it on: the replica goes to target_domain,
  // else to requester_domain, else to the default domain; the master's heat
  // window is consulted under (tenant, key, requester_domain).
  Domain requester_domain;
  Domain target_domain;
  // The version and size the proposer saw. Always checked: objects never have
  // version 0 or size 0, so 0 ("not given") is a mismatch.
  Version observed_version = 0;
  uint64_t expected_size_bytes = 0;
  // Honoured only when valid, allocatable, roomy, under the utilisation cap
  // and (domain-aware) in the target domain; otherwise placement falls back.
  std::optional<SegmentId> preferred_target_segment;
  // Absolute time on the master's clock; the proposal is rejected (expired)
  // when now >= expiration_ns, and the lease never outlives it.
  TimeNs expiration_ns = 0;

  friend bool operator==(const ReplicaActionProposal&, const ReplicaActionProposal&) = default;
};

// An accepted plan. In observe mode `would_propose` is true and the plan is
// reported without lease or task (lease_id and task_id are 0).
struct ReplicaActionLease {
  ProposalId proposal_id;  // 0 for admissions from the heat path
  LeaseId lease_id;
  ObjectName name;
  SegmentId source_segment;
  ClientId source_client;  // the only client allowed to run the copy
  SegmentId target_segment;
  Domain target_domain;  // normalised ("default" in stage 1)
  Version version = 0;
  // min(now + dynamic_replication_lease_ttl_ms, the proposal's expiration).
  TimeNs expiration_ns = 0;
  TaskId task_id;
  uint64_t size_bytes = 0;
  bool would_propose = false;
  bool warmup = false;  // created by cross-domain warmup

  friend bool operator==(const ReplicaActionLease&, const ReplicaActionLease&) = default;
};

// The canonical status code of a rejection (the runtime maps it 1:1 to gRPC):
//   INVALID_ARGUMENT    invalid_argument, domain_hint_unsupported
//   FAILED_PRECONDITION mode_off, expired, below_threshold, size_mismatch,
//                       no_source
//   ABORTED             pending, version_mismatch
//   UNAVAILABLE         cooldown, recreate_cooldown, not_complete
//   RESOURCE_EXHAUSTED  replica_limit, no_target, no_target_in_domain,
//                       utilization_cap, resource_exhausted, warmup_limit
//   ALREADY_EXISTS      conflict, target_domain_has_replica, already_present
//   NOT_FOUND           object_not_found
//   INTERNAL            task_create_failed (the message carries the cause)
absl::StatusCode RejectionCode(RejectReason reason);

// A status with RejectionCode(reason), the message, and the reason word as
// its payload.
absl::Status RejectionStatus(RejectReason reason, absl::string_view message);

// The reason carried by a status made with RejectionStatus; nullopt for any
// other status.
std::optional<RejectReason> RejectReasonOf(const absl::Status& status);

// The payload type URL under which the reason word travels.
inline constexpr absl::string_view kRejectReasonPayloadUrl =
    "type.heatsink.dev/heatsink.replication.RejectReason";

// The store domain of a process from its configuration values: the
// HEATSINK_STORE_DOMAIN value if non-empty, else MOONCAKE_STORE_DOMAIN's,
// else "default". The runtime passes what getenv returned (nullptr -> "").
std::string ResolveStoreDomain(absl::string_view heatsink_store_domain,
                               absl::string_view mooncake_store_domain);

}  // namespace heatsink

#endif  // HEATSINK_CORE_REPLICATION_REPLICA_ACTION_H_
