// Covers the gRPC control plane end to end on loopback, in one process (the
// fixture of control_plane_fixture.h): a ReplicatedMaster served by
// MasterServer on an ephemeral port, two store nodes (domains "a" and "b")
// that register, mount and run REPLICA_COPY tasks through GrpcMasterClient,
// and HeatsinkClient writers and readers. Batch puts: batch_put_test.cc.
//   - put, get and batch get return the written bytes (checksums);
//   - hammering reads from domain "b" in enforce mode makes the master admit
//     the key and the source store copy it over the TCP data mover: a dynamic
//     replica appears in domain "b" and reads from it return the same bytes;
//     observe mode counts would-propose and creates no replica;
//   - fences and identities are enforced over the wire: stale versions and
//     lease ids are ABORTED, a caller that is not the task's source client is
//     PERMISSION_DENIED, a call without identity UNAUTHENTICATED, and none of
//     them changes the master's state;
//   - absl status codes survive the wire unchanged.
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/replication/replicated_master.h"
#include "gmock/gmock.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "heatsink/master.grpc.pb.h"
#include "runtime/client/heatsink_client.h"
#include "runtime/env/notification.h"
#include "runtime/env/runtime_env.h"
#include "runtime/rpc/grpc_master_client.h"
#include "runtime/rpc/master_server.h"
#include "runtime/rpc/status.h"
#include "runtime/store/segment_directory_resolver.h"
#include "runtime/store/store_node.h"
#include "tests/runtime/rpc/control_plane_fixture.h"
#include "tests/runtime/rpc/rpc_test_util.h"

