// Sustained heat (DESIGN 1: a key that stays hot is evaluated again at each
// cooldown end, copy end and after transient rejections, until it reaches its
// cap or cools) and optional replicas (DESIGN 12: eviction drops dynamic
// replicas before any object, a dynamic CopyStart never evicts, the optional
// cold release).
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/core/replication/replication_test_util.h"

namespace heatsink::testing {
namespace {

constexpr DurationNs kStepNs = MsToNs(100);

std::vector<DecisionRecord> Kind(const std::vector<DecisionRecord>& all, DecisionOutcome outcome) {
  std::vector<DecisionRecord> out;
  for (const DecisionRecord& r : all) {
    if (r.outcome == outcome) out.push_back(r);
  }
  return out;
}

class SustainedHeat : public ::testing::Test {
 protected:
  explicit SustainedHeat(ReplicationKnobs knobs = Knobs()) : h_(knobs) {
    for (uint64_t id = 1; id <= 5; ++id) {
      HS_CHECK_OK(h_.AddStore(id, kMiB, "h" + std::to_string(id)));
    }
    HS_CHECK_OK(h_.Put("k", 1000, {SegmentId(1)}).status());
  }

  static ReplicationKnobs Knobs() {
    ReplicationKnobs k = ReplicationTestKnobs();  // window 1 s in 4 sub-buckets, hit count 3
    k.dynamic_replication_max_memory_replicas = 4;
    k.dynamic_replication_admission_retry_ms = 1'000;
    return k;
  }

  // Runs every dynamic copy task the stores hold (fetch, start, end,
  // complete). Returns how many.
  int RunCopies() {
    int done = 0;
    for (uint64_t id = 1; id <= 5; ++id) {
      for (const Task& task : h_.Fetch(id)) {
        const CopyTaskFence fence = ReplicationHarness::FenceOf(task);
        HS_CHECK_OK(h_.rm().DynamicReplicaCopyStart(ClientId(id), fence).status());
        HS_CHECK_OK(h_.rm().DynamicReplicaCopyEnd(ClientId(id), fence));
        HS_CHECK_OK(h_.master().MarkTaskComplete(ClientId(id),
                                                 MarkTaskCompleteRequest{fence.task_id, true, ""}));
        ++done;
      }
    }
    return done;
  }

  // `seconds` of steady reads of "k" (one per 100 ms: 10 reads/s, above the
  // 3 reads/s threshold), copies run as soon as they are queued when
  // `run_copies`.
  void ReadSteadily(int64_t seconds, bool run_copies = true) {
    for (int64_t i = 0; i < seconds * 10; ++i) {
      h_.ReadTimes("k", 1);
      h_.env().AdvanceBy(kStepNs);
      if (run_copies) RunCopies();
    }
  }

  int64_t Readable() {
    absl::StatusOr<GetReplicaListResponse> r = h_.Read("k");
    HS_CHECK_OK(r.status());
    return static_cast<int64_t>(r->replicas.size());
  }

