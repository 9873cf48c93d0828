// Covers the store worker state machine against a real master (a
// ReplicatedMaster, dynamic replication off unless a test turns it on)
// through LocalMasterClient: registration and mounting, the full copy loop
// (CopyStart -> DataMover -> CopyEnd -> MarkTaskComplete) with a fake
// DataMover, revoke on a failed transfer, a failed CopyStart, fetch batch and
// in-flight limits, heartbeats keeping the client alive, re-registration after
// the master reaped it, the Dynamic* dispatch for leased tasks, and late
// callbacks after the worker is gone. Also checks that LocalMasterClient never
// runs a callback inside the call.
#include "core/worker/store_worker.h"

#include <deque>
#include <iterator>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/env/manual_env.h"
#include "core/master/master_service.h"
#include "core/replication/replicated_master.h"
#include "core/worker/local_master_client.h"
#include "gtest/gtest.h"
#include "tests/core/master/master_test_util.h"
#include "tests/core/replication/replicated_master_test_peer.h"
#include "tests/core/worker/forwarding_master_client.h"

namespace heatsink {
namespace {

using testing::Name;

// A master with the master tests' knobs and dynamic replication off.
std::unique_ptr<ReplicatedMaster> NewMaster(ManualEnv& env) {
  absl::StatusOr<std::unique_ptr<ReplicatedMaster>> m =
      ReplicatedMaster::Create(env.env(), testing::TestKnobs(), ReplicationKnobs(), nullptr);
  HS_CHECK_OK(m.status());
  return *std::move(m);
}

// Records copies; completes them when the test says so, with the status the
// test chooses.
class FakeDataMover final : public DataMover {
 public:
  void StartCopy(const CopyRange& range, absl::AnyInvocable<void(absl::Status) &&> done) override {
    ranges.push_back(range);
    pending.push_back(std::move(done));
  }
  // Completes the oldest pending copy.
  void CompleteOne(absl::Status status) {
    ASSERT_FALSE(pending.empty());
    auto done = std::move(pending.front());
    pending.pop_front();
    std::move(done)(std::move(status));
  }
  std::vector<CopyRange> ranges;
  std::deque<absl::AnyInvocable<void(absl::Status) &&>> pending;
};

// Counts which copy calls a worker makes, then forwards them.
class CountingMasterClient final : public testing::ForwardingMasterClient {
 public:
  explicit CountingMasterClient(MasterClient* inner) : ForwardingMasterClient(inner) {}
  void Heartbeat(ClientId c, StatusCallback d) override {
    if (drop_heartbeats) {
      std::move(d)(absl::UnavailableError("dropped"));
      return;
    }
    ForwardingMasterClient::Heartbeat(c, std::move(d));
  }
  void MountSegment(ClientId c, const MountSegmentRequest& r, StatusCallback d) override {
    ++mounts;
    ForwardingMasterClient::MountSegment(c, r, std::move(d));
  }
  void FetchTasks(ClientId c, size_t n, uint64_t ack, Callback<FetchTasksResponse> d) override {
    fetch_batches.emplace_back(c, n);
    if (injected_manifest_changes.empty()) {
      ForwardingMasterClient::FetchTasks(c, n, ack, std::move(d));
      return;
    }
    // The next answer also carries these manifest changes.
    std::vector<ManifestChange> changes = std::move(injected_manifest_changes);
    injected_manifest_changes.clear();
    ForwardingMasterClient::FetchTasks(
        c, n, ack,
        [changes = std::move(changes),
         d = std::move(d)](absl::StatusOr<FetchTasksResponse> r) mutable {
          if (r.ok()) {
            r->manifest_changes.insert(r->manifest_changes.end(), changes.begin(), changes.end());
          }
          std::move(d)(std::move(r));
        });
  }
  void MarkTaskComplete(ClientId c, const MarkTaskCompleteRequest& r, StatusCallback d) override {
    reports.push_back(r);
    ForwardingMasterClient::MarkTaskComplete(c, r, std::move(d));
  }
  void CopyStart(ClientId c, const CopyStartRequest& r, Callback<CopyStartResponse> d) override {
    ++ordinary_calls;
    ForwardingMasterClient::CopyStart(c, r, std::move(d));
  }
  void CopyEnd(ClientId c, const CopyEndRequest& r, StatusCallback d) override {
    ++ordinary_calls;
    ForwardingMasterClient::CopyEnd(c, r, std::move(d));
  }
  void CopyRevoke(ClientId c, const CopyRevokeRequest& r, StatusCallback d) override {
    ++ordinary_calls;
    ++revokes;
    ForwardingMasterClient::CopyRevoke(c, r, std::move(d));
  }
  void DynamicReplicaCopyStart(ClientId c, const CopyStartRequest& r,
                               Callback<CopyStartResponse> d) override {
    ++dynamic_calls;
    ForwardingMasterClient::DynamicReplicaCopyStart(c, r, std::move(d));
  }
  void DynamicReplicaCopyEnd(ClientId c, const CopyEndRequest& r, StatusCallback d) override {
    ++dynamic_calls;
    ForwardingMasterClient::DynamicReplicaCopyEnd(c, r, std::move(d));
  }
  void DynamicReplicaCopyRevoke(ClientId c, const CopyRevokeRequest& r, StatusCallback d) override {
    ++dynamic_calls;
    ForwardingMasterClient::DynamicReplicaCopyRevoke(c, r, std::move(d));
  }