namespace heatsink::runtime {
namespace {

using test::ControlPlaneTest;
using test::kSegmentBytes;
using test::Pattern;
using test::Wait;
using test::WaitFor;

TEST_F(ControlPlaneTest, PutGetAndBatchGetOverTheWire) {
  StartCluster(DynamicReplicationMode::kOff);
  std::unique_ptr<HeatsinkClient> writer = MakeClient(ClientId(100), "host-a", "a");
  const std::string bytes = Pattern(1, (2 << 20) + 17);  // three TCP chunks
  ASSERT_TRUE(writer->Put("k1", bytes).ok());
  EXPECT_EQ(writer->Put("k1", bytes).code(), absl::StatusCode::kAlreadyExists);

  std::unique_ptr<HeatsinkClient> reader = MakeClient(ClientId(200), "host-b", "b");
  absl::StatusOr<GetResult> got = reader->Get("k1");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(StableHash(got->bytes), StableHash(bytes));
  EXPECT_EQ(got->segment, stores_[0].node->segment_ids()[0]);
  EXPECT_EQ(got->size_bytes, bytes.size());
  // GetInto: the bytes land in the caller's buffer; a buffer one byte short
  // is refused before anything is read.
  std::vector<uint8_t> buffer(bytes.size(), 0);
  absl::StatusOr<GetResult> into = reader->GetInto("k1", absl::MakeSpan(buffer));
  ASSERT_TRUE(into.ok()) << into.status();
  EXPECT_EQ(into->size_bytes, bytes.size());
  EXPECT_TRUE(into->bytes.empty());
  EXPECT_EQ(into->segment, got->segment);
  EXPECT_EQ(StableHash(std::string(buffer.begin(), buffer.end())), StableHash(bytes));
  std::vector<uint8_t> short_buffer(bytes.size() - 1, 0);
  absl::StatusOr<GetResult> short_read = reader->GetInto("k1", absl::MakeSpan(short_buffer));
  EXPECT_EQ(short_read.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(std::string(short_read.status().message()),
              ::testing::HasSubstr(absl::StrCat("object of ", bytes.size(), " bytes")));
  EXPECT_EQ(short_buffer, std::vector<uint8_t>(bytes.size() - 1, 0));
  EXPECT_EQ(reader->GetInto("missing", absl::MakeSpan(buffer)).status().code(),
            absl::StatusCode::kNotFound);
  // Into a vector the call grows: one lookup, however small the vector was.
  std::vector<uint8_t> grown(16, 0);
  const uint64_t lookups_before = reader->lookup_stats().lookups;
  absl::StatusOr<GetResult> into_grown = reader->GetInto("k1", &grown);
  ASSERT_TRUE(into_grown.ok()) << into_grown.status();
  EXPECT_EQ(reader->lookup_stats().lookups, lookups_before + 1);
  ASSERT_EQ(grown.size(), bytes.size());
  EXPECT_EQ(StableHash(std::string(grown.begin(), grown.end())), StableHash(bytes));

  const std::vector<std::string> keys = {"k1", "missing"};
  absl::StatusOr<std::vector<absl::StatusOr<GetResult>>> batch = reader->BatchGet(keys);
  ASSERT_TRUE(batch.ok()) << batch.status();
  ASSERT_EQ(batch->size(), 2u);
  ASSERT_TRUE((*batch)[0].ok());
  EXPECT_EQ((*batch)[0]->bytes, bytes);
  EXPECT_EQ((*batch)[1].status().code(), absl::StatusCode::kNotFound);

  // Tenants do not see each other's objects.
  HeatsinkClientOptions other = reader->options();
  other.tenant = "t2";
  HeatsinkClient stranger(client_rpcs_.back().get(), other);
  EXPECT_EQ(stranger.Get("k1").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(stranger.Remove("k1").code(), absl::StatusCode::kNotFound);

  // Leased by the reads above: Remove is refused until the read lease ends.
  EXPECT_EQ(writer->Remove("k1").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(master_->CheckInvariants().ok());
}

// Eight threads share one client: their lookups are coalesced into batches,
// and every Get still returns its own key's bytes (and a missing key its own
// NOT_FOUND).
TEST_F(ControlPlaneTest, ThreadsSharingOneClientGetTheirOwnKeysThroughCoalescedLookups) {
  StartCluster(DynamicReplicationMode::kOff);
  std::unique_ptr<HeatsinkClient> writer = MakeClient(ClientId(100), "host-a", "a");
  constexpr int kKeys = 16;
  for (int k = 0; k < kKeys; ++k) {
    ASSERT_TRUE(writer->Put(absl::StrCat("c", k), Pattern(k, 100 + k)).ok());
  }
  std::unique_ptr<HeatsinkClient> reader = MakeClient(ClientId(200), "host-b", "b");
  ASSERT_EQ(reader->options().lookup_batches_in_flight_max, 1u);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 40; ++i) {
        const int k = (t * 7 + i) % (kKeys + 1);  // kKeys: a key never put
        absl::StatusOr<GetResult> got = reader->Get(absl::StrCat("c", k));
        const bool right = k == kKeys ? got.status().code() == absl::StatusCode::kNotFound
                                      : got.ok() && got->bytes == Pattern(k, 100 + k);
        if (!right) wrong.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  const LookupCoalescerStats stats = reader->lookup_stats();
  EXPECT_EQ(stats.lookups, 320u);
  // Every lookup went out alone or in a batch.
  EXPECT_EQ(stats.single_calls + stats.batched_lookups, 320u);
}

TEST_F(ControlPlaneTest, HotReadsFromAnotherDomainCreateADynamicReplicaThere) {
  StartCluster(DynamicReplicationMode::kEnforce);
  std::unique_ptr<HeatsinkClient> writer = MakeClient(ClientId(100), "host-a", "a");
  const std::string bytes = Pattern(2, (1 << 20) + 333);
  ASSERT_TRUE(writer->Put("hot", bytes).ok());
  const SegmentId segment_b = stores_[1].node->segment_ids()[0];

  // Readers in domain "b" hammer the key until a replica in "b" is listed.
  std::unique_ptr<HeatsinkClient> reader = MakeClient(ClientId(200), "host-b", "b");
  std::atomic<bool> stop{false};
  std::atomic<int64_t> bad_reads{0};
  std::atomic<int64_t> reads_in_b{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&] {
      while (!stop.load()) {
        absl::StatusOr<GetResult> got = reader->Get("hot");
        if (!got.ok() || got->bytes != bytes) bad_reads.fetch_add(1);
        if (got.ok() && got->segment == segment_b) reads_in_b.fetch_add(1);
      }
    });
  }
  const bool replicated = WaitFor([&] {
    absl::StatusOr<ObjectView> view = master_->master().GetObjectView(ObjectName{"t1", "hot"});
    if (!view.ok()) return false;
    for (const ReplicaDescriptor& r : view->replicas) {
      if (r.segment_id == segment_b && r.status == ReplicaStatus::kComplete) return true;
    }
    return false;
  });
  // Keep reading while the new replica serves the readers in "b".
  const bool served_in_b = WaitFor([&] { return reads_in_b.load() >= 50; });
  stop.store(true);
  for (std::thread& t : threads) t.join();
  ASSERT_TRUE(replicated);
  EXPECT_TRUE(served_in_b) << reads_in_b.load() << " reads from the replica in b";
  EXPECT_EQ(bad_reads.load(), 0);

  absl::StatusOr<ObjectView> view = master_->master().GetObjectView(ObjectName{"t1", "hot"});
  ASSERT_TRUE(view.ok());
  ASSERT_EQ(view->replicas.size(), 2u);
  const ReplicaDescriptor& copy = view->replicas[1];
  EXPECT_TRUE(copy.dynamic);
  EXPECT_EQ(copy.origin, ReplicaOrigin::kCopy);
  EXPECT_EQ(copy.location->domain, "b");
  // The bytes landed in store b's memory by the TCP data mover.
  absl::StatusOr<std::string> landed =
      stores_[1].node->memory().Read(segment_b, copy.offset, copy.size_bytes);
  ASSERT_TRUE(landed.ok());
  EXPECT_EQ(StableHash(*landed), StableHash(bytes));
  EXPECT_GE(stores_[1].node->data_server().writes_completed(), 1u);
  EXPECT_GE(stores_[0].node->worker().stats().dynamic_tasks, 1);

  // A reader in "b" with the spread policy now reads its own domain's replica.
  HeatsinkClientOptions spread = reader->options();
  spread.replica_selection_policy = ReplicaSelectionPolicy::kSpread;
  HeatsinkClient local_reader(client_rpcs_.back().get(), spread);
  absl::StatusOr<GetResult> got = local_reader.Get("hot");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->segment, segment_b);
  EXPECT_EQ(got->bytes, bytes);
  EXPECT_TRUE(master_->CheckInvariants().ok());
}

// The same admission with both stores copying over UCX (UCX_TLS=tcp,self on
// loopback in the test presets): the dynamic copy is RMA puts granted by
// store b's endpoint, in 1 MiB pieces for a 3 MiB object, and the bytes
// arrive intact.
TEST_F(ControlPlaneTest, DynamicCopyBetweenStoresOverUcx) {
  StartCluster(DynamicReplicationMode::kEnforce, StoreDataMover::kUcx);
  ASSERT_EQ(stores_[0].node->data_mover(), StoreDataMover::kUcx);
  std::unique_ptr<HeatsinkClient> writer = MakeClient(ClientId(100), "host-a", "a");
  const std::string bytes = Pattern(5, (3 << 20) + 777);
  ASSERT_TRUE(writer->Put("hot", bytes).ok());
  const SegmentId segment_b = stores_[1].node->segment_ids()[0];
  std::unique_ptr<HeatsinkClient> reader = MakeClient(ClientId(200), "host-b", "b");
  const bool replicated = WaitFor([&] {
    absl::StatusOr<GetResult> got = reader->Get("hot");
    EXPECT_TRUE(got.ok() && got->bytes == bytes);
    absl::StatusOr<ObjectView> view = master_->master().GetObjectView(ObjectName{"t1", "hot"});
    if (!view.ok()) return false;
    for (const ReplicaDescriptor& r : view->replicas) {
      if (r.segment_id == segment_b && r.status == ReplicaStatus::kComplete) return true;
    }
    return false;
  });
  ASSERT_TRUE(replicated);
  absl::StatusOr<ObjectView> view = master_->master().GetObjectView(ObjectName{"t1", "hot"});
  ASSERT_TRUE(view.ok());
  ASSERT_EQ(view->replicas.size(), 2u);
  const ReplicaDescriptor& copy = view->replicas[1];
  EXPECT_TRUE(copy.dynamic);
  absl::StatusOr<std::string> landed =
      stores_[1].node->memory().Read(segment_b, copy.offset, copy.size_bytes);
  ASSERT_TRUE(landed.ok());
  EXPECT_EQ(StableHash(*landed), StableHash(bytes));
  // Granted as an RMA write, not written through the framed TCP path.
  EXPECT_GE(stores_[1].node->data_server().rma_grants(), 1u);
  EXPECT_EQ(stores_[1].node->data_server().writes_completed(), 0u);
  EXPECT_GE(stores_[0].node->worker().stats().dynamic_tasks, 1);
  EXPECT_TRUE(master_->CheckInvariants().ok());
}

TEST_F(ControlPlaneTest, ObserveModeCountsWouldProposeAndCopiesNothing) {
  StartCluster(DynamicReplicationMode::kObserve);
  std::unique_ptr<HeatsinkClient> writer = MakeClient(ClientId(100), "host-a", "a");
  const std::string bytes = Pattern(3, 4096);
  ASSERT_TRUE(writer->Put("warm", bytes).ok());
  std::unique_ptr<HeatsinkClient> reader = MakeClient(ClientId(200), "host-b", "b");
  ASSERT_TRUE(WaitFor([&] {
    absl::StatusOr<GetResult> got = reader->Get("warm");
    EXPECT_TRUE(got.ok()) << got.status();
    return master_->replication().Stats().decisions > 0;
  }));
  // No copy task exists or ever existed, so no copy can start later: copies
  // come only from tasks.
  const MasterStats stats = master_->master().Stats();
  EXPECT_EQ(stats.copy_tasks_created_total, 0);
  EXPECT_EQ(stats.tasks_pending + stats.tasks_processing, 0);
  absl::StatusOr<ObjectView> view = master_->master().GetObjectView(ObjectName{"t1", "warm"});
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(view->replicas.size(), 1u);
  EXPECT_EQ(master_->replication().Stats().leases_granted, 0);
  EXPECT_EQ(stores_[1].node->data_server().writes_completed(), 0u);
  const std::vector<MetricFamily> metrics = master_->SyncMetrics().Snapshot();
  int64_t would_propose = 0;
  for (const MetricFamily& family : metrics) {
    if (family.name != "dynamic_replication_would_propose_total") continue;
    for (const MetricSample& sample : family.samples) would_propose += sample.value;
  }
  EXPECT_GE(would_propose, 1);
}

// A client the test drives by hand: registered and owning one mounted
// segment, so ordinary and leased copy tasks can be assigned to it.
class FenceTest : public ControlPlaneTest {
 protected:
  static constexpr ClientId kOwner{77};
  static constexpr SegmentId kOwnerSegment{7700};

