#include "core/replication/replica_action.h"

#include <string>

#include "absl/strings/cord.h"
#include "core/base/check.h"

namespace heatsink {

absl::string_view ReplicaActionName(ReplicaAction a) {
  switch (a) {
    case ReplicaAction::kAdd:
      return "ADD";
  }
  HS_CHECK_MSG(false, "bad ReplicaAction");
  return {};  // not reached; some sanitizer builds cannot prove it
}

absl::StatusCode RejectionCode(RejectReason reason) {
  switch (reason) {
    case RejectReason::kInvalidArgument:
    case RejectReason::kDomainHintUnsupported:
      return absl::StatusCode::kInvalidArgument;
    case RejectReason::kModeOff:
    case RejectReason::kExpired:
    case RejectReason::kBelowThreshold:
    case RejectReason::kSizeMismatch:
    case RejectReason::kNoSource:
      return absl::StatusCode::kFailedPrecondition;
    case RejectReason::kPending:
    case RejectReason::kVersionMismatch:
      return absl::StatusCode::kAborted;
    case RejectReason::kCooldown:
    case RejectReason::kRecreateCooldown:
    case RejectReason::kNotComplete:
      return absl::StatusCode::kUnavailable;
    case RejectReason::kReplicaLimit:
    case RejectReason::kNoTarget:
    case RejectReason::kNoTargetInDomain:
    case RejectReason::kUtilizationCap:
    case RejectReason::kResourceExhausted:
    case RejectReason::kWarmupLimit:
      return absl::StatusCode::kResourceExhausted;
    case RejectReason::kConflict:
    case RejectReason::kTargetDomainHasReplica:
    case RejectReason::kAlreadyPresent:
      return absl::StatusCode::kAlreadyExists;
    case RejectReason::kObjectNotFound:
      return absl::StatusCode::kNotFound;
    case RejectReason::kTaskCreateFailed:
      return absl::StatusCode::kInternal;
  }
  HS_CHECK_MSG(false, "RejectReason without a status code");
  return absl::StatusCode::kUnknown;  // not reached
}

absl::Status RejectionStatus(RejectReason reason, absl::string_view message) {
  absl::Status status(RejectionCode(reason), message);
  status.SetPayload(kRejectReasonPayloadUrl, absl::Cord(RejectReasonName(reason)));
  return status;
}

std::optional<RejectReason> RejectReasonOf(const absl::Status& status) {
  if (status.ok()) return std::nullopt;
  const auto payload = status.GetPayload(kRejectReasonPayloadUrl);
  if (!payload.has_value()) return std::nullopt;
  return ParseRejectReason(std::string(*payload));
}

std::string ResolveStoreDomain(absl::string_view heatsink_store_domain,
                               absl::string_view mooncake_store_domain) {
  if (!heatsink_store_domain.empty()) return std::string(heatsink_store_domain);
  return NormalizeDomain(mooncake_store_domain);
}

}  // namespace heatsink
