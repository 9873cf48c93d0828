// A StoreWorker completes a dynamic copy end to end: heat on the master's
// read path, background admission, REPLICA_COPY task for the source client,
// FetchTasks -> DynamicReplicaCopyStart -> transfer -> DynamicReplicaCopyEnd
// -> MarkTaskComplete through LocalMasterClient routed to the
// ReplicatedMaster's lease checks; and a failed transfer revokes through the
// same route, leaving the recreate cooldown behind.
#include <deque>
#include <memory>
#include <vector>

#include "core/worker/local_master_client.h"
#include "core/worker/store_worker.h"
#include "gtest/gtest.h"
#include "tests/core/replication/replication_test_util.h"

namespace heatsink {
namespace {

using testing::ReplicationHarness;

constexpr uint64_t kMiB = 1024 * 1024;

// Completes copies when the test says so, with the status it chooses.
class ManualDataMover final : public DataMover {
 public:
  void StartCopy(const CopyRange& range, absl::AnyInvocable<void(absl::Status) &&> done) override {
    ranges.push_back(range);
    pending.push_back(std::move(done));
  }
  void CompleteAll(const absl::Status& status) {
    while (!pending.empty()) {
      auto done = std::move(pending.front());
      pending.pop_front();
      std::move(done)(status);
    }
  }
  std::vector<CopyRange> ranges;
  std::deque<absl::AnyInvocable<void(absl::Status) &&>> pending;
};

class DynamicCopyWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = std::make_unique<LocalMasterClient>(&h_.rm(), h_.env().env()->executor);
    for (uint64_t id : {1, 2}) {
      StoreWorkerOptions o;
      o.client_id = ClientId(id);
      o.host = "h" + std::to_string(id);
      MountSegmentRequest seg;
      seg.segment_id = SegmentId(id);
      seg.name = "seg" + std::to_string(id);
      seg.host = o.host;
      seg.capacity_bytes = kMiB;
      seg.transport_endpoint = "tcp://" + o.host;
      o.segments.push_back(seg);
      o.fetch_batch_max = 4;
      workers_.push_back(std::make_unique<StoreWorker>(h_.env().env(), client_.get(), &mover_, o));
      workers_.back()->Start();
    }
    h_.env().AdvanceBy(MsToNs(10));
    ASSERT_EQ(workers_[0]->state(), StoreWorkerState::kRunning);
    ASSERT_EQ(workers_[1]->state(), StoreWorkerState::kRunning);
    HS_ASSERT_OK(h_.Put("k", 4096, {SegmentId(1)}));
  }
  void TearDown() override {
    for (auto& w : workers_) w->Stop();
    HS_EXPECT_OK(h_.rm().CheckInvariants());
  }

  ReplicationHarness h_;
  ManualDataMover mover_;
  std::unique_ptr<LocalMasterClient> client_;
  std::vector<std::unique_ptr<StoreWorker>> workers_;
};

TEST_F(DynamicCopyWorkerTest, StoreWorkerCompletesADynamicCopyEndToEnd) {
  h_.MakeHot("k");
  ASSERT_TRUE(h_.dr().FindPending(ObjectName{"", "k"}).has_value());
  h_.env().AdvanceBy(MsToNs(150));  // fetch tick, then DynamicReplicaCopyStart
  ASSERT_EQ(mover_.ranges.size(), 1u);
  EXPECT_EQ(mover_.ranges[0].source_segment, SegmentId(1));
  EXPECT_EQ(mover_.ranges[0].target_segment, SegmentId(2));
  EXPECT_EQ(mover_.ranges[0].size_bytes, 4096u);
  EXPECT_EQ(h_.dr().FindPending(ObjectName{"", "k"})->phase, PendingPhase::kInFlight);
  mover_.CompleteAll(absl::OkStatus());
  h_.env().RunUntilIdle();  // DynamicReplicaCopyEnd, MarkTaskComplete
  EXPECT_EQ(workers_[0]->stats().dynamic_tasks, 1);
  EXPECT_EQ(workers_[0]->stats().copies_completed, 1);
  EXPECT_EQ(workers_[0]->stats().tasks_reported, 1);
  EXPECT_FALSE(h_.dr().FindPending(ObjectName{"", "k"}).has_value());
  ASSERT_EQ(h_.dr().DynamicReplicas().size(), 1u);
  absl::StatusOr<GetReplicaListResponse> r = h_.Read("k");
  HS_ASSERT_OK(r);
  ASSERT_EQ(r->replicas.size(), 2u);
  EXPECT_TRUE(r->replicas[1].dynamic);
  EXPECT_EQ(h_.master().Stats().tasks_pending + h_.master().Stats().tasks_processing, 0);
  EXPECT_EQ(h_.SyncMetrics().Value("dynamic_replication_copy_tasks_completed_total"), 1);
}

TEST_F(DynamicCopyWorkerTest, FailedTransferRevokesThroughTheDynamicCalls) {
  h_.MakeHot("k");
  h_.env().AdvanceBy(MsToNs(150));
  ASSERT_EQ(mover_.pending.size(), 1u);
  mover_.CompleteAll(absl::UnavailableError("link down"));
  h_.env().RunUntilIdle();
  EXPECT_EQ(workers_[0]->stats().copies_failed, 1);
  EXPECT_FALSE(h_.dr().FindPending(ObjectName{"", "k"}).has_value());
  EXPECT_TRUE(h_.dr().DynamicReplicas().empty());
  EXPECT_EQ(h_.SyncMetrics().Value("dynamic_replication_copy_tasks_revoked_total"), 1);
  EXPECT_TRUE(h_.dr().RecreateCooldownActive(ObjectName{"", "k"}));
  EXPECT_EQ(h_.master().GetSegment(SegmentId(2))->reserved_bytes, 0u);
}

}  // namespace
}  // namespace heatsink