  void SetUp() override {
    StartCluster(DynamicReplicationMode::kEnforce);
    absl::StatusOr<std::unique_ptr<GrpcMasterClient>> rpc =
        GrpcMasterClient::Connect(env_.env()->clock, server_->address(), rpc_options_);
    ASSERT_TRUE(rpc.ok());
    owner_ = *std::move(rpc);
    ASSERT_TRUE(Call([&](auto done) {
                  owner_->RegisterClient({kOwner, "host-a", "a"}, std::move(done));
                }).ok());
    MountSegmentRequest mount;
    mount.segment_id = kOwnerSegment;
    mount.name = "owner";
    mount.host = "host-a";
    mount.domain = "a";
    mount.capacity_bytes = 1 << 20;
    mount.transport_endpoint = stores_[0].node->data_endpoint();
    ASSERT_TRUE(
        Call([&](auto done) { owner_->MountSegment(kOwner, mount, std::move(done)); }).ok());
    PutStartRequest put;
    put.name = name_;
    put.size_bytes = 100;
    put.preferred_segments = {kOwnerSegment};
    absl::StatusOr<PutStartResponse> started = Wait<absl::StatusOr<PutStartResponse>>(
        [&](auto done) { owner_->PutStart(kOwner, put, std::move(done)); });
    ASSERT_TRUE(started.ok()) << started.status();
    version_ = started->version;
    // Stale version: ABORTED; another client: PERMISSION_DENIED; then the real end.
    EXPECT_EQ(Call([&](auto done) {
                owner_->PutEnd(kOwner, {name_, version_ + 1}, std::move(done));
              }).code(),
              absl::StatusCode::kAborted);
    EXPECT_EQ(Call([&](auto done) {
                owner_->PutEnd(ClientId(1), {name_, version_}, std::move(done));
              }).code(),
              absl::StatusCode::kPermissionDenied);
    ASSERT_TRUE(Call([&](auto done) {
                  owner_->PutEnd(kOwner, {name_, version_}, std::move(done));
                }).ok());
  }

