// Covers copy pacing in FetchTasks (copy_budget_per_source_bytes,
// copy_budget_per_trunk_bytes): a second copy from the same source host stays
// pending until the first ends; the trunk budget counts copies from one
// domain to another and neither copies within a domain nor the other
// direction; an object larger than a budget goes through alone and the next
// one follows (no deadlock); the bytes are released exactly once on CopyEnd,
// CopyRevoke, a processing timeout, a failed report before CopyStart, an
// unmount and a client's expiry; a task held back keeps its pending
// timeout fresh while its client keeps fetching and expires once it stops;
// the metrics (bytes in flight, deferred fetches). The master's CheckInvariants recounts the
// budgets from the tasks after every step.
#include "gtest/gtest.h"
#include "tests/core/master/master_test_util.h"

namespace heatsink {
namespace {

using testing::MasterHarness;
using testing::Name;

MasterKnobs PacingKnobs(int64_t source_bytes, int64_t trunk_bytes) {
  MasterKnobs k = testing::TestKnobs();
  k.copy_budget_per_source_bytes = source_bytes;
  k.copy_budget_per_trunk_bytes = trunk_bytes;
  // Tasks held back must not time out while they wait in these tests.
  k.pending_task_timeout_sec = 60;
  return k;
}

class MasterCopyPacingTest : public ::testing::Test {
 protected:
  // Stores 1 and 2 in domain "a", 3 and 4 in domain "b"; each store is its
  // own client, host and segment (id 1..4), 1000 bytes.
  void Build(const MasterKnobs& knobs) {
    h_ = std::make_unique<MasterHarness>(knobs);
    ASSERT_TRUE(h_->AddStore(1, 1000, "", "a").ok());
    ASSERT_TRUE(h_->AddStore(2, 1000, "", "a").ok());
    ASSERT_TRUE(h_->AddStore(3, 1000, "", "b").ok());
    ASSERT_TRUE(h_->AddStore(4, 1000, "", "b").ok());
  }

  // Puts `key` (`size` bytes) on `segment` and creates its copy to `target`.
  TaskId PutAndCopy(const std::string& key, uint64_t size, uint64_t segment, uint64_t target) {
    absl::StatusOr<Version> v = h_->Put(key, size, 1, {SegmentId(segment)});
    EXPECT_TRUE(v.ok()) << v.status();
    absl::StatusOr<CopyTaskResponse> t =
        master().CreateCopyTask(CopyTaskRequest{Name(key), SegmentId(target), {}});
    EXPECT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(t->payload.source_segment, SegmentId(segment));
    return t.ok() ? t->task_id : TaskId();
  }

  std::vector<TaskId> Fetch(uint64_t client) {
    absl::StatusOr<FetchTasksResponse> f = master().FetchTasks(ClientId(client), 2);
    EXPECT_TRUE(f.ok()) << f.status();
    std::vector<TaskId> ids;
    if (f.ok()) {
      for (const Task& t : f->tasks) ids.push_back(t.id);
    }
    EXPECT_TRUE(master().CheckInvariants().ok()) << master().CheckInvariants();
    return ids;
  }

  CopyTaskFence FenceOf(TaskId id) {
    std::optional<Task> t = master().GetTask(id);
    EXPECT_TRUE(t.has_value());
    return CopyTaskFence{id, t.has_value() ? t->copy.version : 0, {}};
  }

  // CopyStart, CopyEnd and a successful report.
  void RunCopy(uint64_t client, TaskId id) {
    const CopyTaskFence fence = FenceOf(id);
    HS_ASSERT_OK(master().CopyStart(ClientId(client), fence));
    HS_ASSERT_OK(master().CopyEnd(ClientId(client), fence));
    HS_ASSERT_OK(master().MarkTaskComplete(ClientId(client), {id, true, ""}));
    HS_EXPECT_OK(master().CheckInvariants());
  }

  MasterService& master() { return h_->master(); }
  int64_t InFlight() { return master().Stats().copy_bytes_in_flight; }