  ReplicationHarness h_;
};

TEST_F(SustainedHeat, SteadyHotKeyGetsADecisionAfterEachCooldownUntilItsCap) {
  ReadSteadily(30);
  const std::vector<DecisionRecord> accepted = Kind(h_.sink().records(), DecisionOutcome::kAccepted);
  // The cap is 4 readable replicas, the original included: three admissions.
  ASSERT_EQ(accepted.size(), 3u) << h_.sink().Jsonl();
  EXPECT_EQ(Readable(), 4);
  const DurationNs cooldown = MsToNs(h_.dr().knobs().dynamic_replication_admission_cooldown_ms);
  const DurationNs sub_bucket = SecToNs(1) / 4;
  for (size_t i = 1; i < accepted.size(); ++i) {
    const DurationNs gap = accepted[i].t_ns - accepted[i - 1].t_ns;
    // Not before the cooldown ends; within one sub-bucket plus the
    // admission delay (here: the next 100 ms step) after it.
    EXPECT_GE(gap, cooldown) << i;
    EXPECT_LE(gap, cooldown + sub_bucket + kStepNs) << i;
  }
  // At its cap the key records no heat: nothing more is decided.
  const size_t decisions = h_.sink().size();
  ReadSteadily(20);
  EXPECT_EQ(Kind(h_.sink().records(), DecisionOutcome::kAccepted).size(), 3u);
  EXPECT_EQ(Readable(), 4);
  EXPECT_LE(h_.sink().size(), decisions + 1);  // at most one replica_limit look
  HS_EXPECT_OK(h_.rm().CheckInvariants());
}

TEST_F(SustainedHeat, KeyThatCoolsIsNotReadmitted) {
  ReadSteadily(2);
  ASSERT_EQ(Kind(h_.sink().records(), DecisionOutcome::kAccepted).size(), 1u);
  const size_t decisions = h_.sink().size();
  // No more reads: the look at the cooldown's end finds the key cold.
  h_.env().AdvanceBy(SecToNs(20));
  EXPECT_EQ(h_.sink().size(), decisions) << h_.sink().Jsonl();
  EXPECT_EQ(h_.SyncMetrics().Value("dynamic_replication_rechecks_cooled_total"), 1);
  EXPECT_EQ(h_.SyncMetrics().Value("dynamic_replication_rechecks_requeued_total"), 0);
  EXPECT_EQ(h_.dr().recheck_queue().scheduled() + h_.dr().recheck_queue().parked(), 0u);
  EXPECT_EQ(Readable(), 2);
}

class SustainedHeatNoCooldown : public SustainedHeat {
 protected:
  SustainedHeatNoCooldown() : SustainedHeat(NoCooldown()) {}
  static ReplicationKnobs NoCooldown() {
    ReplicationKnobs k = Knobs();
    k.dynamic_replication_admission_cooldown_ms = 0;
    k.dynamic_replication_lease_ttl_ms = 60'000;
    return k;
  }
};

TEST_F(SustainedHeatNoCooldown, PendingCopyHoldsTheKeyUntilItEnds) {
  // Hot, admitted; the copy is not run, so the key waits on it without
  // a decision per crossing.
  ReadSteadily(3, /*run_copies=*/false);
  ASSERT_EQ(Kind(h_.sink().records(), DecisionOutcome::kAccepted).size(), 1u) << h_.sink().Jsonl();
  EXPECT_EQ(h_.dr().recheck_queue().parked(), 1u);
  const size_t decisions = h_.sink().size();
  // The copy ends: the key is looked at again at once and admitted again.
  ASSERT_EQ(RunCopies(), 1);
  const TimeNs copy_end = h_.now();
  h_.env().RunUntilIdle();
  const std::vector<DecisionRecord> accepted = Kind(h_.sink().records(), DecisionOutcome::kAccepted);
  ASSERT_EQ(accepted.size(), 2u) << h_.sink().Jsonl();
  EXPECT_EQ(h_.sink().size(), decisions + 1);
  EXPECT_EQ(accepted[1].t_ns, copy_end);
}

TEST_F(SustainedHeat, TransientRejectionIsRetriedAfterTheRetryDelay) {
  // A second key on a master whose only other segments are drained: no
  // target until one is undrained.
  for (uint64_t id = 2; id <= 5; ++id) {
    HS_ASSERT_OK(h_.master().SetSegmentAllocatable(ClientId(), SegmentId(id), false));
  }
  ReadSteadily(3);
  std::vector<DecisionRecord> all = h_.sink().records();
  ASSERT_GE(all.size(), 3u) << h_.sink().Jsonl();
  for (const DecisionRecord& r : all) EXPECT_EQ(r.reason, RejectReason::kNoTarget);
  for (size_t i = 1; i < all.size(); ++i) {
    EXPECT_GE(all[i].t_ns - all[i - 1].t_ns, MsToNs(1'000));
    EXPECT_LE(all[i].t_ns - all[i - 1].t_ns, MsToNs(1'000) + kStepNs);
  }
  HS_ASSERT_OK(h_.master().SetSegmentAllocatable(ClientId(), SegmentId(3), true));
  ReadSteadily(2);
  EXPECT_EQ(Kind(h_.sink().records(), DecisionOutcome::kAccepted).size(), 1u) << h_.sink().Jsonl();
}

// Domain-aware, one replica per domain: "k" lives in domain da and is hot in
// db and dc. Copies are never run, so each db copy fails when its lease
// expires and db, parked on it, is admitted again at that instant.
class SustainedHeatTwoDomains : public ::testing::Test {
 protected:
  SustainedHeatTwoDomains() : h_(Knobs()) {
    HS_CHECK_OK(h_.AddStore(1, kMiB, "a1", "da"));
    HS_CHECK_OK(h_.AddStore(2, kMiB, "b1", "db"));
    HS_CHECK_OK(h_.AddStore(3, kMiB, "c1", "dc"));
    HS_CHECK_OK(h_.Put("k", 1000, {SegmentId(1)}).status());
  }

  static ReplicationKnobs Knobs() {
    ReplicationKnobs k = ReplicationTestKnobs();  // window 1 s in 4 sub-buckets, hit count 3
    k.dynamic_replication_domain_aware = true;
    k.dynamic_replication_max_memory_replicas = 1;
    k.dynamic_replication_admission_cooldown_ms = 0;
    k.dynamic_replication_lease_ttl_ms = 450;
    k.dynamic_replication_admission_retry_ms = 1'000;
    return k;
  }

  std::vector<DecisionRecord> Of(const std::string& domain) {
    std::vector<DecisionRecord> out;
    for (const DecisionRecord& r : h_.sink().records()) {
      if (r.kind == DecisionKind::kHeat && r.requester_domain == domain) out.push_back(r);
    }
    return out;
  }

  ReplicationHarness h_;
};

TEST_F(SustainedHeatTwoDomains, AKeyBehindAnotherDomainsCopyIsLookedAtWhenThatCopyEnds) {
  // db is admitted first; dc's first look meets db's copy (pending).
  h_.ReadTimes("k", 3, "db");
  h_.Settle();
  h_.ReadTimes("k", 3, "dc");
  h_.Settle();
  ASSERT_EQ(Of("db").size(), 1u) << h_.sink().Jsonl();
  ASSERT_EQ(Of("dc").size(), 1u) << h_.sink().Jsonl();
  EXPECT_EQ(Of("dc")[0].reason, RejectReason::kPending);
  // Both stay hot for 3 s; every db copy fails at its lease's end.
  for (int i = 0; i < 30; ++i) {
    h_.ReadTimes("k", 1, "db");
    h_.ReadTimes("k", 1, "dc");
    h_.env().AdvanceBy(kStepNs);
  }
  const std::vector<DecisionRecord> db = Of("db");
  const std::vector<DecisionRecord> dc = Of("dc");
  ASSERT_GE(db.size(), 4u) << h_.sink().Jsonl();
  // After its retry delay dc looks again, finds db's copy running and waits
  // on it: dc is decided again exactly when a db copy ends, never later
  // than the copy after its retry delay (before, it looked again one heat
  // sub-bucket at a time and kept missing the instant between db's copies).
  ASSERT_GE(dc.size(), 2u) << h_.sink().Jsonl();
  const TimeNs retry_end = dc[0].t_ns + MsToNs(1'000);
  const auto ends_db_copy = [&](TimeNs t) {
    for (const DecisionRecord& r : db) {
      if (r.outcome == DecisionOutcome::kAccepted && r.t_ns + MsToNs(450) == t) return true;
    }
    return false;
  };
  EXPECT_TRUE(ends_db_copy(dc[1].t_ns)) << h_.sink().Jsonl();
  EXPECT_LE(dc[1].t_ns, retry_end + MsToNs(450)) << h_.sink().Jsonl();
  HS_EXPECT_OK(h_.rm().CheckInvariants());
}

// --------------------------------------------------------- optional replicas

class OptionalReplicas : public SustainedHeat {};

TEST_F(OptionalReplicas, EvictionDropsDynamicReplicasBeforeAnyObject) {
  ReadSteadily(2);
  ASSERT_EQ(Readable(), 2);
  HS_ASSERT_OK(h_.Put("cold", 1000, {SegmentId(2)}).status());
  // Everything unleased: the object "cold" is older than k's replicas, so
  // the old near-LRU order would take it first.
  h_.env().AdvanceBy(SecToNs(5));
  const uint64_t freed = h_.master().Evict(1);
  EXPECT_EQ(freed, 1000u);
  EXPECT_TRUE(h_.master().GetObjectView(ObjectName{"", "cold"}).ok());
  EXPECT_EQ(Readable(), 1);
  const DecisionRecord last = h_.sink().last();
  EXPECT_EQ(last.kind, DecisionKind::kEvict);
  EXPECT_EQ(last.outcome, DecisionOutcome::kDropped);
  EXPECT_NE(FormatDecisionJson(last).find("\"kind\":\"evict\",\"tenant\":\"default\",\"key\":\"k\""),
            std::string::npos);
  EXPECT_NE(FormatDecisionJson(last).find("\"outcome\":\"dropped\",\"reason\":null"),
            std::string::npos);
  EXPECT_TRUE(h_.dr().RecreateCooldownActive(ObjectName{"", "k"}));
  EXPECT_EQ(h_.SyncMetrics().Value("dynamic_replication_replicas_evicted_total"), 1);
  EXPECT_EQ(h_.master().Stats().evicted_objects_total, 0);
  // The original is never dropped as an optional replica: the next pass
  // evicts objects.
  h_.master().Evict(1);
  EXPECT_EQ(h_.master().Stats().evicted_objects_total, 1);
  HS_EXPECT_OK(h_.rm().CheckInvariants());
}

TEST_F(OptionalReplicas, ReadLeasedDynamicReplicaLeavesAtOnceAndFreesAtLeaseEnd) {
  ReadSteadily(2);
  ASSERT_EQ(Readable(), 2);  // this read leases the object
  const uint64_t used_before = h_.master().Stats().used_bytes;
  EXPECT_EQ(h_.master().Evict(1), 1000u);
  EXPECT_EQ(Readable(), 1);
  // Still allocated while the read lease lives.
  EXPECT_EQ(h_.master().Stats().used_bytes, used_before);
  h_.env().AdvanceBy(SecToNs(3));  // lease (1 s) over, sweeps ran
  EXPECT_EQ(h_.master().Stats().used_bytes, used_before - 1000);
  HS_EXPECT_OK(h_.rm().CheckInvariants());
}

TEST_F(OptionalReplicas, DynamicCopyStartNeverEvicts) {
  // Segments 2..5 drained except 2, which is then filled with cold objects.
  for (uint64_t id = 3; id <= 5; ++id) {
    HS_ASSERT_OK(h_.master().SetSegmentAllocatable(ClientId(), SegmentId(id), false));
  }
  ReadSteadily(2, /*run_copies=*/false);
  ASSERT_EQ(Kind(h_.sink().records(), DecisionOutcome::kAccepted).size(), 1u);
  std::vector<Task> tasks = h_.Fetch(1);
  ASSERT_EQ(tasks.size(), 1u);
  // Fill the target before the copy starts, with objects that are not
  // read-leased (evictable: the copy of an ordinary task would evict them).
  auto free_bytes = [&]() {
    const std::optional<SegmentView> s = h_.master().GetSegment(SegmentId(2));
    HS_CHECK(s.has_value());
    return s->capacity_bytes - s->used_bytes - s->reserved_bytes;
  };
  int filled = 0;
  while (free_bytes() >= 1000) {
    const uint64_t size = std::min<uint64_t>(free_bytes(), 64 * 1024);
    HS_ASSERT_OK(h_.Put("fill-" + std::to_string(filled++), size, {SegmentId(2)}).status());
  }
  const int64_t objects = h_.master().Stats().objects;
  absl::StatusOr<CopyStartResponse> started =
      h_.rm().DynamicReplicaCopyStart(ClientId(1), ReplicationHarness::FenceOf(tasks[0]));
  EXPECT_EQ(started.status().code(), absl::StatusCode::kResourceExhausted) << started.status();
  EXPECT_EQ(h_.master().Stats().objects, objects);
  EXPECT_EQ(h_.master().Stats().evicted_objects_total, 0);
  EXPECT_TRUE(h_.dr().PendingActions().empty());
  HS_EXPECT_OK(h_.rm().CheckInvariants());
}

class ColdRelease : public SustainedHeat {
 protected:
  ColdRelease() : SustainedHeat(ReleaseKnobs()) {}
  static ReplicationKnobs ReleaseKnobs() {
    ReplicationKnobs k = Knobs();
    k.dynamic_replication_release_enabled = true;
    k.dynamic_replication_release_after_ms = 2'000;
    return k;
  }
};

TEST_F(ColdRelease, HotReplicaStaysColdReplicaIsReleased) {
  ReadSteadily(4);
  ASSERT_EQ(Readable(), 2);
  // Still read: never released.
  ReadSteadily(6);
  EXPECT_EQ(h_.SyncMetrics().Value("dynamic_replication_replicas_released_total"), 0);
  EXPECT_GE(Readable(), 2);
  const int64_t replicas = Readable();
  // Reads stop: the window empties, the read lease ends, and after 2 s of
  // cold checks the dynamic replicas go.
  h_.env().AdvanceBy(SecToNs(6));
  EXPECT_EQ(h_.SyncMetrics().Value("dynamic_replication_replicas_released_total"), replicas - 1);
  EXPECT_EQ(h_.master().Stats().released_dynamic_replicas_total, replicas - 1);
  const DecisionRecord last = h_.sink().last();
  EXPECT_EQ(last.kind, DecisionKind::kRelease);
  EXPECT_EQ(last.outcome, DecisionOutcome::kDropped);
  EXPECT_TRUE(h_.dr().RecreateCooldownActive(ObjectName{"", "k"}));
  EXPECT_EQ(Readable(), 1);
  HS_EXPECT_OK(h_.rm().CheckInvariants());
}


// The release must not take a replica read at its cap for cold: such reads
// record no heat (DESIGN 2), so before they were noted a replica read every
// 2 s (longer than its read lease and its window) was released after
// release_after_ms although it was being read.
class ColdReleaseAtCap : public SustainedHeat {
 protected:
  ColdReleaseAtCap() : SustainedHeat(AtCapKnobs()) {}
  static ReplicationKnobs AtCapKnobs() {
    ReplicationKnobs k = Knobs();
    k.dynamic_replication_max_memory_replicas = 2;  // the original and one copy
    k.dynamic_replication_release_enabled = true;
    k.dynamic_replication_release_after_ms = 2'000;
    return k;
  }
  int64_t Released() {
    return h_.SyncMetrics().Value("dynamic_replication_replicas_released_total");
  }
};

TEST_F(ColdReleaseAtCap, ReplicaReadAtItsCapStaysWhileReadAndGoesWhenReadsStop) {
  ReadSteadily(2);
  ASSERT_EQ(Readable(), 2);  // at its cap: further reads record no heat
  // One read every 2 s for 30 s: the window (1 s) and the read lease (1 s)
  // are empty between reads, the reads at the cap are not.
  for (int i = 0; i < 15; ++i) {
    h_.ReadTimes("k", 1);
    h_.env().AdvanceBy(SecToNs(2));
  }
  EXPECT_EQ(Released(), 0);
  // Reads stop: cold from the next check on, released 2 s later.
  h_.env().AdvanceBy(SecToNs(4));
  EXPECT_EQ(Released(), 1);
  HS_EXPECT_OK(h_.rm().CheckInvariants());
}

// A release span shorter than the window: a long window finds reuse spread
// out, an idle replica goes after the span.
class ReleaseSpan : public SustainedHeat {
 protected:
  explicit ReleaseSpan(int64_t span_ms = 1'000) : SustainedHeat(SpanKnobs(span_ms)) {}
  static ReplicationKnobs SpanKnobs(int64_t span_ms) {
    ReplicationKnobs k = Knobs();
    k.dynamic_replication_heat_window_seconds = 4;  // 4 sub-buckets of 1 s; hit count 12
    k.dynamic_replication_release_enabled = true;
    k.dynamic_replication_release_after_ms = 1;
    k.dynamic_replication_release_span_ms = span_ms;
    return k;
  }
  int64_t Released() {
    return h_.SyncMetrics().Value("dynamic_replication_replicas_released_total");
  }
};
class ReleaseSpanWholeWindow : public ReleaseSpan {
 protected:
  ReleaseSpanWholeWindow() : ReleaseSpan(0) {}
};

TEST_F(ReleaseSpan, IdleReplicaGoesAfterTheSpanNotTheWindow) {
  ReadSteadily(3);
  ASSERT_GE(Readable(), 2);
  EXPECT_EQ(Released(), 0);
  // 3.5 s idle: the window still counts the reads, the 1 s span does not;
  // the read lease (1 s) has ended, and the checks run once a second.
  h_.env().AdvanceBy(MsToNs(3'500));
  EXPECT_GE(Released(), 1);
  HS_EXPECT_OK(h_.rm().CheckInvariants());
}

TEST_F(ReleaseSpanWholeWindow, IdleReplicaStaysWhileTheWindowCountsItsReads) {
  ReadSteadily(3);
  ASSERT_GE(Readable(), 2);
  h_.env().AdvanceBy(MsToNs(3'500));
  EXPECT_EQ(Released(), 0);
  h_.env().AdvanceBy(SecToNs(3));
  EXPECT_GE(Released(), 1);
}

}  // namespace
}  // namespace heatsink::testing
