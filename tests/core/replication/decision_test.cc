// Covers the decision-log encoding: field order, nulls, escaping and the
// reason vocabulary round trip.
#include "core/replication/decision.h"

#include "gtest/gtest.h"

namespace heatsink {
namespace {

TEST(DecisionJson, AcceptedRecordHasEveryFieldInOrder) {
  DecisionRecord r;
  r.t_ns = 1500;
  r.kind = DecisionKind::kHeat;
  r.tenant = "default";
  r.key = "k\"1";
  r.outcome = DecisionOutcome::kAccepted;
  r.source_segment = SegmentId(3);
  r.target_segment = SegmentId(4);
  r.lease_id = LeaseId(9);
  r.version = 2;
  EXPECT_EQ(FormatDecisionJson(r),
            "{\"t_ns\":1500,\"kind\":\"heat\",\"tenant\":\"default\",\"key\":\"k\\\"1\","
            "\"requester_domain\":null,\"target_domain\":null,\"outcome\":\"accepted\","
            "\"reason\":null,\"source_segment\":3,\"target_segment\":4,\"lease_id\":9,"
            "\"version\":2}");
}

TEST(DecisionJson, RejectedRecordCarriesReasonWord) {
  DecisionRecord r;
  r.kind = DecisionKind::kProposal;
  r.tenant = "t";
  r.key = "k";
  r.requester_domain = "b";
  r.outcome = DecisionOutcome::kRejected;
  r.reason = RejectReason::kRecreateCooldown;
  const std::string s = FormatDecisionJson(r);
  EXPECT_NE(s.find("\"reason\":\"recreate_cooldown\""), std::string::npos);
  EXPECT_NE(s.find("\"requester_domain\":\"b\""), std::string::npos);
}

TEST(DecisionJson, ControlCharactersEscaped) {
  std::string out;
  AppendJsonString(&out, std::string("a\x01\n", 3));
  EXPECT_EQ(out, "\"a\\u0001\\n\"");
}

TEST(RejectReason, EveryWordRoundTrips) {
  for (int i = 0; i <= static_cast<int>(RejectReason::kWarmupLimit); ++i) {
    const auto r = static_cast<RejectReason>(i);
    const auto parsed = ParseRejectReason(RejectReasonName(r));
    ASSERT_TRUE(parsed.has_value()) << RejectReasonName(r);
    EXPECT_EQ(*parsed, r);
  }
  EXPECT_FALSE(ParseRejectReason("nonsense").has_value());
}

}  // namespace
}  // namespace heatsink
