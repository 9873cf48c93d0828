// Dynamic hot replication, stage 2 (domain-aware admission, placement,
// cooldown and cross-domain warmup), through ReplicatedMaster on a ManualEnv:
// one test per item of the RFC's second-stage test plan (suite
// DynamicReplicationRfcStage2), plus the additions (suite
// DynamicReplicationStage2): the domain-aware knob off keeps stage 1, source
// choice by in-flight pressure, warmup limits and triggers, domain labels on
// metrics, same-domain-first reader selection.
//
// Layout used throughout: domain a = segments 1 (host a1) and 2 (host a2),
// domain b = segments 3 (b1) and 4 (b2); object "k" (1000 bytes) on segment 1.
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "core/replication/placement.h"
#include "core/replication/replica_selection.h"
#include "gtest/gtest.h"
#include "tests/core/replication/replication_test_util.h"

namespace heatsink {
namespace {

using testing::kMiB;
using testing::ReplicationHarness;
using testing::ReplicationTestKnobs;

ReplicationKnobs DomainKnobs() {
  ReplicationKnobs k = ReplicationTestKnobs();
  k.dynamic_replication_domain_aware = true;
  return k;
}

ReplicationKnobs WarmupKnobs() {
  ReplicationKnobs k = DomainKnobs();
  k.dynamic_replication_warmup_enabled = true;
  k.dynamic_replication_warmup_copies_in_flight_max = 1;
  k.dynamic_replication_warmup_bytes_per_second_max = 64 * 1024 * 1024;
  k.dynamic_replication_warmup_domain_poll_ms = 3'600'000;  // explicit requests only
  k.dynamic_replication_admission_qps_threshold = 100.0;    // no heat admissions
  return k;
}

// Warmup with the domain poll every second.
ReplicationKnobs PolledWarmupKnobs() {
  ReplicationKnobs k = WarmupKnobs();
  k.dynamic_replication_warmup_domain_poll_ms = 1'000;
  return k;
}

// Domain a with one store and object "o", known to the first poll (1 s),
// then read 5 times from a at 1.5 s.
void HeatObjectInDomainA(ReplicationHarness& h) {
  HS_ASSERT_OK(h.AddStore(1, kMiB, "a1", "a"));
  HS_ASSERT_OK(h.Put("o", 1000, {SegmentId(1)}));
  h.env().AdvanceBy(MsToNs(1'500));
  h.ReadTimes("o", 5, "a");
}

bool InDomainB(std::optional<SegmentId> s) { return s == SegmentId(3) || s == SegmentId(4); }

class DynamicReplicationRfcStage2 : public ::testing::Test {
 protected:
  explicit DynamicReplicationRfcStage2(const ReplicationKnobs& knobs = DomainKnobs()) : h_(knobs) {}

  void SetUp() override {
    HS_ASSERT_OK(h_.AddStore(1, kMiB, "a1", "a"));
    HS_ASSERT_OK(h_.AddStore(2, kMiB, "a2", "a"));
    HS_ASSERT_OK(h_.AddStore(3, kMiB, "b1", "b"));
    HS_ASSERT_OK(h_.AddStore(4, kMiB, "b2", "b"));
    absl::StatusOr<Version> v = h_.Put("k", 1000, {SegmentId(1)});
    HS_ASSERT_OK(v);
    version_ = *v;
  }
  void TearDown() override { HS_EXPECT_OK(h_.rm().CheckInvariants()); }

  ReplicaActionProposal DomainProposal(uint64_t id, const std::string& key, Version version,
                                       const std::string& requester, const std::string& target) {
    ReplicaActionProposal p = h_.Proposal(id, key, version, 1000);
    p.requester_domain = requester;
    p.target_domain = target;
    return p;
  }

  ReplicationHarness h_;
  Version version_ = 0;
};

TEST_F(DynamicReplicationRfcStage2, RequesterDomainAdmissionIsIndependentAcrossDomains) {
  h_.ReadTimes("k", 2, "a");
  h_.ReadTimes("k", 2, "b");
  h_.Settle();
  // Four reads of the object, but neither domain alone reached the hit count.
  EXPECT_EQ(h_.sink().size(), 0u);
  EXPECT_EQ(h_.dr().HeatCount(ObjectName{"", "k"}, "a"), 2);
  EXPECT_EQ(h_.dr().HeatCount(ObjectName{"", "k"}, "b"), 2);
  h_.ReadTimes("k", 1, "b");
  h_.Settle();
  ASSERT_EQ(h_.sink().size(), 1u);
  const DecisionRecord d = h_.sink().last();
  EXPECT_EQ(d.outcome, DecisionOutcome::kAccepted);
  EXPECT_EQ(d.requester_domain, std::optional<std::string>("b"));
  EXPECT_EQ(d.target_domain, std::optional<std::string>("b"));
  EXPECT_TRUE(InDomainB(d.target_segment));
  EXPECT_TRUE(h_.dr().FindPending(ObjectName{"", "k"}, "b").has_value());
  EXPECT_FALSE(h_.dr().FindPending(ObjectName{"", "k"}, "a").has_value());
  HS_ASSERT_OK(h_.RunDynamicCopy(1));
  // Domain a's own heat later gets a's own replica.
  h_.MakeHot("k", "a");
  const DecisionRecord da = h_.sink().last();
  EXPECT_EQ(da.outcome, DecisionOutcome::kAccepted);
  EXPECT_EQ(da.target_domain, std::optional<std::string>("a"));
  EXPECT_EQ(da.target_segment, SegmentId(2));
}

TEST_F(DynamicReplicationRfcStage2, TargetSelectionChoosesASegmentInTheRequesterOrTargetDomain) {
  HS_ASSERT_OK(h_.Put("j", 1000, {SegmentId(1)}));
  const Version vj = h_.master().GetObjectView(ObjectName{"", "j"})->version;
  h_.ReadTimes("k", 3, "b");
  h_.ReadTimes("j", 3, "a");
  // Requester domain only: the replica goes to the requester's domain.
  absl::StatusOr<ReplicaActionLease> to_requester =
      h_.rm().SubmitReplicaActionProposal(DomainProposal(1, "k", version_, "b", ""));
  HS_ASSERT_OK(to_requester);
  EXPECT_TRUE(InDomainB(to_requester->target_segment));
  EXPECT_EQ(to_requester->target_domain, "b");
  // An explicit target domain wins (hot from a, copied into b).
  absl::StatusOr<ReplicaActionLease> to_target =
      h_.rm().SubmitReplicaActionProposal(DomainProposal(2, "j", vj, "a", "b"));
  HS_ASSERT_OK(to_target);
  EXPECT_TRUE(InDomainB(to_target->target_segment));
  EXPECT_EQ(h_.sink().last().requester_domain, std::optional<std::string>("a"));
  EXPECT_EQ(h_.sink().last().target_domain, std::optional<std::string>("b"));
}

TEST_F(DynamicReplicationRfcStage2,
       InvalidPreferredTargetOutsideTheTargetDomainFallsBackToAnotherValidTarget) {
  h_.ReadTimes("k", 3, "b");
  ReplicaActionProposal p = DomainProposal(1, "k", version_, "b", "b");
  p.preferred_target_segment = SegmentId(2);  // valid, but in domain a
  absl::StatusOr<ReplicaActionLease> lease = h_.rm().SubmitReplicaActionProposal(p);
  HS_ASSERT_OK(lease);
  EXPECT_TRUE(InDomainB(lease->target_segment));
  // A valid preferred target inside the domain is honoured.
  HS_ASSERT_OK(h_.Put("j", 1000, {SegmentId(1)}));
  const Version vj = h_.master().GetObjectView(ObjectName{"", "j"})->version;
  h_.ReadTimes("j", 3, "b");
  ReplicaActionProposal q = DomainProposal(2, "j", vj, "b", "b");
  q.preferred_target_segment = SegmentId(4);
  absl::StatusOr<ReplicaActionLease> l = h_.rm().SubmitReplicaActionProposal(q);
  HS_ASSERT_OK(l);
  EXPECT_EQ(l->target_segment, SegmentId(4));
}

TEST_F(DynamicReplicationRfcStage2, ProposalIsRejectedWhenTheTargetDomainHasNoValidSegment) {
  h_.ReadTimes("k", 3, "c");
  absl::StatusOr<ReplicaActionLease> r =
      h_.rm().SubmitReplicaActionProposal(DomainProposal(1, "k", version_, "c", ""));
  HS_EXPECT_REASON(r, RejectReason::kNoTargetInDomain);
  HS_EXPECT_CODE(r, kResourceExhausted);
  // The heat path says the same for the same domain.
  h_.Settle();
  EXPECT_EQ(h_.sink().last().reason, RejectReason::kNoTargetInDomain);
  EXPECT_EQ(h_.sink().last().target_domain, std::optional<std::string>("c"));
  EXPECT_TRUE(h_.dr().PendingActions().empty());
}

TEST_F(DynamicReplicationRfcStage2,
       ExistingReadableReplicaInTheTargetDomainSuppressesCrossDomainCopy) {
  HS_ASSERT_OK(h_.Put("m", 1000, {SegmentId(1), SegmentId(3)}));  // in a and in b
  const Version vm = h_.master().GetObjectView(ObjectName{"", "m"})->version;
  h_.ReadTimes("m", 3, "a");
  absl::StatusOr<ReplicaActionLease> r =
      h_.rm().SubmitReplicaActionProposal(DomainProposal(1, "m", vm, "a", "b"));
  HS_EXPECT_REASON(r, RejectReason::kTargetDomainHasReplica);
  HS_EXPECT_CODE(r, kAlreadyExists);
  EXPECT_EQ(h_.SyncMetrics().Value("dynamic_replication_target_domain_suppressions_total",
                                   {{"target_domain", "b"}}),
            1);
  EXPECT_EQ(h_.master().Stats().copy_tasks_created_total, 0);
}

TEST_F(DynamicReplicationRfcStage2, SameDomainFanoutStillWorksAfterATargetDomainReplicaExists) {
  HS_ASSERT_OK(h_.Put("m", 1000, {SegmentId(1), SegmentId(3)}));
  h_.MakeHot("m", "b");
  const DecisionRecord d = h_.sink().last();
  ASSERT_EQ(d.outcome, DecisionOutcome::kAccepted);
  EXPECT_EQ(d.source_segment, SegmentId(3));  // fanout from inside b
  EXPECT_EQ(d.target_segment, SegmentId(4));
  HS_ASSERT_OK(h_.RunDynamicCopy(3));
  EXPECT_EQ(h_.SyncMetrics().Value("dynamic_replication_same_domain_copies_total"), 1);
  EXPECT_EQ(h_.SyncMetrics().Value("dynamic_replication_cross_domain_copies_total"), 0);
}

TEST_F(DynamicReplicationRfcStage2, EvictionCooldownIsScopedToTheEvictedDomain) {
  HS_ASSERT_OK(h_.AddStore(5, kMiB, "c1", "c"));
  h_.MakeHot("k", "b");
  HS_ASSERT_OK(h_.RunDynamicCopy(1));  // dynamic replica in b
  h_.env().AdvanceBy(SecToNs(2));      // read leases over
  ASSERT_GT(h_.master().Evict(UINT64_MAX / 2), 0u);
  EXPECT_TRUE(h_.dr().RecreateCooldownActive(ObjectName{"", "k"}, "b"));
  EXPECT_FALSE(h_.dr().RecreateCooldownActive(ObjectName{"", "k"}, "a"));
  EXPECT_FALSE(h_.dr().RecreateCooldownActive(ObjectName{"", "k"}, "c"));
  HS_ASSERT_OK(h_.Put("k", 1000, {SegmentId(1)}));
  h_.env().AdvanceBy(SecToNs(4));  // t = 6 s: b's admission cooldown is over
  // Domain c, which never had a replica, gets one.
  h_.MakeHot("k", "c");
  EXPECT_EQ(h_.sink().last().outcome, DecisionOutcome::kAccepted);
  EXPECT_EQ(h_.sink().last().target_segment, SegmentId(5));
  HS_ASSERT_OK(h_.RunDynamicCopy(1));
  // Domain b, whose dynamic replica was evicted, waits out its cooldown.
  h_.MakeHot("k", "b");
  EXPECT_EQ(h_.sink().last().reason, RejectReason::kRecreateCooldown);
  EXPECT_EQ(h_.sink().last().target_domain, std::optional<std::string>("b"));
}

TEST_F(DynamicReplicationRfcStage2, ConcurrentProposalsForTheSameKeyAndDomainAreSingleFlight) {
  h_.ReadTimes("k", 3, "b");
  std::atomic<int> accepted{0};
  std::atomic<int> pending{0};
  std::vector<std::thread> threads;
  for (uint64_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t]() {
      absl::StatusOr<ReplicaActionLease> r =
          h_.rm().SubmitReplicaActionProposal(DomainProposal(100 + t, "k", version_, "b", "b"));
      if (r.ok()) {
        accepted.fetch_add(1);
      } else if (RejectReasonOf(r.status()) == RejectReason::kPending) {
        pending.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(accepted.load(), 1);
  EXPECT_EQ(pending.load(), 3);
  EXPECT_EQ(h_.master().Stats().copy_tasks_created_total, 1);
  EXPECT_EQ(h_.dr().PendingActions().size(), 1u);
}

class DynamicReplicationRfcStage2Warmup : public DynamicReplicationRfcStage2 {
 protected:
  DynamicReplicationRfcStage2Warmup() : DynamicReplicationRfcStage2(WarmupKnobs()) {}
};

TEST_F(DynamicReplicationRfcStage2Warmup,
       WarmupSkipsObjectsThatAlreadyExistInTheTargetDomainAndRespectsCopyLimits) {
  HS_ASSERT_OK(h_.AddStore(5, kMiB, "c1", "c"));
  HS_ASSERT_OK(h_.AddStore(6, kMiB, "c2", "c"));
  HS_ASSERT_OK(h_.Put("o0", 1000, {SegmentId(1)}));
  HS_ASSERT_OK(h_.Put("o1", 1000, {SegmentId(1), SegmentId(5)}));  // already in c
  HS_ASSERT_OK(h_.Put("o2", 1000, {SegmentId(1)}));
  h_.ReadTimes("o0", 6, "a");
  h_.ReadTimes("o1", 5, "a");
  h_.ReadTimes("o2", 4, "a");
  absl::StatusOr<WarmupRequestResult> w = h_.rm().RequestWarmup("c");
  HS_ASSERT_OK(w);
  EXPECT_EQ(w->domain, "c");
  auto warmup_decisions = [&]() {
    std::vector<DecisionRecord> out;
    for (const DecisionRecord& d : h_.sink().records()) {
      if (d.kind == DecisionKind::kWarmup) out.push_back(d);
    }
    return out;
  };
  // Hottest first; one copy in flight at most.
  std::vector<DecisionRecord> d = warmup_decisions();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].key, "o0");
  EXPECT_EQ(d[0].outcome, DecisionOutcome::kAccepted);
  EXPECT_EQ(d[0].target_domain, std::optional<std::string>("c"));
  EXPECT_EQ(h_.dr().PendingActions().size(), 1u);
  EXPECT_TRUE(h_.dr().PendingActions()[0].lease.warmup);
  HS_ASSERT_OK(h_.RunDynamicCopy(1));
  // o1 is skipped (already in c), o2 starts; still one in flight.
  d = warmup_decisions();
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[1].key, "o1");
  EXPECT_EQ(d[1].reason, RejectReason::kAlreadyPresent);
  EXPECT_EQ(d[2].key, "o2");
  EXPECT_EQ(d[2].outcome, DecisionOutcome::kAccepted);
  EXPECT_EQ(h_.dr().PendingActions().size(), 1u);
  HS_ASSERT_OK(h_.RunDynamicCopy(1));
  // Then k (read by nobody) is the last candidate only if it had heat: it
  // had none, so the job is done.
  d = warmup_decisions();
  EXPECT_EQ(d.size(), 3u);
  EXPECT_EQ(
      h_.SyncMetrics().Value("dynamic_replication_warmup_copies_total", {{"target_domain", "c"}}),
      2);
  EXPECT_EQ(h_.dr().Stats().warmup_copies, 2);
  // A second warmup of c finds everything present.
  HS_ASSERT_OK(h_.rm().RequestWarmup("c"));
  d = warmup_decisions();
  ASSERT_EQ(d.size(), 6u);
  for (size_t i = 3; i < 6; ++i) EXPECT_EQ(d[i].reason, RejectReason::kAlreadyPresent) << d[i].key;
}

// --- Beyond the RFC's list (issue 4) -----------------------------------------

class DynamicReplicationStage2 : public DynamicReplicationRfcStage2 {};

TEST_F(DynamicReplicationStage2, DomainAwareKnobOffKeepsStageOneBehaviour) {
  ReplicationHarness h;  // domain-aware off
  HS_ASSERT_OK(h.AddStore(1, kMiB, "a1", "a"));
  HS_ASSERT_OK(h.AddStore(3, kMiB, "b1", "b"));
  absl::StatusOr<Version> v = h.Put("k", 1000, {SegmentId(1)});
  HS_ASSERT_OK(v);
  // Heat is keyed by tenant + key only: reads from two domains add up.
  h.ReadTimes("k", 1, "a");
  h.ReadTimes("k", 2, "b");
  h.dr().DrainReads();
  EXPECT_EQ(h.dr().HeatCount(ObjectName{"", "k"}), 3);
  h.Settle();
  const DecisionRecord d = h.sink().last();
  EXPECT_EQ(d.outcome, DecisionOutcome::kAccepted);
  EXPECT_FALSE(d.requester_domain.has_value());
  EXPECT_FALSE(d.target_domain.has_value());
  EXPECT_EQ(d.target_segment, SegmentId(3));
  ReplicaActionProposal p = h.Proposal(1, "k", *v, 1000);
  p.requester_domain = "b";
  HS_EXPECT_REASON(h.rm().SubmitReplicaActionProposal(p), RejectReason::kDomainHintUnsupported);
  HS_EXPECT_OK(h.rm().CheckInvariants());
}

TEST_F(DynamicReplicationStage2, SourceChoiceFollowsInFlightPressureAtEqualDomainCost) {
  HS_ASSERT_OK(h_.Put("m", 1000, {SegmentId(1), SegmentId(2)}));  // two sources in a
  const ObjectName m{"default", "m"};
  const SegmentId by_hash = PlacementTieHash(m, SegmentId(1)) < PlacementTieHash(m, SegmentId(2))
                                ? SegmentId(1)
                                : SegmentId(2);
  const SegmentId other = by_hash == SegmentId(1) ? SegmentId(2) : SegmentId(1);
  // Load the source the tie-break would pick with an ordinary copy task.
  HS_ASSERT_OK(h_.Put("busy", 1000, {by_hash}));
  HS_ASSERT_OK(
      h_.master().CreateCopyTask(CopyTaskRequest{ObjectName{"", "busy"}, SegmentId(4), by_hash}));
  EXPECT_EQ(h_.master().GetSegmentLoad(by_hash)->copy_tasks_as_source, 1);
  h_.MakeHot("m", "b");
  EXPECT_EQ(h_.sink().last().outcome, DecisionOutcome::kAccepted);
  EXPECT_EQ(h_.sink().last().source_segment, other);
}

TEST_F(DynamicReplicationStage2, WithoutPressureTheStableTieBreakPicksTheSource) {
  HS_ASSERT_OK(h_.Put("m", 1000, {SegmentId(1), SegmentId(2)}));
  const ObjectName m{"default", "m"};
  const SegmentId by_hash = PlacementTieHash(m, SegmentId(1)) < PlacementTieHash(m, SegmentId(2))
                                ? SegmentId(1)
                                : SegmentId(2);
  h_.MakeHot("m", "b");
  EXPECT_EQ(h_.sink().last().source_segment, by_hash);
}

TEST_F(DynamicReplicationStage2, DomainLabelsOnMetrics) {
  h_.MakeHot("k", "b");
  EXPECT_EQ(h_.SyncMetrics().Value("dynamic_replication_proposals_total",
                                   {{"requester_domain", "b"}, {"target_domain", "b"}}),
            1);
  const std::vector<Task> tasks = h_.Fetch(1);
  ASSERT_EQ(tasks.size(), 1u);
  const CopyTaskFence fence = ReplicationHarness::FenceOf(tasks[0]);
  HS_ASSERT_OK(h_.rm().DynamicReplicaCopyStart(ClientId(1), fence));
  EXPECT_EQ(h_.SyncMetrics().Value("dynamic_replication_cross_domain_copies_in_flight"), 1);
  HS_ASSERT_OK(h_.rm().DynamicReplicaCopyEnd(ClientId(1), fence));
  EXPECT_EQ(h_.SyncMetrics().Value("dynamic_replication_cross_domain_copies_in_flight"), 0);
  EXPECT_EQ(h_.SyncMetrics().Value("dynamic_replication_cross_domain_copies_total"), 1);
  EXPECT_EQ(h_.SyncMetrics().Value("dynamic_replication_cross_domain_copy_bytes_total"), 1000);
  // A suppression is labelled with its target domain.
  HS_ASSERT_OK(h_.master().MarkTaskComplete(ClientId(1), {fence.task_id, true, ""}));
  h_.ReadTimes("k", 3, "a");
  HS_EXPECT_REASON(h_.rm().SubmitReplicaActionProposal(DomainProposal(9, "k", version_, "a", "b")),
                   RejectReason::kTargetDomainHasReplica);
  EXPECT_EQ(h_.SyncMetrics().Value("dynamic_replication_target_domain_suppressions_total",
                                   {{"target_domain", "b"}}),
            1);
  EXPECT_EQ(h_.SyncMetrics().Value("dynamic_replication_proposals_total",
                                   {{"requester_domain", "a"}, {"target_domain", "b"}}),
            1);
  // Labels are domains and reasons only: no key appears in the exposition.
  const std::string text = RenderPrometheusText(h_.SyncMetrics().Snapshot());
  EXPECT_EQ(text.find("\"k\""), std::string::npos);
  EXPECT_EQ(text.find("key="), std::string::npos);
  EXPECT_NE(text.find("requester_domain=\"b\""), std::string::npos);
}

TEST_F(DynamicReplicationStage2, ReaderSpreadSelectionPrefersSameDomainReplicas) {
  h_.MakeHot("k", "b");
  HS_ASSERT_OK(h_.RunDynamicCopy(1));
  absl::StatusOr<GetReplicaListResponse> r = h_.Read("k", "b");
  HS_ASSERT_OK(r);
  ASSERT_EQ(r->replicas.size(), 2u);
  std::vector<ReadableReplica> readable;
  for (const ReplicaDescriptor& d : r->replicas) {
    readable.push_back(ReadableReplica{d.segment_id, d.location->host, d.location->domain, true});
  }
  for (uint64_t reader = 1; reader <= 16; ++reader) {
    const ReaderIdentity in_b{ClientId(500 + reader), "rb" + std::to_string(reader), "b"};
    const ReaderIdentity in_a{ClientId(600 + reader), "ra" + std::to_string(reader), "a"};
    EXPECT_TRUE(InDomainB(readable[*SelectReplicaForRead(ReplicaSelectionPolicy::kSpread, in_b,
                                                         ObjectName{"", "k"}, readable, 3)]
                              .segment));
    EXPECT_EQ(readable[*SelectReplicaForRead(ReplicaSelectionPolicy::kSpread, in_a,
                                             ObjectName{"", "k"}, readable, 3)]
                  .segment,
              SegmentId(1));
  }
}

class DynamicReplicationStage2Warmup : public DynamicReplicationRfcStage2 {
 protected:
  DynamicReplicationStage2Warmup() : DynamicReplicationRfcStage2(WarmupKnobs()) {}
};

TEST_F(DynamicReplicationStage2Warmup, WarmupRespectsItsByteBudgetPerSecond) {
  // Overridden budget: 1.5 objects per second, several copies may fly.
  ReplicationKnobs knobs = WarmupKnobs();
  knobs.dynamic_replication_warmup_copies_in_flight_max = 4;
  knobs.dynamic_replication_warmup_bytes_per_second_max = 1500;
  knobs.dynamic_replication_lease_ttl_ms = 10'000;
  ReplicationHarness h(knobs);
  HS_ASSERT_OK(h.AddStore(1, kMiB, "a1", "a"));
  HS_ASSERT_OK(h.AddStore(5, kMiB, "c1", "c"));
  for (int i = 0; i < 3; ++i) {
    const std::string key = "o" + std::to_string(i);
    HS_ASSERT_OK(h.Put(key, 1000, {SegmentId(1)}));
    h.ReadTimes(key, 5 - i, "a");
  }
  HS_ASSERT_OK(h.rm().RequestWarmup("c"));
  h.env().AdvanceBy(SecToNs(3));
  std::vector<TimeNs> times;
  for (const DecisionRecord& d : h.sink().records()) {
    if (d.kind == DecisionKind::kWarmup) {
      EXPECT_EQ(d.outcome, DecisionOutcome::kAccepted) << d.key;
      times.push_back(d.t_ns);
    }
  }
  EXPECT_EQ(times, (std::vector<TimeNs>{0, SecToNs(1), SecToNs(2)}));
  EXPECT_EQ(h.dr().PendingActions().size(), 3u);
  HS_EXPECT_OK(h.rm().CheckInvariants());
}

TEST_F(DynamicReplicationStage2Warmup, ModeOffStopsTheDomainPollAndModeOnStartsItAgain) {
  ReplicationHarness h(PolledWarmupKnobs());
  ASSERT_NO_FATAL_FAILURE(HeatObjectInDomainA(h));
  h.rm().SetDynamicReplicationMode(DynamicReplicationMode::kOff);
  HS_EXPECT_CODE(h.rm().RequestWarmup("a"), kFailedPrecondition);
  HS_ASSERT_OK(h.AddStore(5, kMiB, "c1", "c"));
  h.env().AdvanceBy(SecToNs(5));  // polls would have seen domain c
  EXPECT_EQ(h.sink().size(), 0u);
  // Back on: the next poll (1 s later) sees c and warms it from the heat
  // recorded from then on (the reads before have left the window).
  h.rm().SetDynamicReplicationMode(DynamicReplicationMode::kEnforce);
  h.env().AdvanceBy(MsToNs(600));
  h.ReadTimes("o", 5, "a");  // inside the 1 s window at the poll
  h.env().AdvanceBy(MsToNs(399));
  EXPECT_EQ(h.sink().size(), 0u);
  h.env().AdvanceBy(MsToNs(1));
  ASSERT_EQ(h.sink().size(), 1u);
  EXPECT_EQ(h.sink().last().kind, DecisionKind::kWarmup);
  EXPECT_EQ(h.sink().last().key, "o");
  EXPECT_EQ(h.sink().last().target_domain, std::optional<std::string>("c"));
  EXPECT_EQ(h.sink().last().outcome, DecisionOutcome::kAccepted);
}

TEST_F(DynamicReplicationStage2Warmup, WarmupStartsWhenADomainGainsItsFirstSegment) {
  ReplicationHarness h(PolledWarmupKnobs());
  ASSERT_NO_FATAL_FAILURE(HeatObjectInDomainA(h));
  HS_ASSERT_OK(h.AddStore(5, kMiB, "c1", "c"));
  h.env().AdvanceBy(MsToNs(500));  // the poll at 2 s sees domain c
  std::vector<DecisionRecord> c;
  for (const DecisionRecord& d : h.sink().records()) {
    if (d.kind == DecisionKind::kWarmup && d.target_domain == std::optional<std::string>("c")) {
      c.push_back(d);
    }
  }
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].key, "o");
  EXPECT_EQ(c[0].outcome, DecisionOutcome::kAccepted);
  EXPECT_EQ(c[0].target_segment, SegmentId(5));
  // Warmup off (the default): a new domain triggers nothing.
  ReplicationHarness off(DomainKnobs());
  HS_ASSERT_OK(off.AddStore(1, kMiB, "a1", "a"));
  HS_ASSERT_OK(off.Put("o", 1000, {SegmentId(1)}));
  off.ReadTimes("o", 2, "a");
  HS_ASSERT_OK(off.AddStore(5, kMiB, "c1", "c"));
  off.env().AdvanceBy(SecToNs(3));
  EXPECT_EQ(off.sink().size(), 0u);
  HS_EXPECT_CODE(off.rm().RequestWarmup("c"), kFailedPrecondition);
}

}  // namespace
}  // namespace heatsink
