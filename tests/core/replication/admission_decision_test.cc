// Covers DecideAdmission as a function of (now, input, context, facts), with
// a table of facts instead of a master: the checks reject in the documented
// order (each blocker removed in turn exposes the next one), facts are asked
// only as far as the checks get (a trigger below the threshold never looks
// the object up), observe ends with would_propose and the plan, enforce with
// a grant naming the source, target, version and size; warmup is refused
// where its domain holds a replica or nothing can serve it, and its byte
// budget defers a copy only when the second already started another.
#include "core/replication/admission_decision.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace heatsink {
namespace {

// The facts as plain fields; counts what the decision asked.
class TableFacts final : public AdmissionFacts {
 public:
  int64_t window_count = 10;
  std::optional<LeaseId> blocking;
  bool admission_cooldown = false;
  bool recreate_cooldown = false;
  bool object_found = true;
  bool put_in_progress = false;
  TaskId replication_task;
  int replicas_in_memory = 1;  // complete MEMORY replicas, one per segment from 1 up
  int64_t warmup_bytes_used = 0;
  int object_asks = 0;
  int candidate_asks = 0;
  int budget_asks = 0;

  int64_t WindowCount(TimeNs /*now*/, HeatKeyView /*key*/) override { return window_count; }
  std::optional<LeaseId> BlockingAction(const ObjectName& /*name*/,
                                        absl::string_view /*target_domain*/) override {
    return blocking;
  }
  bool AdmissionCooldownActive(TimeNs /*now*/, HeatKeyView /*key*/) override {
    return admission_cooldown;
  }
  bool RecreateCooldownActive(TimeNs /*now*/, HeatKeyView /*key*/) override {
    return recreate_cooldown;
  }
  absl::StatusOr<ObjectView> Object(const ObjectName& name) override {
    ++object_asks;
    if (!object_found) return absl::NotFoundError("no such object");
    ObjectView v;
    v.name = name;
    v.version = 7;
    v.size_bytes = 4096;
    v.put_in_progress = put_in_progress;
    v.replication_task = replication_task;
    for (int i = 0; i < replicas_in_memory; ++i) {
      ReplicaDescriptor d;
      d.replica_id = ReplicaId(100 + static_cast<uint64_t>(i));
      d.status = ReplicaStatus::kComplete;
      d.segment_id = SegmentId(1 + static_cast<uint64_t>(i));
      d.size_bytes = v.size_bytes;
      d.version = v.version;
      d.location = std::make_shared<SegmentLocation>(Segment(1 + i).location);
      v.replicas.push_back(d);
    }
    return v;
  }
  Candidates CandidatesFor(const ObjectView& object) override {
    ++candidate_asks;
    std::vector<SegmentView> segments;
    for (int i = 1; i <= 4; ++i) segments.push_back(Segment(i));
    return BuildCandidates(object, segments);
  }
  int64_t WarmupBytesUsed(TimeNs /*now*/) override {
    ++budget_asks;
    return warmup_bytes_used;
  }

