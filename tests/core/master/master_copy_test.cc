// Covers REPLICA_COPY tasks and the copy lifecycle: task creation (one per
// key, source chosen with a stable tie-break, plan-based creation with a
// lease id that changes nothing on failure), FetchTasks batch and queue
// limits, CopyStart/CopyEnd/CopyRevoke with caller and fence checks, leased
// vs ordinary calls, MarkTaskComplete ownership, pending and processing
// timeouts, CancelCopyTask, and the per-segment in-flight counters.
#include "gtest/gtest.h"
#include "tests/core/master/master_test_util.h"

namespace heatsink {
namespace {

using testing::MasterHarness;
using testing::Name;
using testing::RemovalLog;

// Object "k" (100 bytes) on segment 1 (client 1); segment 2 (client 2) free.
class MasterCopyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(h_.AddStore(1, 1000).ok());
    ASSERT_TRUE(h_.AddStore(2, 1000).ok());
    absl::StatusOr<Version> v = h_.Put("k", 100, 1, {SegmentId(1)});
    ASSERT_TRUE(v.ok());
    version_ = *v;
    h_.master().SetReplicaRemovalObserver(&log_);
  }

  // Creates and fetches a copy of "k" to segment 2; returns its fence.
  CopyTaskFence CreateAndFetch() {
    absl::StatusOr<CopyTaskResponse> t =
        master().CreateCopyTask(CopyTaskRequest{Name("k"), SegmentId(2), {}});
    EXPECT_TRUE(t.ok()) << t.status();
    absl::StatusOr<FetchTasksResponse> f = master().FetchTasks(ClientId(1), 1);
    EXPECT_TRUE(f.ok() && f->tasks.size() == 1);
    return CopyTaskFence{t->task_id, version_, {}};
  }

  MasterService& master() { return h_.master(); }

  RemovalLog log_;
  MasterHarness h_;
  Version version_ = 0;
};

TEST_F(MasterCopyTest, FullLifecycleMakesTheTargetReadable) {
  absl::StatusOr<CopyTaskResponse> t =
      master().CreateCopyTask(CopyTaskRequest{Name("k"), SegmentId(2), {}});
  HS_ASSERT_OK(t);
  EXPECT_EQ(t->source_client, ClientId(1));
  EXPECT_EQ(t->payload.source_segment, SegmentId(1));
  EXPECT_EQ(t->payload.target_segment, SegmentId(2));
  EXPECT_EQ(t->payload.version, version_);
  EXPECT_EQ(t->payload.size_bytes, 100u);
  EXPECT_FALSE(t->payload.leased());
  EXPECT_EQ(master().GetSegmentLoad(SegmentId(1))->copy_tasks_as_source, 1);

  absl::StatusOr<FetchTasksResponse> fetched = master().FetchTasks(ClientId(1), 2);
  HS_ASSERT_OK(fetched);
  ASSERT_EQ(fetched->tasks.size(), 1u);
  EXPECT_EQ(fetched->tasks[0].type, TaskType::kReplicaCopy);
  EXPECT_EQ(fetched->tasks[0].status, TaskStatus::kProcessing);
  EXPECT_EQ(fetched->tasks[0].copy.name, Name("k", "default"));
  const CopyTaskFence fence{t->task_id, version_, {}};

  absl::StatusOr<CopyStartResponse> started = master().CopyStart(ClientId(1), fence);
  HS_ASSERT_OK(started);
  EXPECT_EQ(started->range.source_segment, SegmentId(1));
  EXPECT_EQ(started->range.target_segment, SegmentId(2));
  EXPECT_EQ(started->range.size_bytes, 100u);
  EXPECT_EQ(started->range.object, Name("k", "default"));
  EXPECT_EQ(master().GetSegment(SegmentId(2))->reserved_bytes, 100u);
  EXPECT_EQ(master().GetSegmentLoad(SegmentId(1))->copies_in_flight_as_source, 1);
  EXPECT_EQ(master().GetSegmentLoad(SegmentId(2))->copies_in_flight_as_target, 1);
  // PROCESSING: not handed to readers.
  EXPECT_EQ(h_.Get("k")->replicas.size(), 1u);
  HS_EXPECT_OK(master().CheckInvariants());

  HS_ASSERT_OK(master().CopyEnd(ClientId(1), fence));
  EXPECT_EQ(master().GetSegment(SegmentId(2))->reserved_bytes, 0u);
  EXPECT_EQ(master().GetSegment(SegmentId(2))->used_bytes, 100u);
  absl::StatusOr<GetReplicaListResponse> got = h_.Get("k");
  HS_ASSERT_OK(got);
  EXPECT_EQ(h_.SegmentsOf(*got), (std::vector<SegmentId>{SegmentId(1), SegmentId(2)}));
  EXPECT_EQ(got->replicas[1].offset, started->range.target_offset);
  EXPECT_EQ(got->replicas[1].origin, ReplicaOrigin::kCopy);
  EXPECT_EQ(master().GetSegmentLoad(SegmentId(1))->copies_in_flight_as_source, 0);

  // The task still holds the key until reported.
  EXPECT_TRUE(master().GetObjectView(Name("k"))->replication_task.valid());
  HS_ASSERT_OK(master().MarkTaskComplete(ClientId(1), {t->task_id, true, ""}));
  EXPECT_FALSE(master().GetTask(t->task_id).has_value());
  EXPECT_FALSE(master().GetObjectView(Name("k"))->replication_task.valid());
  EXPECT_EQ(master().GetSegmentLoad(SegmentId(1))->copy_tasks_as_source, 0);
  EXPECT_EQ(master().Stats().tasks_succeeded_total, 1);
  HS_EXPECT_OK(master().CheckInvariants());
}