  bool drop_heartbeats = false;
  int mounts = 0;
  int ordinary_calls = 0;
  int dynamic_calls = 0;
  int revokes = 0;
  std::vector<std::pair<ClientId, size_t>> fetch_batches;
  std::vector<MarkTaskCompleteRequest> reports;
  // Added to the next FetchTasks answer (the master's journal, scripted).
  std::vector<ManifestChange> injected_manifest_changes;
};

MountSegmentRequest SegmentRequest(uint64_t id, uint64_t capacity) {
  MountSegmentRequest r;
  r.segment_id = SegmentId(id);
  r.name = "seg" + std::to_string(id);
  r.host = "host" + std::to_string(id);
  r.capacity_bytes = capacity;
  r.transport_endpoint = "tcp://host" + std::to_string(id);
  return r;
}

class StoreWorkerTest : public ::testing::Test {
 protected:
  StoreWorkerTest()
      : replicated_(NewMaster(env_)),
        master_(ReplicatedMasterTestPeer::master(*replicated_)),
        local_(replicated_.get(), env_.env()->executor),
        counting_(&local_) {}

  std::unique_ptr<StoreWorker> MakeWorker(uint64_t id, uint64_t capacity, FakeDataMover* mover,
                                          int64_t batch = 2, int64_t in_flight = 2) {
    StoreWorkerOptions o;
    o.client_id = ClientId(id);
    o.host = "host" + std::to_string(id);
    o.segments = {SegmentRequest(id, capacity)};
    o.heartbeat_interval_ms = 500;
    o.fetch_interval_ms = 100;
    o.fetch_batch_max = batch;
    o.copies_in_flight_max = in_flight;
    o.retry_interval_ms = 200;
    return std::make_unique<StoreWorker>(env_.env(), &counting_, mover, o);
  }

  // Workers of clients 1 and 2 (one 1000-byte segment each, ids 1 and 2),
  // running, and key "k" (100 bytes) put on segment 1: where every copy
  // test starts.
  struct TwoWorkers {
    FakeDataMover mover1, mover2;  // outlive the workers
    std::unique_ptr<StoreWorker> w1, w2;
  };
  std::unique_ptr<TwoWorkers> StartTwoWorkersWithKey() {
    auto two = std::make_unique<TwoWorkers>();
    two->w1 = MakeWorker(1, 1000, &two->mover1);
    two->w2 = MakeWorker(2, 1000, &two->mover2);
    two->w1->Start();
    two->w2->Start();
    env_.RunUntilIdle();
    Put("k", 100, 1);
    return two;
  }