  void TearDown() override {
    owner_.reset();
    ControlPlaneTest::TearDown();
  }

  absl::Status Call(const std::function<void(MasterClient::StatusCallback)>& issue) {
    return Wait<absl::Status>(
        [&](absl::AnyInvocable<void(absl::Status) &&> done) { issue(std::move(done)); });
  }

  absl::StatusOr<Task> FetchOne() {
    absl::StatusOr<FetchTasksResponse> fetched = Wait<absl::StatusOr<FetchTasksResponse>>(
        [&](auto done) { owner_->FetchTasks(kOwner, 4, 0, std::move(done)); });
    if (!fetched.ok()) return fetched.status();
    if (fetched->tasks.size() != 1) return absl::NotFoundError("expected one task");
    return fetched->tasks[0];
  }

  absl::StatusCode StartCode(bool dynamic, ClientId caller, const CopyTaskFence& fence) {
    absl::StatusOr<CopyStartResponse> r = Wait<absl::StatusOr<CopyStartResponse>>([&](auto done) {
      if (dynamic) {
        owner_->DynamicReplicaCopyStart(caller, fence, std::move(done));
      } else {
        owner_->CopyStart(caller, fence, std::move(done));
      }
    });
    if (r.ok()) last_range_ = r->range;
    return r.status().code();
  }