TEST_F(MasterCopyTest, WrongClientIsRejectedEverywhere) {
  const CopyTaskFence fence = CreateAndFetch();
  HS_EXPECT_CODE(master().CopyStart(ClientId(2), fence), kPermissionDenied);
  HS_ASSERT_OK(master().CopyStart(ClientId(1), fence));
  HS_EXPECT_CODE(master().CopyEnd(ClientId(2), fence), kPermissionDenied);
  HS_EXPECT_CODE(master().CopyRevoke(ClientId(2), fence), kPermissionDenied);
  HS_EXPECT_CODE(master().MarkTaskComplete(ClientId(2), {fence.task_id, false, ""}),
                 kPermissionDenied);
  HS_EXPECT_OK(master().CopyEnd(ClientId(1), fence));
}

TEST_F(MasterCopyTest, RevokeFreesTheReservation) {
  const CopyTaskFence fence = CreateAndFetch();
  HS_ASSERT_OK(master().CopyStart(ClientId(1), fence));
  HS_ASSERT_OK(master().CopyRevoke(ClientId(1), fence));
  EXPECT_EQ(master().GetSegment(SegmentId(2))->reserved_bytes, 0u);
  EXPECT_EQ(master().GetSegment(SegmentId(2))->replica_count, 0);
  ASSERT_EQ(log_.removals.size(), 1u);
  EXPECT_EQ(log_.removals[0].cause, RemovalCause::kCopyRevoked);
  EXPECT_EQ(log_.removals[0].replica.status, ReplicaStatus::kProcessing);
  EXPECT_FALSE(log_.removals[0].object_deleted);
  // Out of order now.
  HS_EXPECT_CODE(master().CopyEnd(ClientId(1), fence), kFailedPrecondition);
  HS_EXPECT_CODE(master().CopyRevoke(ClientId(1), fence), kFailedPrecondition);
  HS_EXPECT_CODE(master().MarkTaskComplete(ClientId(1), {fence.task_id, true, ""}),
                 kFailedPrecondition);
  HS_ASSERT_OK(master().MarkTaskComplete(ClientId(1), {fence.task_id, false, "transfer"}));
  EXPECT_EQ(master().Stats().tasks_failed_total, 1);
  HS_EXPECT_OK(master().CheckInvariants());
}