  std::unique_ptr<MasterHarness> h_;
};

TEST_F(MasterCopyPacingTest, SecondCopyFromTheSameSourceWaitsForTheFirst) {
  Build(PacingKnobs(/*source_bytes=*/150, /*trunk_bytes=*/int64_t{1} << 40));
  const TaskId x = PutAndCopy("x", 100, 1, 2);
  const TaskId y = PutAndCopy("y", 100, 1, 3);
  EXPECT_EQ(Fetch(1), std::vector<TaskId>{x});
  EXPECT_EQ(InFlight(), 100);
  EXPECT_EQ(master().Stats().copy_fetches_deferred_total, 1);
  EXPECT_EQ(master().Stats().tasks_pending, 1);

  const CopyTaskFence fence = FenceOf(x);
  HS_ASSERT_OK(master().CopyStart(ClientId(1), fence));
  EXPECT_TRUE(Fetch(1).empty());  // started, still in flight
  HS_ASSERT_OK(master().CopyEnd(ClientId(1), fence));
  EXPECT_EQ(InFlight(), 0);
  // The bytes went with CopyEnd; the report does not release them again.
  EXPECT_EQ(Fetch(1), std::vector<TaskId>{y});
  HS_ASSERT_OK(master().MarkTaskComplete(ClientId(1), {x, true, ""}));
  EXPECT_EQ(InFlight(), 100);
  RunCopy(1, y);
  EXPECT_EQ(InFlight(), 0);
  EXPECT_EQ(master().Stats().copies_completed_total, 2);
}

TEST_F(MasterCopyPacingTest, ObjectsThatFitTogetherGoTogether) {
  Build(PacingKnobs(/*source_bytes=*/200, /*trunk_bytes=*/200));
  const TaskId x = PutAndCopy("x", 100, 1, 3);
  const TaskId y = PutAndCopy("y", 100, 1, 4);
  EXPECT_EQ(Fetch(1), (std::vector<TaskId>{x, y}));
  EXPECT_EQ(InFlight(), 200);
  EXPECT_EQ(master().Stats().copy_fetches_deferred_total, 0);
}

TEST_F(MasterCopyPacingTest, TrunkBudgetCountsOneDirectionBetweenDomains) {
  Build(PacingKnobs(/*source_bytes=*/int64_t{1} << 40, /*trunk_bytes=*/150));
  const TaskId ab1 = PutAndCopy("ab1", 100, 1, 3);  // a -> b from host 1
  const TaskId ab2 = PutAndCopy("ab2", 100, 2, 4);  // a -> b from host 2
  const TaskId aa = PutAndCopy("aa", 100, 2, 1);    // within a: not a trunk copy
  const TaskId ba = PutAndCopy("ba", 100, 3, 2);    // b -> a: the other direction
  EXPECT_EQ(Fetch(1), std::vector<TaskId>{ab1});
  // Host 2's a -> b copy waits for the trunk; its copy within a goes.
  EXPECT_EQ(Fetch(2), std::vector<TaskId>{aa});
  EXPECT_EQ(Fetch(3), std::vector<TaskId>{ba});
  EXPECT_EQ(InFlight(), 300);
  EXPECT_EQ(master().Stats().copy_fetches_deferred_total, 1);
  RunCopy(1, ab1);
  EXPECT_EQ(Fetch(2), std::vector<TaskId>{ab2});
  RunCopy(2, ab2);
  RunCopy(2, aa);
  RunCopy(3, ba);
  EXPECT_EQ(InFlight(), 0);
}

TEST_F(MasterCopyPacingTest, ObjectLargerThanTheBudgetsGoesAloneAndTheNextFollows) {
  Build(PacingKnobs(/*source_bytes=*/50, /*trunk_bytes=*/50));
  const TaskId x = PutAndCopy("x", 100, 1, 3);
  const TaskId y = PutAndCopy("y", 100, 1, 4);
  EXPECT_EQ(Fetch(1), std::vector<TaskId>{x});  // alone: nothing was in flight
  EXPECT_EQ(InFlight(), 100);
  EXPECT_TRUE(Fetch(1).empty());
  RunCopy(1, x);
  EXPECT_EQ(Fetch(1), std::vector<TaskId>{y});
  RunCopy(1, y);
  EXPECT_EQ(master().Stats().copies_completed_total, 2);
  EXPECT_EQ(h_->Get("x")->replicas.size(), 2u);
  EXPECT_EQ(h_->Get("y")->replicas.size(), 2u);
  EXPECT_EQ(InFlight(), 0);
}

TEST_F(MasterCopyPacingTest, DeferredTaskKeepsItsPlaceBeforeLaterTasksOfItsSource) {
  Build(PacingKnobs(/*source_bytes=*/150, /*trunk_bytes=*/int64_t{1} << 40));
  const TaskId big = PutAndCopy("big", 100, 1, 2);
  EXPECT_EQ(Fetch(1), std::vector<TaskId>{big});
  const TaskId next = PutAndCopy("next", 100, 1, 3);
  const TaskId small = PutAndCopy("small", 10, 1, 4);
  // "small" would fit next to "big", but "next" of the same source waits
  // first: first in, first out per source.
  EXPECT_TRUE(Fetch(1).empty());
  EXPECT_EQ(master().Stats().copy_fetches_deferred_total, 2);
  RunCopy(1, big);
  EXPECT_EQ(Fetch(1), (std::vector<TaskId>{next, small}));
}

TEST_F(MasterCopyPacingTest, RevokeReleasesTheBytes) {
  Build(PacingKnobs(150, 150));
  const TaskId x = PutAndCopy("x", 100, 1, 3);
  const TaskId y = PutAndCopy("y", 100, 1, 4);
  EXPECT_EQ(Fetch(1), std::vector<TaskId>{x});
  const CopyTaskFence fence = FenceOf(x);
  HS_ASSERT_OK(master().CopyStart(ClientId(1), fence));
  HS_ASSERT_OK(master().CopyRevoke(ClientId(1), fence));
  EXPECT_EQ(InFlight(), 0);
  EXPECT_EQ(Fetch(1), std::vector<TaskId>{y});
  HS_ASSERT_OK(master().MarkTaskComplete(ClientId(1), {x, false, "revoked"}));
  EXPECT_EQ(InFlight(), 100);  // y only: x's bytes went once
  HS_EXPECT_OK(master().CheckInvariants());
}

TEST_F(MasterCopyPacingTest, TimeoutReleasesTheBytes) {
  Build(PacingKnobs(150, 150));
  const TaskId x = PutAndCopy("x", 100, 1, 3);
  const TaskId y = PutAndCopy("y", 100, 1, 4);
  EXPECT_EQ(Fetch(1), std::vector<TaskId>{x});
  HS_ASSERT_OK(master().CopyStart(ClientId(1), FenceOf(x)));
  const MasterKnobs& k = master().knobs();
  h_->Advance(k.processing_task_timeout_ns() + k.sweep_interval_ns());
  EXPECT_FALSE(master().GetTask(x).has_value());
  EXPECT_EQ(master().Stats().tasks_timed_out_total, 1);
  EXPECT_EQ(InFlight(), 0);
  EXPECT_EQ(Fetch(1), std::vector<TaskId>{y});
  RunCopy(1, y);
  EXPECT_EQ(InFlight(), 0);
}

TEST_F(MasterCopyPacingTest, AHeldBackTaskExpiresOnlyOnceItsClientStopsFetching) {
  MasterKnobs knobs = PacingKnobs(150, 150);
  knobs.pending_task_timeout_sec = 2;
  knobs.processing_task_timeout_sec = 600;
  Build(knobs);
  const TaskId x = PutAndCopy("x", 100, 1, 3);
  const TaskId y = PutAndCopy("y", 100, 1, 4);
  EXPECT_EQ(Fetch(1), std::vector<TaskId>{x});
  HS_ASSERT_OK(master().CopyStart(ClientId(1), FenceOf(x)));
  // x copies for 5 s; y, held back each second, outlives its 2 s pending
  // timeout counted from creation.
  for (int second = 0; second < 5; ++second) {
    h_->Advance(SecToNs(1));
    EXPECT_TRUE(Fetch(1).empty());
  }
  EXPECT_TRUE(master().GetTask(y).has_value());
  EXPECT_EQ(master().Stats().tasks_timed_out_total, 0);
  EXPECT_EQ(master().Stats().copy_fetches_deferred_total, 6);
  // The client stops fetching: 2 s after the last fetch that held y back, y
  // times out; x (processing) does not.
  h_->Advance(SecToNs(2) + master().knobs().sweep_interval_ns());
  EXPECT_FALSE(master().GetTask(y).has_value());
  EXPECT_TRUE(master().GetTask(x).has_value());
  EXPECT_EQ(master().Stats().tasks_timed_out_total, 1);
  EXPECT_EQ(InFlight(), 100);
  HS_EXPECT_OK(master().CheckInvariants());
}

TEST_F(MasterCopyPacingTest, FailedReportBeforeCopyStartReleasesTheBytes) {
  Build(PacingKnobs(150, 150));
  const TaskId x = PutAndCopy("x", 100, 1, 3);
  const TaskId y = PutAndCopy("y", 100, 1, 4);
  EXPECT_EQ(Fetch(1), std::vector<TaskId>{x});
  HS_ASSERT_OK(master().MarkTaskComplete(ClientId(1), {x, false, "no route"}));
  EXPECT_EQ(InFlight(), 0);
  EXPECT_EQ(Fetch(1), std::vector<TaskId>{y});
}

TEST_F(MasterCopyPacingTest, UnmountReleasesTheBytes) {
  Build(PacingKnobs(150, 150));
  const TaskId x = PutAndCopy("x", 100, 1, 3);
  const TaskId y = PutAndCopy("y", 100, 1, 4);
  EXPECT_EQ(Fetch(1), std::vector<TaskId>{x});
  HS_ASSERT_OK(master().CopyStart(ClientId(1), FenceOf(x)));
  // The target goes away: its tasks are cancelled.
  HS_ASSERT_OK(master().UnmountSegment(ClientId(3), SegmentId(3)));
  EXPECT_FALSE(master().GetTask(x).has_value());
  EXPECT_EQ(InFlight(), 0);
  EXPECT_EQ(Fetch(1), std::vector<TaskId>{y});
  HS_EXPECT_OK(master().CheckInvariants());
}

TEST_F(MasterCopyPacingTest, ClientExpiryReleasesTheBytes) {
  Build(PacingKnobs(int64_t{1} << 40, /*trunk_bytes=*/150));
  const TaskId first = PutAndCopy("first", 100, 2, 3);  // a -> b from host 2
  const TaskId next = PutAndCopy("next", 100, 1, 4);    // a -> b from host 1
  EXPECT_EQ(Fetch(2), std::vector<TaskId>{first});
  HS_ASSERT_OK(master().CopyStart(ClientId(2), FenceOf(first)));
  EXPECT_TRUE(Fetch(1).empty());
  // Host 2's store dies: the sweep unmounts its segment and drops its task.
  h_->StopHeartbeats(2);
  h_->Advance(master().knobs().client_live_ttl_ns() + 2 * master().knobs().sweep_interval_ns());
  EXPECT_FALSE(master().GetTask(first).has_value());
  EXPECT_EQ(InFlight(), 0);
  EXPECT_EQ(Fetch(1), std::vector<TaskId>{next});
  RunCopy(1, next);
}

TEST_F(MasterCopyPacingTest, SourceBudgetCountsTheHostNotTheSegment) {
  h_ = std::make_unique<MasterHarness>(PacingKnobs(150, int64_t{1} << 40));
  // Two stores (clients 1 and 2) on one host "h", one elsewhere.
  ASSERT_TRUE(h_->AddStore(1, 1000, "h", "a").ok());
  ASSERT_TRUE(h_->AddStore(2, 1000, "h", "a").ok());
  ASSERT_TRUE(h_->AddStore(3, 1000, "", "a").ok());
  const TaskId x = PutAndCopy("x", 100, 1, 3);
  const TaskId y = PutAndCopy("y", 100, 2, 3);
  EXPECT_EQ(Fetch(1), std::vector<TaskId>{x});
  EXPECT_TRUE(Fetch(2).empty());
  RunCopy(1, x);
  EXPECT_EQ(Fetch(2), std::vector<TaskId>{y});
}

}  // namespace
}  // namespace heatsink