  static SegmentView Segment(int i) {
    SegmentView s;
    s.location.id = SegmentId(static_cast<uint64_t>(i));
    s.location.owner = ClientId(static_cast<uint64_t>(i));
    s.location.host = HostId(absl::StrCat("h", i));
    s.location.domain = "d";
    s.capacity_bytes = 1 << 30;
    s.free_bytes = s.capacity_bytes;
    return s;
  }
};

class DecideAdmissionTest : public ::testing::Test {
 protected:
  DecideAdmissionTest() {
    knobs_ = ReplicationKnobs::Production();
    knobs_.dynamic_replication_max_memory_replicas = 2;
    knobs_.dynamic_replication_warmup_bytes_per_second_max = 10'000;
    context_.mode = DynamicReplicationMode::kEnforce;
    context_.knobs = &knobs_;
    context_.hit_count = 3;
    input_.heat_key = HeatKey("", "k", "");
  }
  AdmissionVerdict Decide() { return DecideAdmission(1'000, input_, context_, facts_); }
  std::optional<RejectReason> ReasonOf(const AdmissionVerdict& v) { return v.record.reason; }

  ReplicationKnobs knobs_;
  AdmissionContext context_;
  AdmissionInput input_;
  TableFacts facts_;
};

TEST_F(DecideAdmissionTest, ChecksRejectInTheDocumentedOrder) {
  context_.mode = DynamicReplicationMode::kOff;
  facts_.window_count = 1;
  facts_.blocking = LeaseId(9);
  facts_.admission_cooldown = true;
  facts_.recreate_cooldown = true;
  facts_.object_found = false;
  const std::vector<std::pair<RejectReason, std::function<void()>>> steps = {
      {RejectReason::kModeOff, [&] { context_.mode = DynamicReplicationMode::kEnforce; }},
      {RejectReason::kBelowThreshold, [&] { facts_.window_count = 3; }},
      {RejectReason::kPending, [&] { facts_.blocking.reset(); }},
      {RejectReason::kCooldown, [&] { facts_.admission_cooldown = false; }},
      {RejectReason::kRecreateCooldown, [&] { facts_.recreate_cooldown = false; }},
      {RejectReason::kObjectNotFound,
       [&] {
         facts_.object_found = true;
         facts_.put_in_progress = true;
       }},
      {RejectReason::kNotComplete,
       [&] {
         facts_.put_in_progress = false;
         facts_.replication_task = TaskId(5);
       }},
      {RejectReason::kPending,
       [&] {
         facts_.replication_task = TaskId();
         facts_.replicas_in_memory = 2;
       }},
      {RejectReason::kReplicaLimit, [&] { facts_.replicas_in_memory = 1; }},
  };
  for (const auto& [reason, unblock] : steps) {
    const AdmissionVerdict v = Decide();
    EXPECT_EQ(v.outcome, AdmissionOutcome::kRejected);
    EXPECT_EQ(ReasonOf(v), std::optional<RejectReason>(reason)) << RejectReasonName(reason);
    EXPECT_FALSE(v.message.empty());
    unblock();
  }
  const AdmissionVerdict v = Decide();
  EXPECT_EQ(v.outcome, AdmissionOutcome::kGrant);
  EXPECT_FALSE(v.record.reason.has_value());
}

TEST_F(DecideAdmissionTest, FactsAreAskedOnlyAsFarAsTheChecksGet) {
  facts_.window_count = 2;  // below the hit count of 3
  AdmissionVerdict v = Decide();
  EXPECT_EQ(ReasonOf(v), std::optional<RejectReason>(RejectReason::kBelowThreshold));
  EXPECT_EQ(v.heat, 2);
  EXPECT_EQ(facts_.object_asks, 0);
  EXPECT_EQ(facts_.candidate_asks, 0);
  facts_.window_count = 3;
  facts_.admission_cooldown = true;
  v = Decide();
  EXPECT_EQ(ReasonOf(v), std::optional<RejectReason>(RejectReason::kCooldown));
  EXPECT_EQ(facts_.object_asks, 0);
  facts_.admission_cooldown = false;
  v = Decide();
  EXPECT_EQ(v.outcome, AdmissionOutcome::kGrant);
  EXPECT_EQ(facts_.object_asks, 1);
  EXPECT_EQ(facts_.candidate_asks, 1);
  EXPECT_EQ(facts_.budget_asks, 0);  // not a warmup
  EXPECT_FALSE(v.warmup_budget_checked);
}

TEST_F(DecideAdmissionTest, EnforceGrantsThePlanAndObserveOnlyDescribesIt) {
  AdmissionVerdict v = Decide();
  ASSERT_EQ(v.outcome, AdmissionOutcome::kGrant);
  ASSERT_TRUE(v.lease.has_value() && v.object.has_value());
  EXPECT_EQ(v.lease->name, (ObjectName{"default", "k"}));
  EXPECT_EQ(v.lease->source_segment, SegmentId(1));
  EXPECT_EQ(v.source_replica, ReplicaId(100));
  EXPECT_EQ(v.lease->source_client, ClientId(1));
  EXPECT_NE(v.lease->target_segment, SegmentId(1));
  EXPECT_EQ(v.record.target_segment, std::optional<SegmentId>(v.lease->target_segment));
  EXPECT_EQ(v.record.source_segment, std::optional<SegmentId>(SegmentId(1)));
  EXPECT_EQ(v.lease->version, 7u);
  EXPECT_EQ(v.record.version, std::optional<Version>(7));
  EXPECT_EQ(v.lease->size_bytes, 4096u);
  EXPECT_FALSE(v.lease->would_propose);
  EXPECT_FALSE(v.lease->lease_id.valid());  // granted when applied

  context_.mode = DynamicReplicationMode::kObserve;
  v = Decide();
  ASSERT_EQ(v.outcome, AdmissionOutcome::kWouldPropose);
  EXPECT_EQ(v.record.outcome, DecisionOutcome::kWouldPropose);
  ASSERT_TRUE(v.lease.has_value());
  EXPECT_TRUE(v.lease->would_propose);
}

TEST_F(DecideAdmissionTest, WarmupIsRefusedWhereItsDomainHoldsAReplicaOrCannotBeServed) {
  input_.kind = DecisionKind::kWarmup;
  input_.target_domain = "d";
  facts_.window_count = 0;  // warmup does not look at heat
  facts_.replicas_in_memory = 1;
  // The replica sits in domain "d": warmup into "d" finds it there.
  AdmissionVerdict v = Decide();
  EXPECT_EQ(ReasonOf(v), std::optional<RejectReason>(RejectReason::kAlreadyPresent));
  input_.target_domain = "e";
  // No segment of domain "e": nowhere to place.
  v = Decide();
  EXPECT_EQ(ReasonOf(v), std::optional<RejectReason>(RejectReason::kNoTargetInDomain));
  EXPECT_EQ(facts_.budget_asks, 0);  // refused before the budget is looked at

  // Without a readable replica there is no source.
  input_.target_domain = "d";
  facts_.replicas_in_memory = 0;
  v = Decide();
  EXPECT_EQ(ReasonOf(v), std::optional<RejectReason>(RejectReason::kNoSource));
}

TEST_F(DecideAdmissionTest, WarmupByteBudget) {
  input_.kind = DecisionKind::kWarmup;
  input_.target_domain = "d2";
  // One replica in domain "d"; segments 3 and 4 move to domain "d2".
  class TwoDomainFacts final : public AdmissionFacts {
   public:
    explicit TwoDomainFacts(TableFacts* base) : base_(base) {}
    int64_t WindowCount(TimeNs now, HeatKeyView key) override {
      return base_->WindowCount(now, key);
    }
    std::optional<LeaseId> BlockingAction(const ObjectName& name,
                                          absl::string_view domain) override {
      return base_->BlockingAction(name, domain);
    }
    bool AdmissionCooldownActive(TimeNs now, HeatKeyView key) override {
      return base_->AdmissionCooldownActive(now, key);
    }
    bool RecreateCooldownActive(TimeNs now, HeatKeyView key) override {
      return base_->RecreateCooldownActive(now, key);
    }
    absl::StatusOr<ObjectView> Object(const ObjectName& name) override {
      return base_->Object(name);
    }
    Candidates CandidatesFor(const ObjectView& object) override {
      std::vector<SegmentView> segments;
      for (int i = 1; i <= 4; ++i) {
        SegmentView s = TableFacts::Segment(i);
        if (i >= 3) s.location.domain = "d2";
        segments.push_back(s);
      }
      return BuildCandidates(object, segments);
    }
    int64_t WarmupBytesUsed(TimeNs now) override { return base_->WarmupBytesUsed(now); }

   private:
    TableFacts* const base_;
  };
  TwoDomainFacts facts(&facts_);
  const auto decide = [&] { return DecideAdmission(1'000, input_, context_, facts); };

  facts_.warmup_bytes_used = 0;
  AdmissionVerdict v = decide();
  ASSERT_EQ(v.outcome, AdmissionOutcome::kGrant);
  EXPECT_TRUE(v.warmup_budget_checked);
  EXPECT_TRUE(v.lease->warmup);
  EXPECT_EQ(v.lease->target_domain, "d2");

  facts_.warmup_bytes_used = 4096;  // 8,192 <= 10,000: still fits
  EXPECT_EQ(decide().outcome, AdmissionOutcome::kGrant);

  facts_.warmup_bytes_used = 8192;  // 12,288 > 10,000: wait for the next second
  v = decide();
  EXPECT_EQ(v.outcome, AdmissionOutcome::kRejected);
  EXPECT_EQ(ReasonOf(v), std::optional<RejectReason>(RejectReason::kWarmupLimit));
  EXPECT_TRUE(v.deferred);

  // An object larger than the whole budget goes alone in an empty second.
  knobs_.dynamic_replication_warmup_bytes_per_second_max = 1'000;
  facts_.warmup_bytes_used = 0;
  EXPECT_EQ(decide().outcome, AdmissionOutcome::kGrant);

  // Observe never looks at the budget.
  context_.mode = DynamicReplicationMode::kObserve;
  facts_.warmup_bytes_used = 1'000'000;
  facts_.budget_asks = 0;
  EXPECT_EQ(decide().outcome, AdmissionOutcome::kWouldPropose);
  EXPECT_EQ(facts_.budget_asks, 0);
}

}  // namespace
}  // namespace heatsink