  size_t ReplicaCount() {
    absl::StatusOr<ObjectView> view = master_->master().GetObjectView(name_);
    return view.ok() ? view->replicas.size() : 0;
  }

  ObjectName name_{"t1", "fenced"};
  Version version_ = 0;
  std::unique_ptr<GrpcMasterClient> owner_;
  CopyRange last_range_;  // of the last successful start
};

TEST_F(FenceTest, OrdinaryCopyFencesAreCheckedOverTheWire) {
  const SegmentId target = stores_[1].node->segment_ids()[0];
  absl::StatusOr<CopyTaskResponse> task =
      master_->CreateCopyTask(CopyTaskRequest{name_, target, kOwnerSegment});
  ASSERT_TRUE(task.ok()) << task.status();
  absl::StatusOr<Task> fetched = FetchOne();
  ASSERT_TRUE(fetched.ok()) << fetched.status();
  EXPECT_EQ(fetched->id, task->task_id);
  EXPECT_EQ(fetched->copy.version, version_);

  const CopyTaskFence good{task->task_id, version_, LeaseId()};
  EXPECT_EQ(StartCode(false, kOwner, {task->task_id, version_ + 1, LeaseId()}),
            absl::StatusCode::kAborted);
  EXPECT_EQ(StartCode(false, ClientId(2), good), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(StartCode(true, kOwner, good), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(StartCode(false, kOwner, {TaskId(999'999), version_, LeaseId()}),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(ReplicaCount(), 1u);  // rejected calls changed nothing

  EXPECT_EQ(StartCode(false, kOwner, good), absl::StatusCode::kOk);
  EXPECT_EQ(ReplicaCount(), 2u);  // the PROCESSING target
  // The range crosses the wire whole, the object's name included.
  EXPECT_EQ(last_range_.source_segment, kOwnerSegment);
  EXPECT_EQ(last_range_.target_segment, target);
  EXPECT_EQ(last_range_.size_bytes, 100u);
  EXPECT_EQ(last_range_.object, name_);
  EXPECT_EQ(Call([&](auto done) {
              owner_->CopyEnd(kOwner, {task->task_id, version_ + 1, LeaseId()}, std::move(done));
            }).code(),
            absl::StatusCode::kAborted);
  EXPECT_TRUE(Call([&](auto done) { owner_->CopyRevoke(kOwner, good, std::move(done)); }).ok());
  EXPECT_EQ(ReplicaCount(), 1u);
  EXPECT_TRUE(
      Call([&](auto done) {
        owner_->MarkTaskComplete(kOwner, {task->task_id, false, "revoked"}, std::move(done));
      }).ok());
  EXPECT_TRUE(master_->CheckInvariants().ok());
}

TEST_F(FenceTest, OnlyTheSourceClientMayStartADynamicCopy) {
  // Reads from domain "b" make the key hot; the admission worker grants a
  // lease and queues a leased REPLICA_COPY task for the source's owner.
  for (int i = 0; i < 4; ++i) {
    absl::StatusOr<GetReplicaListResponse> listed =
        Wait<absl::StatusOr<GetReplicaListResponse>>([&](auto done) {
          owner_->GetReplicaList({name_, ClientId(200), "b"}, std::move(done));
        });
    ASSERT_TRUE(listed.ok()) << listed.status();
  }
  absl::StatusOr<Task> fetched = absl::NotFoundError("no task yet");
  ASSERT_TRUE(WaitFor([&] {
    fetched = FetchOne();
    return fetched.ok();
  }));
  ASSERT_TRUE(fetched->copy.leased());
  struct {
    TaskId task_id;
    LeaseId lease_id;
  } lease_value{fetched->id, fetched->copy.lease_id}, *lease = &lease_value;
  EXPECT_EQ(fetched->copy.target_segment, stores_[1].node->segment_ids()[0]);

  const CopyTaskFence good{lease->task_id, version_, lease->lease_id};
  // Store b's identity, even presenting the right fence, is not the source.
  EXPECT_EQ(StartCode(true, ClientId(2), good), absl::StatusCode::kPermissionDenied);
  // A lease id the master does not know: a stale task.
  EXPECT_EQ(StartCode(true, kOwner, {lease->task_id, version_, LeaseId(lease->lease_id.value + 1)}),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(StartCode(true, kOwner, {lease->task_id, version_ + 1, lease->lease_id}),
            absl::StatusCode::kAborted);
  EXPECT_EQ(StartCode(false, kOwner, good), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ReplicaCount(), 1u);
  // The live pending lease survived the stale and foreign callers.
  EXPECT_EQ(StartCode(true, kOwner, good), absl::StatusCode::kOk);
  EXPECT_EQ(ReplicaCount(), 2u);
  EXPECT_TRUE(Call([&](auto done) {
                owner_->DynamicReplicaCopyRevoke(kOwner, good, std::move(done));
              }).ok());
  EXPECT_EQ(ReplicaCount(), 1u);
  EXPECT_TRUE(master_->CheckInvariants().ok());
}

TEST_F(ControlPlaneTest, CallsWithoutIdentityAreUnauthenticated) {
  StartCluster(DynamicReplicationMode::kOff);
  auto channel = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
  auto stub = v1::Master::NewStub(channel);
  grpc::ClientContext ctx;
  v1::Empty req, resp;
  EXPECT_EQ(stub->Heartbeat(&ctx, req, &resp).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  grpc::ClientContext bad;
  bad.AddMetadata(kClientIdMetadataKey, "not-a-number");
  v1::FetchTasksRequest fetch;
  fetch.set_batch_max(1);
  v1::FetchTasksResponse tasks;
  EXPECT_EQ(stub->FetchTasks(&bad, fetch, &tasks).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_GE(server_->stats().calls_unauthenticated_total, 2);
  // A malformed request (empty key) gets the master's INVALID_ARGUMENT.
  grpc::ClientContext get_ctx;
  v1::GetReplicaListRequest get;
  v1::GetReplicaListResponse got;
  EXPECT_EQ(stub->GetReplicaList(&get_ctx, get, &got).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(ControlPlaneTest, BadInputGetsTheRightStatusAndChangesNothing) {
  StartCluster(DynamicReplicationMode::kEnforce);
  std::unique_ptr<HeatsinkClient> writer = MakeClient(ClientId(100), "host-a", "a");
  ASSERT_TRUE(writer->Put("k", "value").ok());
  const MasterStats before = master_->master().Stats();
  GrpcMasterClient* rpc = client_rpcs_.back().get();

  auto status_of = [](auto issue) {
    auto done = std::make_shared<Notification>();
    auto result = std::make_shared<absl::Status>();
    issue([done, result](auto r) {
      if constexpr (std::is_same_v<decltype(r), absl::Status>) {
        *result = r;
      } else {
        *result = r.status();
      }
      done->Notify();
    });
    done->WaitForNotification();
    return result->code();
  };
  // Empty and over-long keys, zero size: the master's INVALID_ARGUMENT.
  PutStartRequest empty_key;
  empty_key.size_bytes = 1;
  EXPECT_EQ(status_of([&](auto done) { rpc->PutStart(ClientId(100), empty_key, std::move(done)); }),
            absl::StatusCode::kInvalidArgument);
  PutStartRequest long_key;
  long_key.name = ObjectName{"t1", std::string(5000, 'k')};
  long_key.size_bytes = 1;
  EXPECT_EQ(status_of([&](auto done) { rpc->PutStart(ClientId(100), long_key, std::move(done)); }),
            absl::StatusCode::kInvalidArgument);
  PutStartRequest zero;
  zero.name = ObjectName{"t1", "zero"};
  EXPECT_EQ(status_of([&](auto done) { rpc->PutStart(ClientId(100), zero, std::move(done)); }),
            absl::StatusCode::kInvalidArgument);
  // Too many keys in one batch: INVALID_ARGUMENT naming the limit, nothing read.
  BatchGetReplicaListRequest batch;
  batch.names.assign(master_->master().knobs().batch_keys_max + 1, ObjectName{"t1", "k"});
  absl::Status oversized = absl::UnknownError("no answer");
  Notification answered;
  rpc->BatchGetReplicaList(batch, [&](absl::StatusOr<BatchGetReplicaListResponse> r) {
    oversized = r.status();
    answered.Notify();
  });
  answered.WaitForNotification();
  EXPECT_EQ(oversized.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(oversized.message()), testing::HasSubstr("batch_keys_max=1024"));
  // Unknown task, unknown client heartbeat.
  EXPECT_EQ(status_of([&](auto done) {
              rpc->MarkTaskComplete(ClientId(1), {TaskId(12345), true, ""}, std::move(done));
            }),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(status_of([&](auto done) { rpc->Heartbeat(ClientId(4242), std::move(done)); }),
            absl::StatusCode::kNotFound);
  // A message above the size limit never reaches the master.
  RpcOptions small = rpc_options_;
  small.message_bytes_max = 4096;
  absl::StatusOr<std::unique_ptr<GrpcMasterClient>> limited =
      GrpcMasterClient::Connect(env_.env()->clock, server_->address(), small);
  ASSERT_TRUE(limited.ok());
  PutStartRequest big;
  big.name = ObjectName{"t1", std::string(8000, 'b')};
  big.size_bytes = 1;
  EXPECT_EQ(
      status_of([&](auto done) { (*limited)->PutStart(ClientId(100), big, std::move(done)); }),
      absl::StatusCode::kResourceExhausted);

  const MasterStats after = master_->master().Stats();
  EXPECT_EQ(after.objects, before.objects);
  EXPECT_EQ(after.used_bytes, before.used_bytes);
  EXPECT_EQ(after.puts_completed_total, before.puts_completed_total);
  EXPECT_TRUE(master_->CheckInvariants().ok());
}

TEST(GrpcMasterClientTest, UnreachableMasterIsATransportError) {
  SteadyClock clock;  // the test process's clock
  RpcOptions options;
  options.call_timeout_ms = 300;
  absl::StatusOr<std::unique_ptr<GrpcMasterClient>> client =
      GrpcMasterClient::Connect(&clock, "127.0.0.1:1", options);
  ASSERT_TRUE(client.ok());
  const absl::Status ping = (*client)->Ping();
  EXPECT_TRUE(ping.code() == absl::StatusCode::kUnavailable ||
              ping.code() == absl::StatusCode::kDeadlineExceeded)
      << ping;
  auto done = std::make_shared<Notification>();
  auto result = std::make_shared<absl::Status>();
  (*client)->Heartbeat(ClientId(1), [done, result](absl::Status s) {
    *result = s;
    done->Notify();
  });
  ASSERT_TRUE(done->WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_TRUE(result->code() == absl::StatusCode::kUnavailable ||
              result->code() == absl::StatusCode::kDeadlineExceeded)
      << *result;
  EXPECT_EQ(GrpcMasterClient::Connect(&clock, "", options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(RpcStatus, CodesAndMessagesRoundTrip) {
  for (int code = 0; code <= 16; ++code) {
    const absl::Status status(static_cast<absl::StatusCode>(code), code == 0 ? "" : "why");
    const grpc::Status wire = ToGrpcStatus(status);
    EXPECT_EQ(static_cast<int>(wire.error_code()), code);
    EXPECT_EQ(FromGrpcStatus(wire), status);
  }
  EXPECT_EQ(StatusCodeFromInt(99), absl::StatusCode::kUnknown);
  EXPECT_EQ(StatusCodeFromInt(-1), absl::StatusCode::kUnknown);
}

}  // namespace
}  // namespace heatsink::runtime
