// Covers placement. Stage 1: the source is chosen by a stable tie-break, not
// by list position (order-independent, different keys pick different
// sources); the target is valid, allocatable, fits, respects the utilisation
// cap (with its own reason), honours a valid preferred target and falls back
// from an invalid one, avoids a host that already holds a readable replica
// when another valid host exists, prefers lower utilisation and never reuses
// a segment holding a replica. Stage 2: the source prefers the target domain,
// then lower domain cost, then lower in-flight pressure; the target must be
// in the target domain (kNoTargetInDomain otherwise); a readable replica in
// the target domain suppresses a cross-domain copy while same-domain fanout
// still works; with domain-aware placement off, domains and pressure are
// ignored.
#include "core/replication/placement.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace heatsink {
namespace {

constexpr uint64_t kGiB = 1ull << 30;
const ObjectName kObject{"tenant", "object"};

ReplicaCandidate Replica(uint64_t segment, std::string host, std::string domain = "default",
                         int64_t pressure = 0) {
  ReplicaCandidate r;
  r.segment = SegmentId(segment);
  r.owner = ClientId(segment);
  r.host = std::move(host);
  r.domain = std::move(domain);
  r.readable_memory = true;
  r.inflight_pressure = pressure;
  return r;
}

SegmentCandidate Segment(uint64_t id, std::string host, uint64_t used = 0,
                         std::string domain = "default", uint64_t capacity = 10 * kGiB) {
  SegmentCandidate s;
  s.id = SegmentId(id);
  s.owner = ClientId(id);
  s.host = std::move(host);
  s.domain = std::move(domain);
  s.capacity_bytes = capacity;
  s.used_bytes = used;
  return s;
}

PlacementRequest Request(uint64_t size = kGiB) {
  PlacementRequest r;
  r.object = kObject;
  r.size_bytes = size;
  return r;
}

// ---------------------------------------------------------------- domain cost

TEST(DomainCost, SameIsZeroCrossIsOneEmptyIsDefault) {
  EXPECT_EQ(DomainCost("a", "a"), 0);
  EXPECT_EQ(DomainCost("a", "b"), 1);
  EXPECT_EQ(DomainCost("", "default"), 0);
  EXPECT_EQ(DomainCost("", "b"), 1);
}

// ---------------------------------------------------------------- source, stage 1

TEST(SelectSource, UsesStableTieBreakNotListPosition) {
  std::vector<ReplicaCandidate> replicas = {Replica(11, "h1"), Replica(12, "h2"), Replica(13, "h3"),
                                            Replica(14, "h4")};
  // Over many keys the choice follows the hash, so the first replica is not
  // always taken and every replica gets picked for some key.
  std::set<uint64_t> chosen;
  int first_taken = 0;
  for (int i = 0; i < 64; ++i) {
    const ObjectName object{"tenant", absl::StrCat("key-", i)};
    const SourceChoice c = SelectSource(object, replicas, "", false);
    ASSERT_TRUE(c.index.has_value());
    EXPECT_FALSE(c.reason.has_value());
    chosen.insert(replicas[*c.index].segment.value);
    if (*c.index == 0) ++first_taken;
    // The choice is the minimum of the stable tie-break.
    const uint64_t winner = PlacementTieHash(object, replicas[*c.index].segment);
    for (const auto& r : replicas) EXPECT_LE(winner, PlacementTieHash(object, r.segment));
  }
  EXPECT_EQ(chosen.size(), 4u);
  EXPECT_LT(first_taken, 32);
}

TEST(SelectSource, ChoiceDoesNotDependOnListOrder) {
  std::vector<ReplicaCandidate> replicas = {Replica(11, "h1"), Replica(12, "h2"),
                                            Replica(13, "h3")};
  const uint64_t expected =
      replicas[*SelectSource(kObject, replicas, "", false).index].segment.value;
  const auto by_segment = [](const auto& a, const auto& b) { return a.segment < b.segment; };
  int permutations = 0;
  do {
    EXPECT_EQ(replicas[*SelectSource(kObject, replicas, "", false).index].segment.value, expected);
    ++permutations;
  } while (std::next_permutation(replicas.begin(), replicas.end(), by_segment));
  EXPECT_EQ(permutations, 6);
}

TEST(SelectSource, OnlyReadableReplicasWhoseOwnerCanCopy) {
  std::vector<ReplicaCandidate> replicas = {Replica(11, "h1"), Replica(12, "h2"),
                                            Replica(13, "h3")};
  replicas[0].readable_memory = false;  // a copy still in progress
  replicas[1].can_source = false;       // its client is draining
  const SourceChoice c = SelectSource(kObject, replicas, "", false);
  ASSERT_TRUE(c.index.has_value());
  EXPECT_EQ(*c.index, 2u);
  replicas[2].readable_memory = false;
  const SourceChoice none = SelectSource(kObject, replicas, "", false);
  EXPECT_FALSE(none.index.has_value());
  EXPECT_EQ(none.reason, RejectReason::kNoSource);
  EXPECT_EQ(SelectSource(kObject, {}, "", false).reason, RejectReason::kNoSource);
}

TEST(SelectSource, StageOneIgnoresDomainsAndPressure) {
  std::vector<ReplicaCandidate> plain = {Replica(11, "h1"), Replica(12, "h2"), Replica(13, "h3")};
  std::vector<ReplicaCandidate> decorated = plain;
  decorated[0].domain = "x";
  decorated[1].inflight_pressure = 1000;
  decorated[2].domain = "y";
  EXPECT_EQ(SelectSource(kObject, plain, "y", false).index,
            SelectSource(kObject, decorated, "y", false).index);
}

// ---------------------------------------------------------------- source, stage 2

TEST(SelectSource, StageTwoPrefersTheTargetDomainOverPressure) {
  const std::vector<ReplicaCandidate> replicas = {
      Replica(11, "a1", "a", 0), Replica(12, "b1", "b", 50), Replica(13, "a2", "a", 0)};
  const SourceChoice c = SelectSource(kObject, replicas, "b", true);
  ASSERT_TRUE(c.index.has_value());
  EXPECT_EQ(replicas[*c.index].segment, SegmentId(12));  // fanout stays in b
}

TEST(SelectSource, StageTwoPrefersLowerInflightPressureAtEqualCost) {
  std::vector<ReplicaCandidate> replicas = {Replica(11, "a1", "a", 7), Replica(12, "a2", "a", 3),
                                            Replica(13, "c1", "c", 5)};
  // Target domain b has no replica: all three cost 1; lowest pressure wins.
  EXPECT_EQ(replicas[*SelectSource(kObject, replicas, "b", true).index].segment, SegmentId(12));
  replicas[1].inflight_pressure = 9;
  EXPECT_EQ(replicas[*SelectSource(kObject, replicas, "b", true).index].segment, SegmentId(13));
}

TEST(SelectSource, StageTwoEqualPressureFallsBackToTheStableTieBreak) {
  std::vector<ReplicaCandidate> replicas = {Replica(11, "a1", "a", 2), Replica(12, "a2", "a", 2),
                                            Replica(13, "a3", "a", 2)};
  const SourceChoice staged = SelectSource(kObject, replicas, "a", true);
  const SourceChoice plain = SelectSource(kObject, replicas, "", false);
  EXPECT_EQ(staged.index, plain.index);
}

// ---------------------------------------------------------------- target, stage 1

TEST(SelectTarget, AvoidsAHostThatAlreadyHoldsAReadableReplica) {
  const std::vector<ReplicaCandidate> replicas = {Replica(1, "host-a")};
  // Segment 2 shares host-a and is emptier; segment 3 is on a fresh host.
  const std::vector<SegmentCandidate> segments = {
      Segment(1, "host-a", 1 * kGiB), Segment(2, "host-a", 0), Segment(3, "host-b", 5 * kGiB)};
  const TargetChoice c = SelectTarget(Request(), segments, replicas);
  ASSERT_TRUE(c.index.has_value());
  EXPECT_EQ(segments[*c.index].id, SegmentId(3));
}

TEST(SelectTarget, UsesTheSameHostWhenNoOtherValidHostExists) {
  const std::vector<ReplicaCandidate> replicas = {Replica(1, "host-a")};
  const std::vector<SegmentCandidate> segments = {
      Segment(1, "host-a"), Segment(2, "host-a"),
      Segment(3, "host-b", 9 * kGiB + kGiB / 2)};  // host-b lacks room
  const TargetChoice c = SelectTarget(Request(), segments, replicas);
  ASSERT_TRUE(c.index.has_value());
  EXPECT_EQ(segments[*c.index].id, SegmentId(2));
}

TEST(SelectTarget, NeverASegmentHoldingAnyReplicaOfTheObject) {
  std::vector<ReplicaCandidate> replicas = {Replica(1, "host-a"), Replica(2, "host-b")};
  replicas[1].readable_memory = false;  // in-progress copy still occupies segment 2
  const std::vector<SegmentCandidate> segments = {Segment(1, "host-a"), Segment(2, "host-b")};
  const TargetChoice c = SelectTarget(Request(), segments, replicas);
  EXPECT_FALSE(c.index.has_value());
  EXPECT_EQ(c.reason, RejectReason::kNoTarget);
}

TEST(SelectTarget, PrefersLowerUtilisationThenTheStableTieBreak) {
  const std::vector<ReplicaCandidate> replicas = {Replica(1, "host-a")};
  std::vector<SegmentCandidate> segments = {Segment(2, "h2", 4 * kGiB), Segment(3, "h3", 1 * kGiB),
                                            Segment(4, "h4", 2 * kGiB)};
  EXPECT_EQ(segments[*SelectTarget(Request(), segments, replicas).index].id, SegmentId(3));
  // Utilisation after the copy, not raw free bytes: a bigger segment with
  // more used bytes can still be the less utilised one.
  segments.push_back(Segment(5, "h5", 2 * kGiB, "default", 100 * kGiB));
  EXPECT_EQ(segments[*SelectTarget(Request(), segments, replicas).index].id, SegmentId(5));
  // Equal utilisation: the stable tie-break, independent of order.
  std::vector<SegmentCandidate> equal = {Segment(6, "h6"), Segment(7, "h7"), Segment(8, "h8")};
  const SegmentId pick = equal[*SelectTarget(Request(), equal, replicas).index].id;
  std::reverse(equal.begin(), equal.end());
  EXPECT_EQ(equal[*SelectTarget(Request(), equal, replicas).index].id, pick);
  uint64_t best = UINT64_MAX;
  for (const auto& s : equal) best = std::min(best, PlacementTieHash(kObject, s.id));
  EXPECT_EQ(PlacementTieHash(kObject, pick), best);
}

TEST(SelectTarget, ValidPreferredTargetWins) {
  const std::vector<ReplicaCandidate> replicas = {Replica(1, "host-a")};
  // Preferred segment 2 is on the replica's host and fuller than segment 3.
  const std::vector<SegmentCandidate> segments = {Segment(2, "host-a", 3 * kGiB),
                                                  Segment(3, "host-b")};
  PlacementRequest req = Request();
  req.preferred_target = SegmentId(2);
  const TargetChoice c = SelectTarget(req, segments, replicas);
  ASSERT_TRUE(c.index.has_value());
  EXPECT_EQ(segments[*c.index].id, SegmentId(2));
  EXPECT_TRUE(c.preferred_used);
  EXPECT_FALSE(c.preferred_ignored);
}

TEST(SelectTarget, InvalidPreferredTargetFallsBack) {
  const std::vector<ReplicaCandidate> replicas = {Replica(1, "host-a")};
  std::vector<SegmentCandidate> segments = {Segment(1, "host-a"), Segment(2, "host-c"),
                                            Segment(3, "host-b"),
                                            Segment(4, "host-d", 9 * kGiB + kGiB / 2)};
  segments[1].allocatable = false;
  for (const uint64_t preferred : {1ull, 2ull, 4ull, 99ull}) {
    // 1 holds the replica, 2 is not allocatable, 4 is too full, 99 unknown.
    PlacementRequest req = Request();
    req.preferred_target = SegmentId(preferred);
    const TargetChoice c = SelectTarget(req, segments, replicas);
    ASSERT_TRUE(c.index.has_value()) << preferred;
    EXPECT_EQ(segments[*c.index].id, SegmentId(3)) << preferred;
    EXPECT_FALSE(c.preferred_used);
    EXPECT_TRUE(c.preferred_ignored);
  }
}

TEST(SelectTarget, UtilisationCapHasItsOwnReason) {
  const std::vector<ReplicaCandidate> replicas = {Replica(1, "host-a")};
  // 10 GiB segments with 8 GiB used: a 1 GiB copy fits but ends at 90%.
  const std::vector<SegmentCandidate> segments = {Segment(2, "h2", 8 * kGiB),
                                                  Segment(3, "h3", 8 * kGiB)};
  const TargetChoice c = SelectTarget(Request(), segments, replicas);
  EXPECT_FALSE(c.index.has_value());
  EXPECT_EQ(c.reason, RejectReason::kUtilizationCap);
  // At exactly the cap the copy is allowed: 7.5 GiB + 1 GiB = 85%.
  const std::vector<SegmentCandidate> at_cap = {Segment(2, "h2", 7 * kGiB + kGiB / 2)};
  EXPECT_TRUE(SelectTarget(Request(), at_cap, replicas).index.has_value());
  // A cap of 0.95 lets the 90% segments through.
  PlacementRequest loose = Request();
  loose.utilization_cap_ppm = 950'000;
  EXPECT_TRUE(SelectTarget(loose, segments, replicas).index.has_value());
}

TEST(SelectTarget, NoTargetWhenNothingFits) {
  const std::vector<ReplicaCandidate> replicas = {Replica(1, "host-a")};
  std::vector<SegmentCandidate> segments = {Segment(2, "h2", 9 * kGiB + kGiB / 2), Segment(3, "h3"),
                                            Segment(0, "h0")};
  segments[1].allocatable = false;
  const TargetChoice c = SelectTarget(Request(), segments, replicas);
  EXPECT_FALSE(c.index.has_value());
  EXPECT_EQ(c.reason, RejectReason::kNoTarget);
  // Reserved quota counts as used.
  std::vector<SegmentCandidate> reserved = {Segment(4, "h4")};
  reserved[0].reserved_bytes = 10 * kGiB;
  EXPECT_EQ(SelectTarget(Request(), reserved, replicas).reason, RejectReason::kNoTarget);
}

// ---------------------------------------------------------------- target, stage 2

PlacementRequest DomainRequest(std::string target_domain) {
  PlacementRequest r = Request();
  r.domain_aware = true;
  r.target_domain = std::move(target_domain);
  return r;
}

TEST(SelectTarget, StageTwoChoosesOnlyInTheTargetDomain) {
  const std::vector<ReplicaCandidate> replicas = {Replica(1, "a1", "a")};
  const std::vector<SegmentCandidate> segments = {
      Segment(2, "a2", 0, "a"), Segment(3, "b1", 6 * kGiB, "b"), Segment(4, "b2", 4 * kGiB, "b")};
  const TargetChoice c = SelectTarget(DomainRequest("b"), segments, replicas);
  ASSERT_TRUE(c.index.has_value());
  EXPECT_EQ(segments[*c.index].id, SegmentId(4));
  // Without domain awareness the emptiest segment anywhere wins.
  EXPECT_EQ(segments[*SelectTarget(Request(), segments, replicas).index].id, SegmentId(2));
}

TEST(SelectTarget, StageTwoRejectsWhenTheTargetDomainHasNoValidSegment) {
  const std::vector<ReplicaCandidate> replicas = {Replica(1, "a1", "a")};
  const std::vector<SegmentCandidate> segments = {Segment(2, "a2", 0, "a"),
                                                  Segment(3, "b1", 9 * kGiB + kGiB / 2, "b")};
  EXPECT_EQ(SelectTarget(DomainRequest("b"), segments, replicas).reason,
            RejectReason::kNoTargetInDomain);
  EXPECT_EQ(SelectTarget(DomainRequest("c"), segments, replicas).reason,
            RejectReason::kNoTargetInDomain);
}

TEST(SelectTarget, StageTwoPreferredTargetOutsideTheDomainFallsBack) {
  const std::vector<ReplicaCandidate> replicas = {Replica(1, "a1", "a")};
  const std::vector<SegmentCandidate> segments = {Segment(2, "a2", 0, "a"),
                                                  Segment(3, "b1", 0, "b")};
  PlacementRequest req = DomainRequest("b");
  req.preferred_target = SegmentId(2);
  const TargetChoice c = SelectTarget(req, segments, replicas);
  ASSERT_TRUE(c.index.has_value());
  EXPECT_EQ(segments[*c.index].id, SegmentId(3));
  EXPECT_TRUE(c.preferred_ignored);
}

TEST(SelectTarget, StageTwoKeepsHostAntiAffinityInsideTheDomain) {
  const std::vector<ReplicaCandidate> replicas = {Replica(1, "b1", "b")};
  const std::vector<SegmentCandidate> segments = {Segment(2, "b1", 0, "b"),
                                                  Segment(3, "b2", 5 * kGiB, "b")};
  EXPECT_EQ(segments[*SelectTarget(DomainRequest("b"), segments, replicas).index].id, SegmentId(3));
}

// ---------------------------------------------------------------- suppression and plans

TEST(PlanCopy, ReplicaInTheTargetDomainSuppressesACrossDomainCopy) {
  std::vector<ReplicaCandidate> replicas = {Replica(1, "a1", "a"), Replica(2, "b1", "b")};
  // The replica in b cannot act as a source right now, so the source would
  // come from a: a cross-domain copy into a domain that already serves reads.
  replicas[1].can_source = false;
  const std::vector<SegmentCandidate> segments = {Segment(3, "b2", 0, "b")};
  const PlacementPlan plan = PlanCopy(DomainRequest("b"), segments, replicas);
  EXPECT_EQ(plan.reason, RejectReason::kTargetDomainHasReplica);
  EXPECT_FALSE(plan.target.has_value());
  EXPECT_EQ(CheckTargetDomainSuppression(replicas, replicas[0], "b", true),
            RejectReason::kTargetDomainHasReplica);
  EXPECT_EQ(CheckTargetDomainSuppression(replicas, replicas[0], "b", false), std::nullopt);
  EXPECT_EQ(CheckTargetDomainSuppression(replicas, replicas[1], "b", true), std::nullopt);
}

TEST(PlanCopy, SameDomainFanoutStillWorksAfterATargetDomainReplicaExists) {
  const std::vector<ReplicaCandidate> replicas = {Replica(1, "a1", "a"), Replica(2, "b1", "b")};
  const std::vector<SegmentCandidate> segments = {Segment(3, "b2", 0, "b"),
                                                  Segment(4, "a2", 0, "a")};
  const PlacementPlan plan = PlanCopy(DomainRequest("b"), segments, replicas);
  ASSERT_FALSE(plan.reason.has_value()) << RejectReasonName(*plan.reason);
  EXPECT_EQ(replicas[*plan.source].segment, SegmentId(2));
  EXPECT_EQ(segments[*plan.target].id, SegmentId(3));
  EXPECT_FALSE(plan.cross_domain);
}

TEST(PlanCopy, FirstReplicaInADomainIsACrossDomainCopy) {
  const std::vector<ReplicaCandidate> replicas = {Replica(1, "a1", "a")};
  const std::vector<SegmentCandidate> segments = {Segment(3, "b2", 0, "b")};
  const PlacementPlan plan = PlanCopy(DomainRequest("b"), segments, replicas);
  ASSERT_TRUE(plan.target.has_value());
  EXPECT_TRUE(plan.cross_domain);
}

TEST(PlanCopy, ReportsTheFirstFailingStep) {
  const std::vector<SegmentCandidate> segments = {Segment(3, "h3")};
  EXPECT_EQ(PlanCopy(Request(), segments, {}).reason, RejectReason::kNoSource);
  const std::vector<ReplicaCandidate> replicas = {Replica(1, "h1")};
  const std::vector<SegmentCandidate> full = {Segment(3, "h3", 10 * kGiB)};
  const PlacementPlan plan = PlanCopy(Request(), full, replicas);
  EXPECT_EQ(plan.reason, RejectReason::kNoTarget);
  EXPECT_TRUE(plan.source.has_value());
}

TEST(CountReplicasForLimit, CountsReadableReplicasPerTargetDomainWhenDomainAware) {
  std::vector<ReplicaCandidate> replicas = {Replica(1, "a1", "a"), Replica(2, "a2", "a"),
                                            Replica(3, "b1", "b"), Replica(4, "b2", "b")};
  replicas[3].readable_memory = false;
  EXPECT_EQ(CountReplicasForLimit(replicas, "b", false), 3);
  EXPECT_EQ(CountReplicasForLimit(replicas, "a", true), 2);
  EXPECT_EQ(CountReplicasForLimit(replicas, "b", true), 1);
  EXPECT_EQ(CountReplicasForLimit(replicas, "c", true), 0);
}

}  // namespace
}  // namespace heatsink