  // Puts `key` on segment `segment` directly through the master.
  void Put(const std::string& key, uint64_t size, uint64_t segment) {
    PutStartRequest req{Name(key), size, 1, {SegmentId(segment)}};
    absl::StatusOr<PutStartResponse> s = master_.PutStart(ClientId(100), req);
    ASSERT_TRUE(s.ok()) << s.status();
    ASSERT_EQ(s->replicas[0].segment_id, SegmentId(segment));
    ASSERT_TRUE(master_.PutEnd(ClientId(100), PutEndRequest{Name(key), s->version}).ok());
  }

  ManualEnv env_{3};
  std::unique_ptr<ReplicatedMaster> replicated_;
  MasterService& master_;  // the views, and tasks no client call makes
  LocalMasterClient local_;
  CountingMasterClient counting_;
};

TEST_F(StoreWorkerTest, RegistersAndMounts) {
  FakeDataMover mover;
  auto worker = MakeWorker(1, 1000, &mover);
  EXPECT_EQ(worker->state(), StoreWorkerState::kStopped);
  worker->Start();
  EXPECT_EQ(worker->state(), StoreWorkerState::kRegistering);  // nothing ran yet
  env_.RunUntilIdle();
  EXPECT_EQ(worker->state(), StoreWorkerState::kRunning);
  ASSERT_TRUE(master_.GetSegment(SegmentId(1)).has_value());
  EXPECT_EQ(master_.GetSegment(SegmentId(1))->location.owner, ClientId(1));
  EXPECT_EQ(worker->stats().registrations, 1);
}

TEST_F(StoreWorkerTest, CopiesAReplicaEndToEnd) {
  std::unique_ptr<TwoWorkers> two = StartTwoWorkersWithKey();
  auto& [mover1, mover2, w1, w2] = *two;
  absl::StatusOr<CopyTaskResponse> t =
      master_.CreateCopyTask(CopyTaskRequest{Name("k"), SegmentId(2), {}});
  ASSERT_TRUE(t.ok()) << t.status();
  env_.AdvanceBy(MsToNs(150));          // a fetch tick, then CopyStart
  ASSERT_EQ(mover1.ranges.size(), 1u);  // the source's worker moves the bytes
  EXPECT_TRUE(mover2.ranges.empty());
  EXPECT_EQ(mover1.ranges[0].source_segment, SegmentId(1));
  EXPECT_EQ(mover1.ranges[0].target_segment, SegmentId(2));
  EXPECT_EQ(mover1.ranges[0].size_bytes, 100u);
  EXPECT_EQ(w1->copies_in_flight(), 1);
  EXPECT_EQ(master_.GetSegment(SegmentId(2))->reserved_bytes, 100u);

  mover1.CompleteOne(absl::OkStatus());
  env_.RunUntilIdle();
  EXPECT_EQ(w1->copies_in_flight(), 0);
  EXPECT_EQ(w1->stats().copies_completed, 1);
  EXPECT_FALSE(master_.GetTask(t->task_id).has_value());
  absl::StatusOr<GetReplicaListResponse> got =
      master_.GetReplicaList(GetReplicaListRequest{Name("k"), ClientId(100), ""});
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->replicas.size(), 2u);
  EXPECT_EQ(got->replicas[1].segment_id, SegmentId(2));
  EXPECT_EQ(got->replicas[1].offset, mover1.ranges[0].target_offset);
  ASSERT_EQ(counting_.reports.size(), 1u);
  EXPECT_TRUE(counting_.reports[0].succeeded);
  EXPECT_EQ(counting_.dynamic_calls, 0);
  EXPECT_TRUE(master_.CheckInvariants().ok());
}

TEST_F(StoreWorkerTest, FailedTransferRevokes) {
  std::unique_ptr<TwoWorkers> two = StartTwoWorkersWithKey();
  auto& [mover1, mover2, w1, w2] = *two;
  ASSERT_TRUE(master_.CreateCopyTask(CopyTaskRequest{Name("k"), SegmentId(2), {}}).ok());
  env_.AdvanceBy(MsToNs(150));
  mover1.CompleteOne(absl::UnavailableError("link down"));
  env_.RunUntilIdle();
  EXPECT_EQ(counting_.revokes, 1);
  ASSERT_EQ(counting_.reports.size(), 1u);
  EXPECT_FALSE(counting_.reports[0].succeeded);
  EXPECT_NE(counting_.reports[0].message.find("link down"), std::string::npos);
  EXPECT_EQ(w1->stats().copies_failed, 1);
  EXPECT_EQ(master_.GetSegment(SegmentId(2))->reserved_bytes, 0u);
  EXPECT_EQ(master_.Stats().tasks_failed_total, 1);
  EXPECT_FALSE(master_.GetObjectView(Name("k"))->replication_task.valid());
  EXPECT_TRUE(master_.CheckInvariants().ok());
}

TEST_F(StoreWorkerTest, FailedCopyStartReportsWithoutRevoke) {
  std::unique_ptr<TwoWorkers> two = StartTwoWorkersWithKey();
  auto& [mover1, mover2, w1, w2] = *two;
  ASSERT_TRUE(master_.CreateCopyTask(CopyTaskRequest{Name("k"), SegmentId(2), {}}).ok());
  // The target fills up (with a leased object, so eviction cannot help).
  Put("fill", 950, 2);
  ASSERT_TRUE(master_.GetReplicaList(GetReplicaListRequest{Name("fill"), ClientId(100), ""}).ok());
  env_.AdvanceBy(MsToNs(150));
  EXPECT_TRUE(mover1.ranges.empty());
  EXPECT_EQ(counting_.revokes, 0);
  ASSERT_EQ(counting_.reports.size(), 1u);
  EXPECT_FALSE(counting_.reports[0].succeeded);
  EXPECT_NE(counting_.reports[0].message.find("CopyStart"), std::string::npos);
  EXPECT_EQ(w1->copies_in_flight(), 0);
  EXPECT_TRUE(master_.CheckInvariants().ok());
}

TEST_F(StoreWorkerTest, FetchRespectsBatchAndInFlightLimits) {
  FakeDataMover mover1, mover3;
  auto w1 = MakeWorker(1, 100'000, &mover1, /*batch=*/1, /*in_flight=*/2);
  auto w3 = MakeWorker(3, 100'000, &mover3);
  w1->Start();
  w3->Start();
  env_.RunUntilIdle();
  for (int i = 0; i < 2; ++i) {
    const std::string key = "k" + std::to_string(i);
    Put(key, 10, 1);
    ASSERT_TRUE(master_.CreateCopyTask(CopyTaskRequest{Name(key), SegmentId(3), {}}).ok());
  }
  env_.AdvanceBy(MsToNs(100));
  EXPECT_EQ(mover1.ranges.size(), 1u);  // batch of one per tick
  env_.AdvanceBy(MsToNs(100));
  EXPECT_EQ(mover1.ranges.size(), 2u);
  for (int i = 2; i < 4; ++i) {
    const std::string key = "k" + std::to_string(i);
    Put(key, 10, 1);
    ASSERT_TRUE(master_.CreateCopyTask(CopyTaskRequest{Name(key), SegmentId(3), {}}).ok());
  }
  env_.AdvanceBy(MsToNs(500));
  EXPECT_EQ(mover1.ranges.size(), 2u);  // two in flight: no more fetches
  for (const auto& [client, n] : counting_.fetch_batches) {
    if (client == ClientId(1)) {
      EXPECT_EQ(n, 1u);
    }
  }
  mover1.CompleteOne(absl::OkStatus());
  env_.AdvanceBy(MsToNs(200));
  EXPECT_EQ(mover1.ranges.size(), 3u);
  EXPECT_LE(w1->copies_in_flight(), 2);
}

TEST_F(StoreWorkerTest, HeartbeatsKeepItAliveAndItReregistersAfterBeingReaped) {
  FakeDataMover mover;
  auto worker = MakeWorker(1, 1000, &mover);
  worker->Start();
  env_.RunUntilIdle();
  const DurationNs ttl = master_.knobs().client_live_ttl_ns();
  env_.AdvanceBy(3 * ttl);
  EXPECT_TRUE(master_.GetSegment(SegmentId(1)).has_value());
  EXPECT_EQ(counting_.mounts, 1);

  counting_.drop_heartbeats = true;  // the network loses them
  env_.AdvanceBy(ttl + master_.knobs().sweep_interval_ns());
  EXPECT_FALSE(master_.GetSegment(SegmentId(1)).has_value());
  EXPECT_GT(worker->stats().heartbeats_failed, 0);

  counting_.drop_heartbeats = false;  // next heartbeat: NOT_FOUND -> register, remount
  env_.AdvanceBy(MsToNs(600));
  EXPECT_EQ(worker->state(), StoreWorkerState::kRunning);
  EXPECT_TRUE(master_.GetSegment(SegmentId(1)).has_value());
  EXPECT_EQ(worker->stats().registrations, 2);
  EXPECT_EQ(counting_.mounts, 2);
}

TEST_F(StoreWorkerTest, StoppedWorkerIsReapedByTheMaster) {
  FakeDataMover mover;
  auto worker = MakeWorker(1, 1000, &mover);
  worker->Start();
  env_.RunUntilIdle();
  worker->Stop();
  EXPECT_EQ(worker->state(), StoreWorkerState::kStopped);
  env_.AdvanceBy(master_.knobs().client_live_ttl_ns() + master_.knobs().sweep_interval_ns());
  EXPECT_FALSE(master_.GetSegment(SegmentId(1)).has_value());
}

TEST_F(StoreWorkerTest, LeasedTasksTakeTheDynamicCalls) {
  std::unique_ptr<TwoWorkers> two = StartTwoWorkersWithKey();
  auto& [mover1, mover2, w1, w2] = *two;
  absl::StatusOr<ObjectView> view = master_.GetObjectView(Name("k"));
  ASSERT_TRUE(view.ok());
  // Reads that cross the admission threshold: dynamic replication grants a
  // lease and queues its task for the source's owner.
  replicated_->SetDynamicReplicationMode(DynamicReplicationMode::kEnforce);
  const int64_t hits = replicated_->replication_knobs().AdmissionHitCount();
  for (int64_t i = 0; i < hits; ++i) {
    ASSERT_TRUE(
        replicated_->GetReplicaList(GetReplicaListRequest{Name("k"), ClientId(100), ""}).ok());
  }
  replicated_->replication().DrainReads();  // as the drain interval would
  env_.RunUntilIdle();                      // the admission worker
  ASSERT_EQ(replicated_->replication().PendingActions().size(), 1u);
  env_.AdvanceBy(MsToNs(150));
  ASSERT_EQ(mover1.pending.size(), 1u);
  mover1.CompleteOne(absl::OkStatus());
  env_.RunUntilIdle();
  EXPECT_EQ(counting_.dynamic_calls, 2);  // start and end
  EXPECT_EQ(counting_.ordinary_calls, 0);
  EXPECT_EQ(w1->stats().dynamic_tasks, 1);
  EXPECT_EQ(w1->stats().copies_completed, 1);
  absl::StatusOr<ObjectView> after = master_.GetObjectView(Name("k"));
  ASSERT_EQ(after->replicas.size(), 2u);
  EXPECT_TRUE(after->replicas[1].dynamic);
  EXPECT_EQ(after->replicas[1].status, ReplicaStatus::kComplete);
}

// The Dynamic* calls always check the lease: a task that carries a lease id
// the master's dynamic replication never granted cannot start a copy.
TEST_F(StoreWorkerTest, ALeasedTaskWithoutItsLeaseIsRefused) {
  std::unique_ptr<TwoWorkers> two = StartTwoWorkersWithKey();
  auto& [mover1, mover2, w1, w2] = *two;
  absl::StatusOr<ObjectView> view = master_.GetObjectView(Name("k"));
  ASSERT_TRUE(view.ok());
  ASSERT_TRUE(
      master_
          .CreateCopyTaskForPlan(CopyPlan{Name("k"), view->version, view->replicas[0].replica_id,
                                          SegmentId(2), LeaseId(9)})
          .ok());
  env_.AdvanceBy(MsToNs(150));
  EXPECT_EQ(counting_.dynamic_calls, 1);  // the start, refused
  EXPECT_TRUE(mover1.pending.empty());
  EXPECT_EQ(w1->stats().dynamic_tasks, 1);
  EXPECT_EQ(w1->stats().copies_completed, 0);
  absl::StatusOr<ObjectView> after = master_.GetObjectView(Name("k"));
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->replicas.size(), 1u);
  EXPECT_EQ(master_.GetSegment(SegmentId(2))->reserved_bytes, 0u);
}

TEST_F(StoreWorkerTest, LateCallbacksAfterDestructionDoNothing) {
  std::unique_ptr<TwoWorkers> two = StartTwoWorkersWithKey();
  auto& [mover1, mover2, w1, w2] = *two;
  ASSERT_TRUE(master_.CreateCopyTask(CopyTaskRequest{Name("k"), SegmentId(2), {}}).ok());
  env_.AdvanceBy(MsToNs(150));
  ASSERT_EQ(mover1.pending.size(), 1u);
  w1.reset();
  mover1.CompleteOne(absl::OkStatus());  // the worker is gone: nothing happens
  env_.RunUntilIdle();
  EXPECT_TRUE(counting_.reports.empty());
  // The master reaps the copy when the task times out.
  env_.AdvanceBy(master_.knobs().processing_task_timeout_ns() +
                 master_.knobs().sweep_interval_ns());
  EXPECT_EQ(master_.GetSegment(SegmentId(2))->reserved_bytes, 0u);
  EXPECT_TRUE(master_.CheckInvariants().ok());
}

TEST(LocalMasterClient, CallbacksRunLaterNeverInsideTheCall) {
  ManualEnv env;
  std::unique_ptr<ReplicatedMaster> master = NewMaster(env);
  LocalMasterClient client(master.get(), env.env()->executor);
  bool done = false;
  absl::Status status;
  client.RegisterClient(RegisterClientRequest{ClientId(1), "h", ""}, [&](absl::Status s) {
    done = true;
    status = s;
  });
  EXPECT_FALSE(done);
  env.RunUntilIdle();
  EXPECT_TRUE(done);
  EXPECT_TRUE(status.ok());
  absl::StatusOr<GetReplicaListResponse> got;
  client.GetReplicaList(GetReplicaListRequest{Name("missing"), ClientId(1), ""},
                        [&](absl::StatusOr<GetReplicaListResponse> r) { got = std::move(r); });
  env.RunUntilIdle();
  EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound);
}

TEST(LocalMasterClient, BatchPutsGiveAResultPerKeyInOrder) {
  ManualEnv env;
  std::unique_ptr<ReplicatedMaster> master = NewMaster(env);
  ASSERT_TRUE(master->RegisterClient(RegisterClientRequest{ClientId(1), "host1", ""}).ok());
  ASSERT_TRUE(master->MountSegment(ClientId(1), SegmentRequest(1, 1 << 20)).ok());
  LocalMasterClient client(master.get(), env.env()->executor);
  BatchPutStartRequest start;
  start.names = {Name("a"), Name("b"), Name("a")};  // the second "a" is refused
  start.sizes_bytes = {100, 200, 100};
  absl::StatusOr<BatchPutStartResponse> started;
  bool called = false;
  client.BatchPutStart(ClientId(100), start, [&](absl::StatusOr<BatchPutStartResponse> r) {
    called = true;
    started = std::move(r);
  });
  EXPECT_FALSE(called);  // later, never inside the call
  env.RunUntilIdle();
  ASSERT_TRUE(started.ok()) << started.status();
  ASSERT_EQ(started->results.size(), 3u);
  ASSERT_TRUE(started->results[0].ok());
  ASSERT_TRUE(started->results[1].ok());
  EXPECT_FALSE(started->results[2].ok());
  // End "a", revoke "b": "a" is readable, "b" is gone.
  absl::StatusOr<BatchPutResponse> ended;
  client.BatchPutEnd(ClientId(100),
                     BatchPutEndRequest{{PutEndRequest{Name("a"), started->results[0]->version}}},
                     [&](absl::StatusOr<BatchPutResponse> r) { ended = std::move(r); });
  absl::StatusOr<BatchPutResponse> revoked;
  client.BatchPutRevoke(
      ClientId(100),
      BatchPutRevokeRequest{{PutRevokeRequest{Name("b"), started->results[1]->version}}},
      [&](absl::StatusOr<BatchPutResponse> r) { revoked = std::move(r); });
  env.RunUntilIdle();
  ASSERT_TRUE(ended.ok() && revoked.ok());
  ASSERT_EQ(ended->results.size(), 1u);
  EXPECT_TRUE(ended->results[0].ok());
  ASSERT_EQ(revoked->results.size(), 1u);
  EXPECT_TRUE(revoked->results[0].ok());
  EXPECT_TRUE(master->GetReplicaList(GetReplicaListRequest{Name("a"), ClientId(100), ""}).ok());
  EXPECT_EQ(
      master->GetReplicaList(GetReplicaListRequest{Name("b"), ClientId(100), ""}).status().code(),
      absl::StatusCode::kNotFound);
}

TEST(StoreWorkerOptions, ValidateRejectsBadValues) {
  StoreWorkerOptions o;
  EXPECT_EQ(o.Validate().code(), absl::StatusCode::kInvalidArgument);  // client 0
  o.client_id = ClientId(1);
  EXPECT_TRUE(o.Validate().ok());
  o.fetch_batch_max = 0;
  EXPECT_EQ(o.Validate().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
// The master reuses ranges: a change that lands over entries the worker
// holds replaces every one it overlaps, the one reaching in from below
// included. With hundreds of entries the manifest's b-tree has many nodes,
// so the erases rebalance it (an iterator kept across such an erase pointed
// into a freed node; the debug build's b-tree check caught it on swarm seed
// 501).
TEST_F(StoreWorkerTest, AManifestChangeReplacesEveryEntryItOverlaps) {
  FakeDataMover mover;
  auto worker = MakeWorker(1, uint64_t{1} << 20, &mover);
  worker->Start();
  env_.RunUntilIdle();
  ASSERT_EQ(worker->state(), StoreWorkerState::kRunning);
  uint64_t seq = 1'000'000;               // above anything the master's own journal numbers
  std::map<uint64_t, uint64_t> expected;  // offset -> size, by the rule above
  auto change = [&](uint64_t offset, uint64_t size) {
    ManifestChange c;
    c.seq = ++seq;
    c.present = true;
    c.entry.name = Name(absl::StrCat("k", offset, "-", size));
    c.entry.version = 1;
    c.entry.size_bytes = size;
    c.entry.segment_id = SegmentId(1);
    c.entry.offset = offset;
    c.entry.complete = true;
    counting_.injected_manifest_changes.push_back(c);
    auto it = expected.lower_bound(offset);
    if (it != expected.begin() && std::prev(it)->first + std::prev(it)->second > offset) {
      expected.erase(std::prev(it));
    }
    while (it != expected.end() && it->first < offset + size) it = expected.erase(it);
    expected[offset] = size;
  };
  for (uint64_t i = 0; i < 512; ++i) change(i * 16, 16);
  env_.AdvanceBy(MsToNs(300));
  ASSERT_EQ(worker->Manifest().size(), 512u);
  // Each new range starts inside an entry and covers the next two.
  for (uint64_t at = 8; at < 512 * 16; at += 192) change(at, 40);
  env_.AdvanceBy(MsToNs(300));
  ASSERT_TRUE(counting_.injected_manifest_changes.empty());
  std::vector<std::pair<uint64_t, uint64_t>> got;
  for (const ManifestEntry& e : worker->Manifest()) got.emplace_back(e.offset, e.size_bytes);
  const std::vector<std::pair<uint64_t, uint64_t>> want(expected.begin(), expected.end());
  EXPECT_EQ(got, want);
}

}  // namespace heatsink