TEST_F(MasterCopyTest, FailedReportRevokesAStartedCopy) {
  const CopyTaskFence fence = CreateAndFetch();
  HS_ASSERT_OK(master().CopyStart(ClientId(1), fence));
  HS_ASSERT_OK(master().MarkTaskComplete(ClientId(1), {fence.task_id, false, "gave up"}));
  EXPECT_EQ(master().GetSegment(SegmentId(2))->reserved_bytes, 0u);
  HS_EXPECT_OK(master().CheckInvariants());
}

TEST_F(MasterCopyTest, CallsOutOfOrderAreFailedPreconditions) {
  absl::StatusOr<CopyTaskResponse> t =
      master().CreateCopyTask(CopyTaskRequest{Name("k"), SegmentId(2), {}});
  HS_ASSERT_OK(t);
  const CopyTaskFence fence{t->task_id, version_, {}};
  HS_EXPECT_CODE(master().CopyStart(ClientId(1), fence), kFailedPrecondition);  // not fetched
  HS_EXPECT_CODE(master().MarkTaskComplete(ClientId(1), {t->task_id, false, ""}),
                 kFailedPrecondition);
  HS_ASSERT_OK(master().FetchTasks(ClientId(1), 1));
  HS_EXPECT_CODE(master().CopyEnd(ClientId(1), fence), kFailedPrecondition);  // not started
  HS_EXPECT_CODE(master().MarkTaskComplete(ClientId(1), {t->task_id, true, ""}),
                 kFailedPrecondition);
  HS_ASSERT_OK(master().CopyStart(ClientId(1), fence));
  HS_EXPECT_CODE(master().CopyStart(ClientId(1), fence), kFailedPrecondition);  // twice
  HS_EXPECT_CODE(master().CopyStart(ClientId(1), CopyTaskFence{TaskId(999), version_, {}}),
                 kNotFound);
}

TEST_F(MasterCopyTest, StaleFenceIsAborted) {
  const CopyTaskFence fence = CreateAndFetch();
  CopyTaskFence stale = fence;
  stale.version = version_ + 1;
  HS_EXPECT_CODE(master().CopyStart(ClientId(1), stale), kAborted);
  stale = fence;
  stale.lease_id = LeaseId(5);
  HS_EXPECT_CODE(master().CopyStart(ClientId(1), stale), kAborted);
  HS_ASSERT_OK(master().CopyStart(ClientId(1), fence));
  stale.version = version_ + 1;
  stale.lease_id = LeaseId();
  HS_EXPECT_CODE(master().CopyEnd(ClientId(1), stale), kAborted);
  HS_EXPECT_CODE(master().CopyRevoke(ClientId(1), stale), kAborted);
  HS_EXPECT_OK(master().CopyEnd(ClientId(1), fence));
}

TEST_F(MasterCopyTest, OneReplicationTaskPerKey) {
  HS_ASSERT_OK(h_.AddStore(3, 1000));
  HS_ASSERT_OK(master().CreateCopyTask(CopyTaskRequest{Name("k"), SegmentId(2), {}}));
  HS_EXPECT_CODE(master().CreateCopyTask(CopyTaskRequest{Name("k"), SegmentId(3), {}}),
                 kAlreadyExists);
}

TEST_F(MasterCopyTest, TaskCreationChecksTheTarget) {
  HS_EXPECT_CODE(master().CreateCopyTask(CopyTaskRequest{Name("k"), SegmentId(1), {}}),
                 kAlreadyExists);  // already holds the object
  HS_EXPECT_CODE(master().CreateCopyTask(CopyTaskRequest{Name("k"), SegmentId(9), {}}),
                 kNotFound);
  HS_EXPECT_CODE(master().CreateCopyTask(CopyTaskRequest{Name("nope"), SegmentId(2), {}}),
                 kNotFound);
  HS_EXPECT_CODE(master().CreateCopyTask(CopyTaskRequest{Name("k"), SegmentId(2), SegmentId(2)}),
                 kNotFound);  // no replica on that source
  HS_ASSERT_OK(h_.Put("fill", 950, 1, {SegmentId(2)}));
  HS_EXPECT_CODE(master().CreateCopyTask(CopyTaskRequest{Name("k"), SegmentId(2), {}}),
                 kResourceExhausted);
  HS_ASSERT_OK(h_.AddClient(3));
  HS_ASSERT_OK(h_.Mount(3, 3, 1000, "host3", "", /*allocatable=*/false));
  HS_EXPECT_CODE(master().CreateCopyTask(CopyTaskRequest{Name("k"), SegmentId(3), {}}),
                 kFailedPrecondition);
  HS_ASSERT_OK(h_.Start("writing", 10));
  HS_EXPECT_CODE(master().CreateCopyTask(CopyTaskRequest{Name("writing"), SegmentId(2), {}}),
                 kUnavailable);
}

