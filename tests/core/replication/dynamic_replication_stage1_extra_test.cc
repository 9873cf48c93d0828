// Dynamic hot replication, stage 1, beyond the RFC's test plan (the plan's
// items are in dynamic_replication_stage1_test.cc): window entry limit and a
// hot key under a full table, reads by heat handle, mode off, metrics per
// reason, the admission cooldown, both reader selection policies, decision
// records and determinism. Time only moves when a test moves it; nothing
// sleeps.
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/replication/heat_read_buffer.h"
#include "core/replication/replica_selection.h"
#include "gtest/gtest.h"
#include "tests/core/replication/replication_test_util.h"

namespace heatsink {
namespace {

using testing::kMiB;
using testing::ReplicationHarness;
using testing::ReplicationTestKnobs;

class DynamicReplicationStage1 : public testing::OneObjectTwoStores {
 protected:
  // A third store (neither `lease`'s source nor its target) reports a
  // complete replica of "k" at its version, as a store reporting late after
  // a master restart does. REQUIRES: AddStore(3, ...).
  void ReportLateReplicaOfK(const ReplicaActionLease& lease) {
    const uint64_t reporter = lease.target_segment == SegmentId(2) ? 3 : 2;
    ManifestEntry late;
    late.name = ObjectName{"", "k"};
    late.version = version_;
    late.segment_id = SegmentId(reporter);
    late.offset = 0;
    late.size_bytes = 1000;
    late.complete = true;
    ReportManifestRequest report;
    report.entries = {late};
    report.last = true;
    absl::StatusOr<ReportManifestResponse> reported =
        h_.master().ReportManifest(ClientId(reporter), report);
    HS_ASSERT_OK(reported);
    ASSERT_EQ(reported->results.size(), 1u);
    HS_ASSERT_OK(reported->results[0]);
  }
  // "k" ends with its put replica and the late one, no dynamic copy.
  void ExpectKHoldsTwoOrdinaryReplicas() {
    absl::StatusOr<ObjectView> object = h_.master().GetObjectView(ObjectName{"", "k"});
    HS_ASSERT_OK(object);
    ASSERT_EQ(object->replicas.size(), 2u);
    for (const ReplicaDescriptor& d : object->replicas) {
      EXPECT_FALSE(d.dynamic);
      EXPECT_EQ(d.status, ReplicaStatus::kComplete);
    }
  }
};

TEST_F(DynamicReplicationStage1, WindowEntryLimitAdmitsAHotKeyWhileTheTableIsFullOfColdKeys) {
  ReplicationKnobs knobs = ReplicationTestKnobs();
  knobs.dynamic_replication_heat_window_entries_max = 16;
  ReplicationHarness h(knobs);
  HS_ASSERT_OK(h.AddStore(1, 16 * kMiB, "h1"));
  HS_ASSERT_OK(h.AddStore(2, 16 * kMiB, "h2"));
  for (int i = 0; i < 200; ++i) HS_ASSERT_OK(h.Put("cold" + std::to_string(i), 16, {SegmentId(1)}));
  HS_ASSERT_OK(h.Put("hot", 16, {SegmentId(1)}));
  for (int i = 0; i < 200; ++i) HS_ASSERT_OK(h.Read("cold" + std::to_string(i)));
  EXPECT_EQ(h.dr().DrainReads(), 200);
  EXPECT_EQ(h.dr().heat_window().stats().tracked_keys, 16);
  // Every tracked entry is cold (one read, below the hit count): the hot
  // key replaces one on its first read and crosses on its third.
  for (int i = 0; i < 3; ++i) {
    HS_ASSERT_OK(h.Read("hot"));
    h.env().AdvanceBy(MsToNs(100));
  }
  h.Settle();
  ASSERT_GE(h.sink().size(), 1u);
  EXPECT_EQ(h.sink().last().key, "hot");
  EXPECT_EQ(h.sink().last().outcome, DecisionOutcome::kAccepted);
  EXPECT_LE(h.dr().heat_window().stats().tracked_keys, 16);
}

// Reads reach the heat window through the read buffer: nothing is counted
// until a drain, the drain applies each read once, and the drain timer does
// it by itself within one drain interval.
TEST_F(DynamicReplicationStage1, ReadsReachTheWindowThroughTheReadBufferAtTheirDrain) {
  ReplicationKnobs knobs = ReplicationTestKnobs();
  knobs.dynamic_replication_admission_qps_threshold = 100.0;  // nothing crosses
  ReplicationHarness h(knobs);
  HS_ASSERT_OK(h.AddStore(1, kMiB, "h1"));
  HS_ASSERT_OK(h.Put("k", 1000, {SegmentId(1)}));
  HS_ASSERT_OK(h.Put("j", 1000, {SegmentId(1)}));
  h.ReadTimes("k", 5);
  h.ReadTimes("j", 2);
  EXPECT_EQ(h.dr().heat_window().stats().records, 0);
  EXPECT_TRUE(h.dr().read_buffer().HasUndrained());
  EXPECT_EQ(h.dr().DrainReads(), 7);
  EXPECT_EQ(h.dr().DrainReads(), 0);
  const HeatWindowStats s = h.dr().heat_window().stats();
  EXPECT_EQ(s.records, 7);
  EXPECT_EQ(s.inserts, 2);
  const TimeNs now = h.now();
  EXPECT_EQ(h.dr().heat_window().CountInWindow(now, HeatKeyView{kDefaultTenant, "k", ""}), 5);
  EXPECT_EQ(h.dr().heat_window().CountInWindow(now, HeatKeyView{kDefaultTenant, "j", ""}), 2);

  // The timer: armed by the first read after a drain, due one interval later.
  const DurationNs interval = knobs.heat_drain_interval_ns();
  h.ReadTimes("k", 1);
  h.env().AdvanceBy(interval - 1);
  EXPECT_EQ(h.dr().heat_window().stats().records, 7);
  h.env().AdvanceBy(1);
  EXPECT_EQ(h.dr().heat_window().stats().records, 8);
  EXPECT_FALSE(h.dr().read_buffer().HasUndrained());
  EXPECT_EQ(h.dr().heat_window().CountInWindow(h.now(), HeatKeyView{kDefaultTenant, "k", ""}),
            6);
  EXPECT_EQ(h.SyncMetrics().Value("dynamic_replication_heat_reads_dropped_total"), 0);
}

// A read never waits for the drain: a full read buffer drops the read and
// counts it, the read returns as usual, a half-full buffer asks for a drain
// at once (not one interval later), and a key that stays hot through the
// overflow is still admitted once its reads get in again.
TEST_F(DynamicReplicationStage1, AFullReadBufferDropsReadsWithoutDelayingThemAndHotKeysStillCross) {
  ReplicationKnobs knobs = ReplicationTestKnobs();
  knobs.dynamic_replication_heat_read_buffer_records = 16;  // the minimum
  knobs.dynamic_replication_heat_window_entries_max = 256;
  ReplicationHarness h(knobs);
  HS_ASSERT_OK(h.AddStore(1, 16 * kMiB, "h1"));
  HS_ASSERT_OK(h.AddStore(2, 16 * kMiB, "h2"));
  // The stripe is 16 x 64 bytes = 64 units; a read of tenant "default" and
  // key "coldNN" takes 2 units (16 bytes of header, 13 of key), so 32 cold
  // reads fill it.
  constexpr int kFill = 32;
  constexpr int kCold = 60;
  ASSERT_EQ(HeatReadBuffer::UnitsFor(HeatKeyView{kDefaultTenant, "cold10", ""}), 2);
  for (int i = 0; i < kCold; ++i) {
    HS_ASSERT_OK(h.Put("cold" + std::to_string(i), 16, {SegmentId(1)}));
  }
  HS_ASSERT_OK(h.Put("hot", 16, {SegmentId(1)}));
  // The cold reads fill this thread's stripe; every further read is dropped:
  // each still returns its replicas, and nothing ran on the executor.
  for (int i = 0; i < kFill; ++i) HS_ASSERT_OK(h.Read("cold" + std::to_string(i)));
  for (int i = 0; i < 5; ++i) {
    absl::StatusOr<GetReplicaListResponse> r = h.Read("hot");
    HS_ASSERT_OK(r);
    EXPECT_EQ(r->replicas.size(), 1u);
  }
  for (int i = kFill; i < kCold; ++i) HS_ASSERT_OK(h.Read("cold" + std::to_string(i)));
  EXPECT_EQ(h.dr().heat_window().stats().records, 0);
  constexpr int kDropped = 5 + kCold - kFill;
  EXPECT_EQ(h.SyncMetrics().Value("dynamic_replication_heat_reads_dropped_total"), kDropped);
  // The high-water read posted a drain due now: running what is due applies
  // the buffered reads, without waiting for the drain interval.
  h.env().RunUntilIdle();
  EXPECT_EQ(h.dr().heat_window().stats().records, kFill);
  EXPECT_EQ(h.dr().heat_window().CountInWindow(h.now(), HeatKeyView{kDefaultTenant, "hot", ""}),
            0);
  EXPECT_EQ(h.sink().size(), 0u);
  // The key stays hot: its next reads get in and it crosses.
  h.env().AdvanceBy(MsToNs(100));
  h.ReadTimes("hot", 3);
  h.env().AdvanceBy(knobs.heat_drain_interval_ns());  // the drain timer, then admission
  ASSERT_EQ(h.sink().size(), 1u);
  EXPECT_EQ(h.sink().last().key, "hot");
  EXPECT_EQ(h.sink().last().outcome, DecisionOutcome::kAccepted);
  EXPECT_EQ(h.SyncMetrics().Value("dynamic_replication_heat_reads_dropped_total"), kDropped);
  HS_EXPECT_OK(h.rm().CheckInvariants());
}

TEST_F(DynamicReplicationStage1, ModeOffRecordsNothing) {
  ReplicationHarness h(ReplicationTestKnobs(DynamicReplicationMode::kOff));
  HS_ASSERT_OK(h.AddTwoStores());
  absl::StatusOr<Version> v = h.Put("k", 1000, {SegmentId(1)});
  h.ReadTimes("k", 20);
  h.Settle();
  EXPECT_EQ(h.dr().heat_window().stats().records, 0);
  EXPECT_EQ(h.dr().trigger_queue().stats().enqueued, 0);
  EXPECT_EQ(h.SyncMetrics().Value("dynamic_replication_hot_read_observations_total"), 0);
  EXPECT_EQ(h.sink().size(), 0u);
  absl::StatusOr<ReplicaActionLease> r =
      h.rm().SubmitReplicaActionProposal(h.Proposal(1, "k", *v, 1000));
  HS_EXPECT_REASON(r, RejectReason::kModeOff);
  HS_EXPECT_CODE(r, kFailedPrecondition);
  EXPECT_EQ(h.master().Stats().copy_tasks_created_total, 0);
}

TEST_F(DynamicReplicationStage1, MetricsAreCountedPerReason) {
  h_.ReadTimes("k", 1);
  HS_EXPECT_REASON(h_.rm().SubmitReplicaActionProposal(h_.Proposal(1, "k", version_, 1000)),
                   RejectReason::kBelowThreshold);
  ReplicaActionProposal hinted = h_.Proposal(2, "k", version_, 1000);
  hinted.target_domain = "x";
  HS_EXPECT_REASON(h_.rm().SubmitReplicaActionProposal(hinted),
                   RejectReason::kDomainHintUnsupported);
  HS_EXPECT_REASON(h_.rm().SubmitReplicaActionProposal(h_.Proposal(3, "missing", 1, 1)),
                   RejectReason::kBelowThreshold);
  h_.ReadTimes("k", 2);  // crosses; the worker has not run yet
  HS_EXPECT_OK(h_.rm().SubmitReplicaActionProposal(h_.Proposal(4, "k", version_, 1000)));
  h_.Settle();  // the heat trigger now finds the proposal's action
  EXPECT_EQ(h_.sink().last().reason, RejectReason::kPending);
  EXPECT_EQ(h_.Rejected(RejectReason::kBelowThreshold), 2);
  EXPECT_EQ(h_.Rejected(RejectReason::kDomainHintUnsupported), 1);
  EXPECT_EQ(h_.Rejected(RejectReason::kPending), 1);
  EXPECT_EQ(h_.Rejected(RejectReason::kCooldown), 0);
  EXPECT_EQ(h_.SyncMetrics().Value("dynamic_replication_admissions_accepted_total"), 1);
  EXPECT_EQ(h_.SyncMetrics().Value("dynamic_replication_triggers_enqueued_total"), 1);
  // The admission cooldown has its own reason.
  HS_ASSERT_OK(h_.RunDynamicCopy(1));
  HS_ASSERT_OK(h_.Put("j", 1000, {SegmentId(1)}));
  const Version vj = h_.master().GetObjectView(ObjectName{"", "j"})->version;
  h_.ReadTimes("j", 3);
  HS_ASSERT_OK(h_.rm().SubmitReplicaActionProposal(h_.Proposal(5, "j", vj, 1000)));
  h_.Settle();
  EXPECT_EQ(h_.Rejected(RejectReason::kPending), 2);
  // Every decision went to the sink and to the metrics, one each.
  EXPECT_EQ(h_.dr().Stats().decisions, static_cast<int64_t>(h_.sink().size()));
}

TEST_F(DynamicReplicationStage1, AdmissionCooldownRejectsARepeatWithItsOwnReason) {
  Granted();
  HS_ASSERT_OK(h_.RunDynamicCopy(1));
  HS_ASSERT_OK(h_.AddStore(3, kMiB, "h3"));
  // Capped objects record no heat; lift the cap by dropping the dynamic
  // replica's segment, then heat again inside the admission cooldown.
  HS_ASSERT_OK(h_.master().UnmountSegment(ClientId(2), SegmentId(2)));
  h_.env().AdvanceBy(SecToNs(2));  // the first heat episode slides out
  h_.MakeHot("k");
  EXPECT_EQ(h_.sink().last().reason, RejectReason::kCooldown);
  EXPECT_EQ(h_.Rejected(RejectReason::kCooldown), 1);
  EXPECT_TRUE(h_.dr().AdmissionCooldownActive(ObjectName{"", "k"}));
  h_.env().AdvanceBy(SecToNs(3));  // t = 5 s: the cooldown ends (now >= deadline)
  EXPECT_FALSE(h_.dr().AdmissionCooldownActive(ObjectName{"", "k"}));
  h_.MakeHot("k");
  EXPECT_EQ(h_.sink().last().outcome, DecisionOutcome::kAccepted);
}

TEST_F(DynamicReplicationStage1, BothReaderSelectionPoliciesOnADynamicallyReplicatedObject) {
  HS_ASSERT_OK(h_.AddStore(3, kMiB, "h3"));
  Granted();
  HS_ASSERT_OK(h_.RunDynamicCopy(1));
  absl::StatusOr<GetReplicaListResponse> r = h_.Read("k");
  HS_ASSERT_OK(r);
  ASSERT_EQ(r->replicas.size(), 2u);
  std::vector<ReadableReplica> readable;
  for (const ReplicaDescriptor& d : r->replicas) {
    readable.push_back(ReadableReplica{d.segment_id, d.location->host, d.location->domain, true});
  }
  std::set<SegmentId> first, spread;
  for (uint64_t reader = 1; reader <= 64; ++reader) {
    const ReaderIdentity who{ClientId(1000 + reader), "reader" + std::to_string(reader), ""};
    first.insert(readable[*SelectReplicaForRead(ReplicaSelectionPolicy::kFirst, who,
                                                ObjectName{"", "k"}, readable, 1)]
                     .segment);
    spread.insert(readable[*SelectReplicaForRead(ReplicaSelectionPolicy::kSpread, who,
                                                 ObjectName{"", "k"}, readable, 1)]
                      .segment);
  }
  EXPECT_EQ(first, (std::set<SegmentId>{SegmentId(1)}));  // extra replica unused remotely
  EXPECT_EQ(spread.size(), 2u);                           // load spread over both
  // A reader on the dynamic replica's host reads locally under both.
  const ReaderIdentity local{ClientId(2), "h2", ""};
  EXPECT_EQ(readable[*SelectReplicaForRead(ReplicaSelectionPolicy::kFirst, local,
                                           ObjectName{"", "k"}, readable, 1)]
                .segment,
            SegmentId(2));
}

TEST_F(DynamicReplicationStage1, DecisionRecordsCarryTheDecisionLogFields) {
  const ReplicaActionLease lease = Granted();
  const DecisionRecord d = h_.sink().last();
  EXPECT_EQ(
      FormatDecisionJson(d),
      absl::StrCat("{\"t_ns\":0,\"kind\":\"heat\",\"tenant\":\"default\",\"key\":\"k\","
                   "\"requester_domain\":null,\"target_domain\":null,\"outcome\":\"accepted\","
                   "\"reason\":null,\"source_segment\":1,\"target_segment\":2,\"lease_id\":",
                   lease.lease_id.value, ",\"version\":", version_, "}"));
}

TEST_F(DynamicReplicationStage1, SameCallsGiveTheSameDecisionLog) {
  auto run = []() {
    ReplicationHarness h;
    HS_CHECK_OK(h.AddStore(1, kMiB, "h1"));
    HS_CHECK_OK(h.AddStore(2, kMiB, "h2"));
    HS_CHECK_OK(h.AddStore(3, kMiB, "h3"));
    for (int i = 0; i < 8; ++i)
      HS_CHECK_OK(h.Put("o" + std::to_string(i), 100, {SegmentId(1)}).status());
    for (int round = 0; round < 20; ++round) {
      for (int i = 0; i <= round % 8; ++i) h.ReadTimes("o" + std::to_string(i), 1);
      h.env().AdvanceBy(MsToNs(150));
      for (uint64_t c = 1; c <= 3; ++c) {
        for (const Task& t : h.Fetch(c)) {
          const CopyTaskFence f = ReplicationHarness::FenceOf(t);
          if (h.rm().DynamicReplicaCopyStart(ClientId(c), f).ok()) {
            (void)h.rm().DynamicReplicaCopyEnd(ClientId(c), f);
          }
          (void)h.master().MarkTaskComplete(ClientId(c), {t.id, true, ""});
        }
      }
    }
    HS_CHECK_OK(h.rm().CheckInvariants());
    return h.sink().Jsonl();
  };
  const std::string a = run();
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, run());
}

TEST(DynamicReplicationModeSwitch, OffObserveEnforceOffWhileTheMasterRuns) {
  // The RFC's rollout on one running master: off records nothing, observe
  // logs would_propose, enforce grants, off again stops new work while the
  // granted copy still finishes.
  ReplicationHarness h(ReplicationTestKnobs(DynamicReplicationMode::kOff));
  HS_ASSERT_OK(h.AddTwoStores());
  for (const char* key : {"a", "b", "c", "d"}) HS_ASSERT_OK(h.Put(key, 1000, {SegmentId(1)}));
  const auto count = [&](const char* key) {
    return h.dr().heat_window().CountInWindow(h.env().NowNs(),
                                              HeatKeyView{kDefaultTenant, key, ""});
  };

  h.MakeHot("a");
  EXPECT_EQ(count("a"), 0);
  EXPECT_EQ(h.sink().size(), 0u);
  EXPECT_EQ(h.rm().dynamic_replication_mode(), DynamicReplicationMode::kOff);

  h.rm().SetDynamicReplicationMode(DynamicReplicationMode::kObserve);
  EXPECT_EQ(h.rm().dynamic_replication_mode(), DynamicReplicationMode::kObserve);
  h.MakeHot("b");
  ASSERT_EQ(h.sink().size(), 1u);
  EXPECT_EQ(h.sink().last().key, "b");
  EXPECT_EQ(h.sink().last().outcome, DecisionOutcome::kWouldPropose);
  EXPECT_FALSE(h.dr().FindPending(ObjectName{"", "b"}).has_value());

  h.rm().SetDynamicReplicationMode(DynamicReplicationMode::kEnforce);
  h.MakeHot("c");
  ASSERT_EQ(h.sink().size(), 2u);
  EXPECT_EQ(h.sink().last().key, "c");
  EXPECT_EQ(h.sink().last().outcome, DecisionOutcome::kAccepted);
  ASSERT_TRUE(h.dr().FindPending(ObjectName{"", "c"}).has_value());

  // A key that crosses now has its trigger queued; the mode goes off before
  // the admission worker runs, which rejects it as mode_off.
  h.ReadTimes("d", static_cast<int>(h.dr().knobs().AdmissionHitCount()));
  h.rm().SetDynamicReplicationMode(DynamicReplicationMode::kOff);
  h.Settle();
  ASSERT_EQ(h.sink().size(), 3u);
  EXPECT_EQ(h.sink().last().key, "d");
  EXPECT_EQ(h.sink().last().reason, RejectReason::kModeOff);
  // Off records no heat, and the lease granted under enforce still copies.
  const int64_t c_before = count("c");
  h.ReadTimes("c", 3);
  EXPECT_EQ(count("c"), c_before);
  HS_EXPECT_OK(h.RunDynamicCopy(1));
  EXPECT_EQ(h.dr().DynamicReplicas().size(), 1u);
  HS_EXPECT_OK(h.rm().CheckInvariants());
}

TEST_F(DynamicReplicationStage1, AGrantedProposalStaysIdempotentAfterTheModeGoesOff) {
  h_.ReadTimes("k", 3);
  const ReplicaActionProposal p = h_.Proposal(7, "k", version_, 1000);
  absl::StatusOr<ReplicaActionLease> first = h_.rm().SubmitReplicaActionProposal(p);
  HS_ASSERT_OK(first);
  h_.rm().SetDynamicReplicationMode(DynamicReplicationMode::kOff);
  // The same proposal gets its lease back; a new one is refused as mode_off.
  absl::StatusOr<ReplicaActionLease> again = h_.rm().SubmitReplicaActionProposal(p);
  HS_ASSERT_OK(again);
  EXPECT_EQ(*again, *first);
  const absl::StatusOr<ReplicaActionLease> other =
      h_.rm().SubmitReplicaActionProposal(h_.Proposal(8, "k", version_, 1000));
  EXPECT_EQ(RejectReasonOf(other.status()), RejectReason::kModeOff);
  EXPECT_EQ(h_.master().Stats().copy_tasks_created_total, 1);
}

// CheckCopyLease (a store's read rules, docs/runtime.md "Who may read a
// range"): a read under a lease is confirmed only for a live lease, asked by
// its source store, for its source or target store, within the source range;
// the answer carries the lease's remaining time, and once the copy ends or
// the lease expires the lease is no longer confirmed.
TEST_F(DynamicReplicationStage1, CopyLeaseReadsAreConfirmedOnlyWhileTheLeaseHoldsThem) {
  const ReplicaActionLease lease = Granted();
  const std::vector<Task> tasks = h_.Fetch(1);
  ASSERT_EQ(tasks.size(), 1u);
  const ReplicaCopyPayload& copy = tasks[0].copy;
  const CopyLeaseQuery whole{lease.lease_id, ClientId(2), copy.source_segment, copy.source_offset,
                             copy.size_bytes};
  // Granted (before CopyStart): the target store (client 2) and the source
  // (client 1) may read the source range; the answer is the lease's rest.
  absl::StatusOr<CopyLeaseGrant> grant = h_.rm().CheckCopyLease(ClientId(1), whole);
  HS_ASSERT_OK(grant);
  EXPECT_EQ(grant->remaining_ns, lease.expiration_ns - h_.now());
  CopyLeaseQuery by_source = whole;
  by_source.reader = ClientId(1);
  HS_EXPECT_OK(h_.rm().CheckCopyLease(ClientId(1), by_source));
  CopyLeaseQuery part = whole;
  part.offset += 10;
  part.size = 100;
  HS_EXPECT_OK(h_.rm().CheckCopyLease(ClientId(1), part));
  // Another reader, another asker, another lease, another range.
  CopyLeaseQuery stranger = whole;
  stranger.reader = ClientId(7);
  EXPECT_EQ(h_.rm().CheckCopyLease(ClientId(1), stranger).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(h_.rm().CheckCopyLease(ClientId(2), whole).status().code(),
            absl::StatusCode::kPermissionDenied);
  CopyLeaseQuery unknown = whole;
  unknown.lease_id = LeaseId(lease.lease_id.value + 1000);
  EXPECT_EQ(h_.rm().CheckCopyLease(ClientId(1), unknown).status().code(),
            absl::StatusCode::kNotFound);
  CopyLeaseQuery longer = whole;
  longer.size += 1;
  EXPECT_EQ(h_.rm().CheckCopyLease(ClientId(1), longer).status().code(),
            absl::StatusCode::kOutOfRange);
  CopyLeaseQuery shifted = whole;
  shifted.offset += 1;
  EXPECT_EQ(h_.rm().CheckCopyLease(ClientId(1), shifted).status().code(),
            absl::StatusCode::kOutOfRange);
  CopyLeaseQuery elsewhere = whole;
  elsewhere.segment = SegmentId(2);
  EXPECT_EQ(h_.rm().CheckCopyLease(ClientId(1), elsewhere).status().code(),
            absl::StatusCode::kOutOfRange);
  // In flight: still confirmed. After the copy ends: not live any more.
  const CopyTaskFence fence = ReplicationHarness::FenceOf(tasks[0]);
  HS_ASSERT_OK(h_.rm().DynamicReplicaCopyStart(ClientId(1), fence));
  HS_EXPECT_OK(h_.rm().CheckCopyLease(ClientId(1), whole));
  HS_ASSERT_OK(h_.rm().DynamicReplicaCopyEnd(ClientId(1), fence));
  HS_ASSERT_OK(h_.master().MarkTaskComplete(ClientId(1), {fence.task_id, true, ""}));
  EXPECT_EQ(h_.rm().CheckCopyLease(ClientId(1), whole).status().code(),
            absl::StatusCode::kNotFound);
}

// Found by the swarm (seed 633): after a master restart, a store reported
// its ordinary replica of a key between the key's admission and its copy's
// start; the copy then put the key over the cap. With a cap of 2 and one
// replica at admission, a late report of a second one stops the copy at
// its start: refused with replica_limit, the lease and task cleared, no
// target replica left behind.
TEST_F(DynamicReplicationStage1, ACopyDoesNotStartWhenALateReportFilledTheCap) {
  HS_ASSERT_OK(h_.AddStore(3, kMiB, "h3"));
  const ReplicaActionLease lease = Granted();
  const std::vector<Task> tasks = h_.Fetch(1);
  ASSERT_EQ(tasks.size(), 1u);
  // The store that is neither the source nor the target reports a replica
  // of the same version.
  ASSERT_NO_FATAL_FAILURE(ReportLateReplicaOfK(lease));

  const CopyTaskFence fence = ReplicationHarness::FenceOf(tasks[0]);
  const absl::StatusOr<CopyStartResponse> started =
      h_.rm().DynamicReplicaCopyStart(ClientId(1), fence);
  HS_EXPECT_REASON(started, RejectReason::kReplicaLimit);
  EXPECT_FALSE(h_.dr().FindPending(ObjectName{"", "k"}).has_value());
  EXPECT_FALSE(h_.master().GetTask(fence.task_id).has_value());
  ExpectKHoldsTwoOrdinaryReplicas();
}

// The same report after the copy started: the copy in flight, which
// admission counted, gives way to the ordinary replica (ordinary data is
// never refused for an optional copy): it is revoked, its CopyEnd refused.
TEST_F(DynamicReplicationStage1, ALateReportAtTheCapRevokesTheDynamicCopyInFlight) {
  HS_ASSERT_OK(h_.AddStore(3, kMiB, "h3"));
  const ReplicaActionLease lease = Granted();
  const std::vector<Task> tasks = h_.Fetch(1);
  ASSERT_EQ(tasks.size(), 1u);
  const CopyTaskFence fence = ReplicationHarness::FenceOf(tasks[0]);
  HS_ASSERT_OK(h_.rm().DynamicReplicaCopyStart(ClientId(1), fence));
  ASSERT_NO_FATAL_FAILURE(ReportLateReplicaOfK(lease));

  EXPECT_FALSE(h_.master().GetTask(fence.task_id).has_value());
  EXPECT_FALSE(h_.rm().DynamicReplicaCopyEnd(ClientId(1), fence).ok());
  h_.Settle();
  EXPECT_FALSE(h_.dr().FindPending(ObjectName{"", "k"}).has_value());
  ExpectKHoldsTwoOrdinaryReplicas();
  EXPECT_EQ(h_.master().GetSegment(lease.target_segment)->reserved_bytes, 0u);
}

TEST_F(DynamicReplicationStage1, AnExpiredCopyLeaseIsNotConfirmed) {
  const ReplicaActionLease lease = Granted();
  const std::vector<Task> tasks = h_.Fetch(1);
  ASSERT_EQ(tasks.size(), 1u);
  const CopyLeaseQuery query{lease.lease_id, ClientId(2), tasks[0].copy.source_segment,
                             tasks[0].copy.source_offset, tasks[0].copy.size_bytes};
  HS_ASSERT_OK(h_.rm().CheckCopyLease(ClientId(1), query));
  h_.env().AdvanceBy(lease.expiration_ns - h_.now());
  EXPECT_EQ(h_.rm().CheckCopyLease(ClientId(1), query).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace heatsink
