// The proposal/lease contract helpers: every rejection reason has a status
// code and travels as a payload that RejectReasonOf reads back; the store
// domain comes from HEATSINK_STORE_DOMAIN, else MOONCAKE_STORE_DOMAIN, else
// "default".
#include "core/replication/replica_action.h"

#include "core/replication/replication_metrics.h"
#include "gtest/gtest.h"

namespace heatsink {
namespace {

TEST(ReplicaAction, EveryReasonRoundTripsThroughAStatus) {
  for (size_t i = 0; i < kRejectReasonCount; ++i) {
    const RejectReason reason = static_cast<RejectReason>(i);
    const absl::Status s = RejectionStatus(reason, "why");
    EXPECT_FALSE(s.ok());
    EXPECT_EQ(s.code(), RejectionCode(reason)) << RejectReasonName(reason);
    EXPECT_EQ(s.message(), "why");
    EXPECT_EQ(RejectReasonOf(s), reason) << RejectReasonName(reason);
  }
  EXPECT_EQ(RejectReasonOf(absl::OkStatus()), std::nullopt);
  EXPECT_EQ(RejectReasonOf(absl::AbortedError("plain")), std::nullopt);
}

TEST(ReplicaAction, CodesFollowTheDocumentedMapping) {
  EXPECT_EQ(RejectionCode(RejectReason::kDomainHintUnsupported),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RejectionCode(RejectReason::kBelowThreshold), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(RejectionCode(RejectReason::kPending), absl::StatusCode::kAborted);
  EXPECT_EQ(RejectionCode(RejectReason::kVersionMismatch), absl::StatusCode::kAborted);
  EXPECT_EQ(RejectionCode(RejectReason::kRecreateCooldown), absl::StatusCode::kUnavailable);
  EXPECT_EQ(RejectionCode(RejectReason::kReplicaLimit), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(RejectionCode(RejectReason::kConflict), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(RejectionCode(RejectReason::kObjectNotFound), absl::StatusCode::kNotFound);
}

TEST(ReplicaAction, StoreDomainResolution) {
  EXPECT_EQ(ResolveStoreDomain("zone-b", "zone-x"), "zone-b");
  EXPECT_EQ(ResolveStoreDomain("", "zone-x"), "zone-x");
  EXPECT_EQ(ResolveStoreDomain("", ""), "default");
}

}  // namespace
}  // namespace heatsink