TEST_F(MasterCopyTest, CopyStartEvictsToMakeRoomOnTheTarget) {
  // Fill segment 2 with an old, unleased object, then start the copy.
  HS_ASSERT_OK(h_.Put("old", 900, 1, {SegmentId(2)}));
  const CopyTaskFence fence = CreateAndFetch();
  HS_ASSERT_OK(h_.Put("more", 50, 1, {SegmentId(2)}));  // only 50 free now
  HS_ASSERT_OK(master().CopyStart(ClientId(1), fence));
  HS_EXPECT_CODE(master().GetObjectView(Name("old")), kNotFound);
  HS_EXPECT_OK(master().GetObjectView(Name("k")));  // the copy source stays
  HS_EXPECT_OK(master().CheckInvariants());
}

TEST_F(MasterCopyTest, SourceChoiceIsStableAndNotAlwaysTheFirstReplica) {
  HS_ASSERT_OK(h_.AddStore(3, 100'000));
  HS_ASSERT_OK(h_.AddStore(4, 100'000));
  std::set<SegmentId> sources;
  for (int i = 0; i < 16; ++i) {
    const std::string key = "s" + std::to_string(i);
    HS_ASSERT_OK(h_.Put(key, 10, 2, {SegmentId(3), SegmentId(4)}));
    absl::StatusOr<CopyTaskResponse> t =
        master().CreateCopyTask(CopyTaskRequest{Name(key), SegmentId(2), {}});
    HS_ASSERT_OK(t);
    sources.insert(t->payload.source_segment);
    HS_ASSERT_OK(master().CancelCopyTask(t->task_id));
    // Same inputs, same choice.
    absl::StatusOr<CopyTaskResponse> again =
        master().CreateCopyTask(CopyTaskRequest{Name(key), SegmentId(2), {}});
    HS_ASSERT_OK(again);
    EXPECT_EQ(again->payload.source_segment, t->payload.source_segment);
    HS_ASSERT_OK(master().CancelCopyTask(again->task_id));
  }
  EXPECT_EQ(sources, (std::set<SegmentId>{SegmentId(3), SegmentId(4)}));
}

TEST_F(MasterCopyTest, FetchTasksRespectsBatchAndQueueLimits) {
  const MasterKnobs& k = master().knobs();  // fetch 2, pending 2, processing 2 per client
  HS_ASSERT_OK(h_.AddStore(3, 100'000));
  std::vector<TaskId> ids;
  for (int i = 0; i < 5; ++i) {
    const std::string key = "t" + std::to_string(i);
    HS_ASSERT_OK(h_.Put(key, 10, 1, {SegmentId(1)}));
    absl::StatusOr<CopyTaskResponse> t =
        master().CreateCopyTask(CopyTaskRequest{Name(key), SegmentId(3), {}});
    if (static_cast<int64_t>(ids.size()) < k.pending_tasks_per_client_max) {
      HS_ASSERT_OK(t);
      ids.push_back(t->task_id);
    } else {
      HS_EXPECT_CODE(t, kResourceExhausted);
    }
  }
  HS_EXPECT_CODE(master().FetchTasks(ClientId(1), static_cast<size_t>(k.fetch_tasks_batch_max) + 1),
                 kResourceExhausted);
  HS_EXPECT_CODE(master().FetchTasks(ClientId(1), 0), kInvalidArgument);
  absl::StatusOr<FetchTasksResponse> one = master().FetchTasks(ClientId(1), 1);
  HS_ASSERT_OK(one);
  ASSERT_EQ(one->tasks.size(), 1u);
  EXPECT_EQ(one->tasks[0].id, ids[0]);  // oldest first
  // The pending queue has room again.
  HS_ASSERT_OK(h_.Put("t9", 10, 1, {SegmentId(1)}));
  HS_ASSERT_OK(master().CreateCopyTask(CopyTaskRequest{Name("t9"), SegmentId(3), {}}));
  absl::StatusOr<FetchTasksResponse> rest = master().FetchTasks(ClientId(1), 2);
  HS_ASSERT_OK(rest);
  // processing_tasks_per_client_max (2): only one more fits.
  ASSERT_EQ(rest->tasks.size(), 1u);
  EXPECT_EQ(rest->tasks[0].id, ids[1]);
  EXPECT_TRUE(master().FetchTasks(ClientId(2), 2)->tasks.empty());
  EXPECT_EQ(master().Stats().tasks_processing, 2);
  EXPECT_EQ(master().Stats().tasks_pending, 1);
  HS_EXPECT_OK(master().CheckInvariants());
}

TEST_F(MasterCopyTest, TimedOutCopyIsDiscarded) {
  const CopyTaskFence fence = CreateAndFetch();
  HS_ASSERT_OK(master().CopyStart(ClientId(1), fence));
  const MasterKnobs& k = master().knobs();
  h_.Advance(k.processing_task_timeout_ns() - MsToNs(250));
  EXPECT_TRUE(master().GetTask(fence.task_id).has_value());
  h_.Advance(MsToNs(250) + k.sweep_interval_ns());
  EXPECT_FALSE(master().GetTask(fence.task_id).has_value());
  EXPECT_EQ(master().GetSegment(SegmentId(2))->reserved_bytes, 0u);
  EXPECT_EQ(master().Stats().tasks_timed_out_total, 1);
  ASSERT_EQ(log_.removals.size(), 1u);
  EXPECT_EQ(log_.removals[0].cause, RemovalCause::kCopyTimedOut);
  // The late worker is told the task is gone.
  HS_EXPECT_CODE(master().CopyEnd(ClientId(1), fence), kNotFound);
  HS_EXPECT_CODE(master().MarkTaskComplete(ClientId(1), {fence.task_id, true, ""}), kNotFound);
  // The key is free for a new task.
  HS_EXPECT_OK(master().CreateCopyTask(CopyTaskRequest{Name("k"), SegmentId(2), {}}));
  HS_EXPECT_OK(master().CheckInvariants());
}

TEST_F(MasterCopyTest, UnfetchedTaskTimesOut) {
  HS_ASSERT_OK(master().CreateCopyTask(CopyTaskRequest{Name("k"), SegmentId(2), {}}));
  h_.Advance(master().knobs().pending_task_timeout_ns() + master().knobs().sweep_interval_ns());
  EXPECT_EQ(master().Stats().tasks_pending, 0);
  EXPECT_EQ(master().Stats().tasks_timed_out_total, 1);
  EXPECT_FALSE(master().GetObjectView(Name("k"))->replication_task.valid());
  HS_EXPECT_OK(master().Remove(RemoveRequest{Name("k")}));
}

TEST_F(MasterCopyTest, PlanTasksCarryTheLeaseAndChangeNothingOnFailure) {
  absl::StatusOr<ObjectView> view = master().GetObjectView(Name("k"));
  HS_ASSERT_OK(view);
  const ReplicaId source = view->replicas[0].replica_id;
  CopyPlan plan{Name("k"), version_ + 1, source, SegmentId(2), LeaseId(77)};
  HS_EXPECT_CODE(master().CreateCopyTaskForPlan(plan), kAborted);  // stale version
  plan.version = version_;
  plan.source_replica = ReplicaId(12345);
  HS_EXPECT_CODE(master().CreateCopyTaskForPlan(plan), kAborted);  // no such source
  EXPECT_EQ(master().Stats().tasks_pending, 0);
  EXPECT_FALSE(master().GetObjectView(Name("k"))->replication_task.valid());
  HS_EXPECT_OK(master().CheckInvariants());

  plan.source_replica = source;
  absl::StatusOr<CopyTaskResponse> t = master().CreateCopyTaskForPlan(plan);
  HS_ASSERT_OK(t);
  EXPECT_EQ(t->payload.lease_id, LeaseId(77));
  EXPECT_TRUE(t->payload.leased());
  HS_ASSERT_OK(master().FetchTasks(ClientId(1), 1));
  // Leased tasks take the leased calls only, with the lease in the fence.
  const CopyTaskFence fence{t->task_id, version_, LeaseId(77)};
  HS_EXPECT_CODE(master().CopyStart(ClientId(1), fence), kFailedPrecondition);
  HS_EXPECT_CODE(master().LeasedCopyStart(ClientId(1), CopyTaskFence{t->task_id, version_, {}}),
                 kAborted);
  absl::StatusOr<CopyStartResponse> started = master().LeasedCopyStart(ClientId(1), fence);
  HS_ASSERT_OK(started);
  absl::StatusOr<ObjectView> during = master().GetObjectView(Name("k"));
  ASSERT_EQ(during->replicas.size(), 2u);
  EXPECT_TRUE(during->replicas[1].dynamic);
  EXPECT_EQ(during->replicas[1].lease_id, LeaseId(77));
  HS_EXPECT_CODE(master().CopyEnd(ClientId(1), fence), kFailedPrecondition);
  HS_ASSERT_OK(master().LeasedCopyEnd(ClientId(1), fence));
  EXPECT_EQ(h_.Get("k")->replicas.size(), 2u);
  HS_EXPECT_OK(master().CheckInvariants());
}

TEST_F(MasterCopyTest, OrdinaryTasksRefuseTheLeasedCalls) {
  const CopyTaskFence fence = CreateAndFetch();
  HS_EXPECT_CODE(master().LeasedCopyStart(ClientId(1), fence), kFailedPrecondition);
}

TEST_F(MasterCopyTest, CancelRollsBackAStartedCopy) {
  const CopyTaskFence fence = CreateAndFetch();
  HS_ASSERT_OK(master().CopyStart(ClientId(1), fence));
  HS_ASSERT_OK(master().CancelCopyTask(fence.task_id, RemovalCause::kCopyCancelled));
  HS_EXPECT_CODE(master().CancelCopyTask(fence.task_id), kNotFound);
  EXPECT_EQ(master().GetSegment(SegmentId(2))->reserved_bytes, 0u);
  EXPECT_EQ(master().GetSegmentLoad(SegmentId(1))->copy_tasks_as_source, 0);
  EXPECT_EQ(master().GetSegmentLoad(SegmentId(2))->copies_in_flight_as_target, 0);
  ASSERT_EQ(log_.removals.size(), 1u);
  EXPECT_EQ(log_.removals[0].cause, RemovalCause::kCopyCancelled);
  HS_EXPECT_OK(master().CheckInvariants());
}

TEST_F(MasterCopyTest, UnmountingTheSourceCancelsThePendingTask) {
  HS_ASSERT_OK(master().CreateCopyTask(CopyTaskRequest{Name("k"), SegmentId(2), {}}));
  HS_ASSERT_OK(master().UnmountSegment(ClientId(1), SegmentId(1)));
  EXPECT_EQ(master().Stats().tasks_pending, 0);
  EXPECT_EQ(master().Stats().objects, 0);
  HS_EXPECT_OK(master().CheckInvariants());
}

TEST_F(MasterCopyTest, CopyRespectsTheReplicaLimit) {
  // replicas_per_object_max is 3 in TestMin.
  HS_ASSERT_OK(h_.AddStore(3, 1000));
  HS_ASSERT_OK(h_.AddStore(4, 1000));
  HS_ASSERT_OK(h_.Put("full", 10, 3));
  const std::vector<SegmentId> segs = h_.SegmentsOf(*h_.Get("full"));
  SegmentId spare;
  for (uint64_t id = 1; id <= 4; ++id) {
    if (std::find(segs.begin(), segs.end(), SegmentId(id)) == segs.end()) spare = SegmentId(id);
  }
  ASSERT_TRUE(spare.valid());
  HS_EXPECT_CODE(master().CreateCopyTask(CopyTaskRequest{Name("full"), spare, {}}),
                 kResourceExhausted);
}

}  // namespace
}  // namespace heatsink
