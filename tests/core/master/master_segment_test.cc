// Covers clients and segments: registration and heartbeats, mounting
// (registered owner, idempotent, conflicting parameters), unmounting
// (idempotent, owner only, drops replicas, deletes objects left with none,
// draining,
// cancels copies that use the segment), the sweep that unmounts a dead
// client's segments, stuck-put reaping with the discard and release timeouts,
// and the segment views and load counters.
#include "gtest/gtest.h"
#include "tests/core/master/master_test_util.h"

namespace heatsink {
namespace {

using testing::MasterHarness;
using testing::Name;
using testing::RemovalLog;

TEST(MasterSegments, MountRequiresARegisteredClientAndIsIdempotent) {
  MasterHarness h;
  HS_EXPECT_CODE(h.Mount(1, 1, 1000), kNotFound);
  HS_ASSERT_OK(h.AddClient(1));
  HS_ASSERT_OK(h.Mount(1, 1, 1000));
  HS_EXPECT_OK(h.Mount(1, 1, 1000));  // identical: fine
  HS_EXPECT_CODE(h.Mount(1, 1, 2000), kAlreadyExists);
  HS_ASSERT_OK(h.AddClient(2));
  HS_EXPECT_CODE(h.Mount(2, 1, 1000), kAlreadyExists);  // someone else's id
  HS_EXPECT_CODE(h.Mount(1, 2, 0), kInvalidArgument);
  HS_EXPECT_CODE(h.Mount(1, 0, 10), kInvalidArgument);
  EXPECT_EQ(h.master().ListSegments().size(), 1u);
}

TEST(MasterSegments, ViewsDescribeSegments) {
  MasterHarness h;
  HS_ASSERT_OK(h.AddStore(2, 2000, "hostB", "rackB"));
  HS_ASSERT_OK(h.AddStore(1, 1000, "hostA", ""));
  HS_ASSERT_OK(h.Put("k", 100, 1, {SegmentId(1)}));
  const std::vector<SegmentView> views = h.master().ListSegments();
  ASSERT_EQ(views.size(), 2u);
  EXPECT_EQ(views[0].location.id, SegmentId(1));  // ascending id
  EXPECT_EQ(views[0].location.domain, "default");
  EXPECT_EQ(views[0].location.host, "hostA");
  EXPECT_EQ(views[0].location.owner, ClientId(1));
  EXPECT_EQ(views[0].used_bytes, 100u);
  EXPECT_EQ(views[0].free_bytes, 900u);
  EXPECT_EQ(views[0].replica_count, 1);
  EXPECT_EQ(views[1].location.domain, "rackB");
  EXPECT_EQ(views[1].capacity_bytes, 2000u);

  HS_ASSERT_OK(h.Get("k"));
  HS_ASSERT_OK(h.Get("k"));
  EXPECT_EQ(h.master().GetSegmentLoad(SegmentId(1))->replica_lists_served_total, 2);
  EXPECT_EQ(h.master().GetSegmentLoad(SegmentId(2))->replica_lists_served_total, 0);
  EXPECT_FALSE(h.master().GetSegmentLoad(SegmentId(9)).has_value());
}

TEST(MasterSegments, UnmountIsIdempotentAndOwnerOnly) {
  MasterHarness h;
  HS_ASSERT_OK(h.AddStore(1, 1000));
  HS_ASSERT_OK(h.AddClient(2));
  HS_EXPECT_CODE(h.master().UnmountSegment(ClientId(2), SegmentId(1)), kPermissionDenied);
  HS_EXPECT_OK(h.master().UnmountSegment(ClientId(1), SegmentId(1)));
  HS_EXPECT_OK(h.master().UnmountSegment(ClientId(1), SegmentId(1)));
  HS_EXPECT_OK(h.master().UnmountSegment(ClientId(1), SegmentId(77)));
  EXPECT_TRUE(h.master().ListSegments().empty());
  // Mounting again after an unmount works.
  HS_EXPECT_OK(h.Mount(1, 1, 1000));
}

TEST(MasterSegments, DrainedSegmentKeepsReplicasReadableButTakesNothingNew) {
  MasterHarness h;
  HS_ASSERT_OK(h.AddStore(1, 1000));
  HS_ASSERT_OK(h.AddStore(2, 1000));
  HS_ASSERT_OK(h.Put("k", 100, 1, {SegmentId(1)}));
  HS_EXPECT_CODE(h.master().SetSegmentAllocatable(ClientId(2), SegmentId(1), false),
                 kPermissionDenied);
  HS_EXPECT_CODE(h.master().SetSegmentAllocatable(ClientId(1), SegmentId(9), false), kNotFound);
  HS_EXPECT_CODE(h.master().SetSegmentAllocatable(ClientId(1), SegmentId(), false),
                 kInvalidArgument);
  HS_ASSERT_OK(h.master().SetSegmentAllocatable(ClientId(1), SegmentId(1), false));
  EXPECT_FALSE(h.master().GetSegment(SegmentId(1))->allocatable);
  // Its replica stays readable.
  absl::StatusOr<GetReplicaListResponse> got = h.Get("k");
  HS_ASSERT_OK(got);
  ASSERT_EQ(got->replicas.size(), 1u);
  // New puts go elsewhere, even when they prefer the drained segment.
  HS_ASSERT_OK(h.Put("new", 100, 1, {SegmentId(1)}));
  EXPECT_EQ(h.master().GetSegment(SegmentId(1))->replica_count, 1);
  EXPECT_EQ(h.master().GetSegment(SegmentId(2))->replica_count, 1);
  // The operator (an invalid client id) may undrain any segment.
  HS_ASSERT_OK(h.master().SetSegmentAllocatable(ClientId(), SegmentId(1), true));
  EXPECT_TRUE(h.master().GetSegment(SegmentId(1))->allocatable);
  HS_ASSERT_OK(h.Put("after", 100, 1, {SegmentId(1)}));
  EXPECT_EQ(h.master().GetSegment(SegmentId(1))->replica_count, 2);
  HS_EXPECT_OK(h.master().CheckInvariants());
}

TEST(MasterSegments, UnmountDropsReplicasAndObjectsLeftWithNone) {
  MasterHarness h;
  RemovalLog log;
  h.master().SetReplicaRemovalObserver(&log);
  HS_ASSERT_OK(h.AddStore(1, 1000));
  HS_ASSERT_OK(h.AddStore(2, 1000));
  HS_ASSERT_OK(h.Put("only-on-1", 100, 1, {SegmentId(1)}));
  HS_ASSERT_OK(h.Put("on-both", 100, 2));
  HS_ASSERT_OK(h.Get("on-both"));  // a read lease does not keep an unmounted replica

  HS_ASSERT_OK(h.master().UnmountSegment(ClientId(1), SegmentId(1)));
  HS_EXPECT_CODE(h.Get("only-on-1"), kNotFound);
  absl::StatusOr<GetReplicaListResponse> both = h.Get("on-both");
  HS_ASSERT_OK(both);
  EXPECT_EQ(h.SegmentsOf(*both), std::vector<SegmentId>{SegmentId(2)});
  ASSERT_EQ(log.removals.size(), 2u);
  for (const ReplicaRemoval& r : log.removals) {
    EXPECT_EQ(r.cause, RemovalCause::kUnmount);
    EXPECT_EQ(r.replica.segment_id, SegmentId(1));
    EXPECT_EQ(r.object_deleted, r.name.key == "only-on-1");
  }
  EXPECT_EQ(h.master().Stats().objects, 1);
  HS_EXPECT_OK(h.master().CheckInvariants());
}

TEST(MasterSegments, UnmountCancelsCopiesThatUseTheSegment) {
  MasterHarness h;
  HS_ASSERT_OK(h.AddStore(1, 1000));
  HS_ASSERT_OK(h.AddStore(2, 1000));
  HS_ASSERT_OK(h.Put("k", 100, 1, {SegmentId(1)}));
  absl::StatusOr<CopyTaskResponse> task =
      h.master().CreateCopyTask(CopyTaskRequest{Name("k"), SegmentId(2), {}});
  HS_ASSERT_OK(task);
  HS_ASSERT_OK(h.master().FetchTasks(ClientId(1), 1));
  const CopyTaskFence fence{task->task_id, task->payload.version, {}};
  HS_ASSERT_OK(h.master().CopyStart(ClientId(1), fence));
  EXPECT_EQ(h.master().GetSegment(SegmentId(2))->reserved_bytes, 100u);
  // The target goes away mid-copy: the task is cancelled, the reservation
  // freed, and the source object keeps its replica.
  HS_ASSERT_OK(h.master().UnmountSegment(ClientId(2), SegmentId(2)));
  EXPECT_FALSE(h.master().GetTask(task->task_id).has_value());
  HS_EXPECT_CODE(h.master().CopyEnd(ClientId(1), fence), kNotFound);
  HS_EXPECT_OK(h.Get("k"));
  EXPECT_FALSE(h.master().GetObjectView(Name("k"))->replication_task.valid());
  EXPECT_EQ(h.master().Stats().tasks_cancelled_total, 1);
  HS_EXPECT_OK(h.master().CheckInvariants());
}

TEST(MasterClients, HeartbeatsKeepAClientAlive) {
  MasterHarness h;
  HS_ASSERT_OK(h.AddStore(1, 1000));
  HS_ASSERT_OK(h.Put("k", 10));
  h.Advance(SecToNs(4 * h.master().knobs().client_live_ttl_sec));
  HS_EXPECT_OK(h.Get("k"));
  HS_EXPECT_OK(h.master().Heartbeat(ClientId(1)));
  HS_EXPECT_CODE(h.master().Heartbeat(ClientId(99)), kNotFound);
}

TEST(MasterClients, DeadClientsReplicasAreGone) {
  MasterHarness h;
  RemovalLog log;
  h.master().SetReplicaRemovalObserver(&log);
  HS_ASSERT_OK(h.AddStore(1, 1000));
  HS_ASSERT_OK(h.AddStore(2, 1000));
  HS_ASSERT_OK(h.Put("on-1", 100, 1, {SegmentId(1)}));
  HS_ASSERT_OK(h.Put("on-2", 100, 1, {SegmentId(2)}));
  h.StopHeartbeats(1);
  const DurationNs ttl = h.master().knobs().client_live_ttl_ns();
  h.Advance(ttl - MsToNs(300));
  HS_EXPECT_OK(h.Get("on-1"));  // not yet
  h.Advance(MsToNs(300) + h.master().knobs().sweep_interval_ns());
  HS_EXPECT_CODE(h.Get("on-1"), kNotFound);
  HS_EXPECT_OK(h.Get("on-2"));
  EXPECT_FALSE(h.master().GetSegment(SegmentId(1)).has_value());
  ASSERT_EQ(log.removals.size(), 1u);
  EXPECT_EQ(log.removals[0].cause, RemovalCause::kClientDead);
  EXPECT_EQ(h.master().Stats().clients_reaped_total, 1);
  // The dead client learns it must register again.
  HS_EXPECT_CODE(h.master().Heartbeat(ClientId(1)), kNotFound);
  HS_EXPECT_CODE(h.Mount(1, 1, 1000), kNotFound);
  HS_ASSERT_OK(h.AddClient(1));
  HS_EXPECT_OK(h.Mount(1, 1, 1000));
  HS_EXPECT_OK(h.master().CheckInvariants());
}

TEST(MasterPuts, StuckPutIsDiscardedThenReleased) {
  MasterHarness h;
  RemovalLog log;
  h.master().SetReplicaRemovalObserver(&log);
  HS_ASSERT_OK(h.AddStore(1, 1000));
  absl::StatusOr<PutStartResponse> stuck = h.Start("k", 300);
  HS_ASSERT_OK(stuck);
  const MasterKnobs& k = h.master().knobs();
  h.Advance(k.put_start_discard_timeout_ns() - MsToNs(250));
  HS_EXPECT_CODE(h.Start("k", 300), kAlreadyExists);  // still within its window
  h.Advance(MsToNs(250) + k.sweep_interval_ns());
  // Discarded: the key is free, the writer can no longer finish, but the
  // bytes stay allocated until the release timeout.
  HS_EXPECT_CODE(h.master().PutEnd(ClientId(100), PutEndRequest{Name("k"), stuck->version}),
                 kNotFound);
  EXPECT_EQ(h.master().Stats().puts_discarded_total, 1);
  EXPECT_EQ(h.master().Stats().discarded_puts, 1);
  EXPECT_EQ(h.master().GetSegment(SegmentId(1))->used_bytes, 300u);
  ASSERT_EQ(log.removals.size(), 1u);
  EXPECT_EQ(log.removals[0].cause, RemovalCause::kPutDiscarded);
  HS_EXPECT_OK(h.master().CheckInvariants());

  absl::StatusOr<PutStartResponse> again = h.Start("k", 300);
  HS_ASSERT_OK(again);
  EXPECT_GT(again->version, stuck->version);
  EXPECT_NE(again->replicas[0].offset, stuck->replicas[0].offset);  // old bytes still held
  HS_ASSERT_OK(h.master().PutEnd(ClientId(100), PutEndRequest{Name("k"), again->version}));

  h.Advance(k.put_start_release_timeout_ns() - k.put_start_discard_timeout_ns());
  EXPECT_EQ(h.master().Stats().discarded_puts, 0);
  EXPECT_EQ(h.master().GetSegment(SegmentId(1))->used_bytes, 300u);
  HS_EXPECT_OK(h.master().CheckInvariants());
}

// The sweep skips a shard until its oldest put could be stuck; a put that
// starts after a sweep looked (and found the older ones finished) is still
// discarded at its own timeout, and one still within it is not.
TEST(MasterPuts, StuckPutStartedAfterASweepIsStillDiscarded) {
  MasterKnobs knobs = testing::TestKnobs();
  knobs.metadata_shards = 1;  // every put in the same shard
  MasterHarness h(knobs);
  HS_ASSERT_OK(h.AddStore(1, 10'000));
  const DurationNs timeout = knobs.put_start_discard_timeout_ns();
  absl::StatusOr<PutStartResponse> a = h.Start("a", 100);
  HS_ASSERT_OK(a);
  h.Advance(timeout / 2);
  absl::StatusOr<PutStartResponse> b = h.Start("b", 100);
  HS_ASSERT_OK(b);
  HS_ASSERT_OK(h.master().PutEnd(ClientId(100), PutEndRequest{Name("a"), a->version}));
  // The shard is scanned once a's start is a timeout old: nothing is stuck.
  h.Advance(timeout / 2 + knobs.sweep_interval_ns());
  EXPECT_EQ(h.master().Stats().puts_discarded_total, 0);
  absl::StatusOr<PutStartResponse> c = h.Start("c", 100);
  HS_ASSERT_OK(c);
  HS_EXPECT_OK(h.master().CheckInvariants());
  // b's timeout passes: b is discarded, c (younger) is not.
  h.Advance(timeout / 2 + knobs.sweep_interval_ns());
  EXPECT_EQ(h.master().Stats().puts_discarded_total, 1);
  HS_EXPECT_CODE(h.master().PutEnd(ClientId(100), PutEndRequest{Name("b"), b->version}), kNotFound);
  HS_EXPECT_OK(h.master().CheckInvariants());
  // Then c's.
  h.Advance(timeout);
  EXPECT_EQ(h.master().Stats().puts_discarded_total, 2);
  HS_EXPECT_CODE(h.master().PutEnd(ClientId(100), PutEndRequest{Name("c"), c->version}), kNotFound);
  HS_EXPECT_OK(h.master().CheckInvariants());
}

TEST(MasterPuts, PutStartOverAnExpiredPutDiscardsItAtOnce) {
  MasterKnobs knobs = testing::TestKnobs();
  knobs.sweep_interval_ms = 3'600'000;  // keep the sweep out of the way
  MasterHarness h(knobs);
  HS_ASSERT_OK(h.AddStore(1, 1000));
  absl::StatusOr<PutStartResponse> stuck = h.Start("k", 100);
  HS_ASSERT_OK(stuck);
  h.Advance(knobs.put_start_discard_timeout_ns());
  absl::StatusOr<PutStartResponse> again = h.Start("k", 100);
  HS_ASSERT_OK(again);
  EXPECT_EQ(h.master().Stats().puts_discarded_total, 1);
  EXPECT_EQ(h.master().GetSegment(SegmentId(1))->used_bytes, 200u);
  HS_EXPECT_OK(h.master().CheckInvariants());
}

TEST(MasterPuts, DiscardedPutsMaxBoundsTheDiscardTable) {
  MasterKnobs knobs = testing::TestKnobs();  // discarded_puts_max 2
  MasterHarness h(knobs);
  HS_ASSERT_OK(h.AddStore(1, 1000));
  for (const char* key : {"a", "b", "c"}) HS_ASSERT_OK(h.Start(key, 10));
  h.Advance(knobs.put_start_discard_timeout_ns() + knobs.sweep_interval_ns());
  EXPECT_EQ(h.master().Stats().discarded_puts, knobs.discarded_puts_max);
  // The third stays until the table has room (after the release timeout).
  HS_EXPECT_CODE(h.Start("c", 10), kResourceExhausted);
  h.Advance(knobs.put_start_release_timeout_ns());
  EXPECT_EQ(h.master().Stats().puts_discarded_total, 3);
  HS_EXPECT_OK(h.Start("c", 10));
  HS_EXPECT_OK(h.master().CheckInvariants());
}

}  // namespace
}  // namespace heatsink
