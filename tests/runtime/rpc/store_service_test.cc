// Covers the store's gRPC data service and the client's `grpc` data path
// (runtime/rpc/store_server.h, grpc_store_client.h) in one process on
// loopback:
//   - WriteObject and ReadObject move objects of many chunks byte for byte,
//     every message at most data_chunk_bytes of data; Stat lists segments and
//     counters;
//   - store errors arrive as the same status codes (NOT_FOUND, OUT_OF_RANGE),
//     malformed write streams are INVALID_ARGUMENT and leave the segment
//     untouched where the range was refused, a segment without a gRPC data
//     service is FAILED_PRECONDITION, and options that would exceed the
//     message size limit are refused;
//   - a cluster whose stores serve the gRPC data service takes puts and reads
//     through HeatsinkClient with the grpc data path;
//   - foreground first: a copy's pull (ReadObject under a copy lease) waits
//     while a put (WriteObject) is landing on the same store, and goes on
//     once the put has ended and the quiet time has passed; the store's
//     foreground tracker reads a ManualClock, so the pull's bound never ends
//     its wait and no fixed sleep stands in for "it waits".
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/env/manual_env.h"
#include "core/env/rng.h"
#include "core/replication/replicated_master.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "heatsink/store.grpc.pb.h"
#include "runtime/client/heatsink_client.h"
#include "runtime/env/runtime_env.h"
#include "runtime/memory/segment_memory.h"
#include "runtime/rpc/grpc_master_client.h"
#include "runtime/rpc/grpc_store_client.h"
#include "runtime/rpc/master_server.h"
#include "runtime/rpc/status.h"
#include "runtime/rpc/store_server.h"
#include "runtime/store/segment_directory_resolver.h"
#include "runtime/store/store_node.h"
#include "tests/runtime/rpc/rpc_test_util.h"
#include "tests/runtime/transport_test_util.h"

namespace heatsink::runtime {
namespace {

using test::Pattern;

template <typename Fn>
bool WaitFor(Fn condition, absl::Duration timeout = absl::Seconds(20)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return condition();
}

constexpr uint64_t kChunkBytes = 4096;
const SegmentId kSegment(7);
constexpr uint64_t kSegmentBytes = 1 << 20;

class StoreServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(memory_.Create(kSegment, kSegmentBytes).ok());
    memory_.set_read_observer(&observer_);
    absl::StatusOr<std::unique_ptr<StoreServer>> server =
        StoreServer::Start(&memory_, "127.0.0.1:0", RpcOptions{},
                           StoreServiceOptions{.data_chunk_bytes = kChunkBytes});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    location_.id = kSegment;
    location_.data_service_endpoint = server_->endpoint();
    GrpcDataPathOptions options;
    options.data_chunk_bytes = kChunkBytes;
    absl::StatusOr<std::unique_ptr<GrpcObjectDataPath>> path = GrpcObjectDataPath::Create(options);
    ASSERT_TRUE(path.ok()) << path.status();
    path_ = *std::move(path);
    stub_ = v1::Store::NewStub(
        grpc::CreateChannel(server_->endpoint(), grpc::InsecureChannelCredentials()));
  }

  // A raw WriteObject stream of `chunks`, for malformed streams.
  absl::Status RawWrite(const std::vector<v1::WriteObjectChunk>& chunks) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    v1::WriteObjectResponse resp;
    auto writer = stub_->WriteObject(&ctx, &resp);
    for (const v1::WriteObjectChunk& chunk : chunks) {
      if (!writer->Write(chunk)) break;
    }
    writer->WritesDone();
    return FromGrpcStatus(writer->Finish());
  }

  testing::RecordingReadObserver observer_;  // outlives the server
  AlignedSegmentAllocator allocator_;
  SegmentMemory memory_{&allocator_, SegmentMemoryKnobs{}};
  std::unique_ptr<StoreServer> server_;
  SegmentLocation location_;
  std::unique_ptr<GrpcObjectDataPath> path_;
  std::unique_ptr<v1::Store::Stub> stub_;
};

TEST_F(StoreServerTest, WritesAndReadsObjectsOfManyChunks) {
  const std::string bytes = Pattern(1, 25 * kChunkBytes + 13);
  ASSERT_TRUE(path_->Write(location_, kSegment, 8192, bytes).ok());
  absl::StatusOr<std::string> landed = memory_.Read(kSegment, 8192, bytes.size());
  ASSERT_TRUE(landed.ok());
  EXPECT_EQ(*landed, bytes);

  absl::StatusOr<std::string> back = path_->Read(location_, kSegment, 8192, bytes.size());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(StableHash(*back), StableHash(bytes));
  // A sub-range starting mid-object.
  absl::StatusOr<std::string> middle = path_->Read(location_, kSegment, 8192 + 5000, 9000);
  ASSERT_TRUE(middle.ok()) << middle.status();
  EXPECT_EQ(*middle, bytes.substr(5000, 9000));

  // Each ReadObject message carries at most data_chunk_bytes, in order.
  grpc::ClientContext ctx;
  v1::ReadObjectRequest req;
  req.set_segment_id(kSegment.value);
  req.set_offset(8192);
  req.set_length(bytes.size());
  auto reader = stub_->ReadObject(&ctx, req);
  v1::DataChunk chunk;
  int chunks = 0;
  uint64_t next = 8192;
  while (reader->Read(&chunk)) {
    EXPECT_LE(chunk.data().size(), kChunkBytes);
    EXPECT_EQ(chunk.offset(), next);
    next += chunk.data().size();
    ++chunks;
  }
  EXPECT_TRUE(reader->Finish().ok());
  EXPECT_EQ(chunks, 26);
  EXPECT_EQ(next, 8192 + bytes.size());

  absl::StatusOr<v1::StatResponse> stat = path_->Stat(server_->endpoint());
  ASSERT_TRUE(stat.ok()) << stat.status();
  ASSERT_EQ(stat->segments_size(), 1);
  EXPECT_EQ(stat->segments(0).segment_id(), kSegment.value);
  EXPECT_EQ(stat->segments(0).size_bytes(), kSegmentBytes);
  EXPECT_EQ(stat->data_chunk_bytes(), kChunkBytes);
  EXPECT_EQ(stat->writes_completed(), 1u);
  EXPECT_EQ(stat->reads_completed(), 3u);
  // Every served read was reported to the segments' read observer, in order
  // (each is reported before its call completes).
  using Read = testing::RecordingReadObserver::Read;
  EXPECT_EQ(observer_.reads(), (std::vector<Read>{{kSegment, 8192, bytes.size()},
                                                  {kSegment, 8192 + 5000, 9000},
                                                  {kSegment, 8192, bytes.size()}}));
  EXPECT_EQ(stat->bytes_written(), bytes.size());
  EXPECT_EQ(stat->bytes_read(), 2 * bytes.size() + 9000);
}

TEST_F(StoreServerTest, StoreErrorsKeepTheirCodes) {
  const std::string bytes = Pattern(2, 100);
  SegmentLocation unknown = location_;
  EXPECT_EQ(path_->Read(unknown, SegmentId(99), 0, 10).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(path_->Write(unknown, SegmentId(99), 0, bytes).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(path_->Read(location_, kSegment, kSegmentBytes - 10, 11).status().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(path_->Write(location_, kSegment, kSegmentBytes - 10, bytes).code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(*memory_.Read(kSegment, kSegmentBytes - 10, 10), std::string(10, '\0'));

  SegmentLocation tcp_only;
  tcp_only.id = kSegment;
  tcp_only.transport_endpoint = "127.0.0.1:1";
  EXPECT_EQ(path_->Read(tcp_only, kSegment, 0, 10).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(path_->Write(tcp_only, kSegment, 0, bytes).code(),
            absl::StatusCode::kFailedPrecondition);

  // Nothing listens any more: UNAVAILABLE.
  server_->Shutdown();
  EXPECT_EQ(path_->Read(location_, kSegment, 0, 10).status().code(),
            absl::StatusCode::kUnavailable);
  // No refused read was reported as served.
  EXPECT_TRUE(observer_.reads().empty());
}

TEST_F(StoreServerTest, MalformedWriteStreamsAreRefused) {
  v1::WriteObjectChunk head;
  head.set_segment_id(kSegment.value);
  head.set_offset(0);
  head.set_length(10);
  head.set_data("12345");
  // Ends short.
  EXPECT_EQ(RawWrite({head}).code(), absl::StatusCode::kInvalidArgument);
  // A later message that names a range again.
  v1::WriteObjectChunk again = head;
  EXPECT_EQ(RawWrite({head, again}).code(), absl::StatusCode::kInvalidArgument);
  // More bytes than announced.
  v1::WriteObjectChunk tail;
  tail.set_data("123456");
  EXPECT_EQ(RawWrite({head, tail}).code(), absl::StatusCode::kInvalidArgument);
  // A chunk above the store's data_chunk_bytes.
  v1::WriteObjectChunk big;
  big.set_segment_id(kSegment.value);
  big.set_length(2 * kChunkBytes);
  big.set_data(std::string(2 * kChunkBytes, 'x'));
  EXPECT_EQ(RawWrite({big}).code(), absl::StatusCode::kInvalidArgument);
  // An empty stream.
  EXPECT_EQ(RawWrite({}).code(), absl::StatusCode::kInvalidArgument);

  // A well-formed stream split unevenly is accepted.
  v1::WriteObjectChunk rest;
  rest.set_data("67890");
  EXPECT_TRUE(RawWrite({head, rest}).ok());
  EXPECT_EQ(*memory_.Read(kSegment, 0, 10), "1234567890");
}

// Foreground first on the gRPC data service: a ReadObject under a copy lease
// (a copy's pull) waits before each message while the store has foreground
// transfers, and a WriteObject (a put) is such a transfer while it lands.
TEST(StoreServerForegroundTest, ACopysPullWaitsForThePutsAndReadsOfItsStore) {
  AlignedSegmentAllocator allocator;
  SegmentMemory memory(&allocator, SegmentMemoryKnobs{});
  ASSERT_TRUE(memory.Create(kSegment, kSegmentBytes).ok());
  const std::string bytes = Pattern(3, 4 * kChunkBytes);
  ASSERT_TRUE(memory.Write(kSegment, 0, bytes).ok());
  // The bound passes only when the test moves the clock: only the end of
  // the put lets the pull go.
  ManualClock clock;
  auto foreground = std::make_shared<ForegroundTraffic>(&clock);
  const StoreServiceOptions options{
      .data_chunk_bytes = kChunkBytes, .foreground = foreground, .copy_yield_max_ms = 60000};
  absl::StatusOr<std::unique_ptr<StoreServer>> server =
      StoreServer::Start(&memory, "127.0.0.1:0", RpcOptions{}, options);
  ASSERT_TRUE(server.ok()) << server.status();
  auto stub = v1::Store::NewStub(
      grpc::CreateChannel((*server)->endpoint(), grpc::InsecureChannelCredentials()));

  // A put, half-way: two messages announced, one sent.
  grpc::ClientContext put_ctx;
  v1::WriteObjectResponse put_resp;
  auto put = stub->WriteObject(&put_ctx, &put_resp);
  v1::WriteObjectChunk head;
  head.set_segment_id(kSegment.value);
  head.set_offset(8 * kChunkBytes);
  head.set_length(2 * kChunkBytes);
  head.set_data(std::string(kChunkBytes, 'p'));
  ASSERT_TRUE(put->Write(head));
  ASSERT_TRUE(WaitFor([&] { return foreground->in_progress() == 1; }));

  // A copy's pull of the first four chunks.
  std::atomic<int> messages{0};
  std::string pulled;
  absl::Status pull_status;
  std::thread pull([&] {
    grpc::ClientContext ctx;
    v1::ReadObjectRequest req;
    req.set_segment_id(kSegment.value);
    req.set_length(bytes.size());
    req.set_copy_lease_id(9);
    auto reader = stub->ReadObject(&ctx, req);
    v1::DataChunk chunk;
    while (reader->Read(&chunk)) {
      pulled += chunk.data();
      messages.fetch_add(1);
    }
    pull_status = FromGrpcStatus(reader->Finish());
  });
  // The pull is inside its yield, before its first message, and cannot
  // leave it while the put goes on.
  ASSERT_TRUE(WaitFor([&] { return foreground->yields() == 1; }));
  EXPECT_EQ(messages.load(), 0) << "the pull ran past a put in progress";

  v1::WriteObjectChunk tail;
  tail.set_data(std::string(kChunkBytes, 'q'));
  ASSERT_TRUE(put->Write(tail));
  put->WritesDone();
  EXPECT_TRUE(FromGrpcStatus(put->Finish()).ok());
  // The put has ended (its end read from the clock before the count
  // dropped); the pull goes on once the quiet time has passed on the clock.
  ASSERT_TRUE(WaitFor([&] { return foreground->in_progress() == 0; }));
  clock.AdvanceBy(options.copy_yield_quiet_us * kNsPerUs);
  foreground->ClockAdvanced();
  pull.join();
  EXPECT_TRUE(pull_status.ok()) << pull_status;
  EXPECT_EQ(pulled, bytes);
  EXPECT_EQ(messages.load(), 4);
  EXPECT_EQ(foreground->in_progress(), 0);
  EXPECT_EQ(foreground->yields(), 1u);
  EXPECT_EQ(foreground->yields_timed_out(), 0u);
  EXPECT_EQ(*memory.Read(kSegment, 8 * kChunkBytes, 2 * kChunkBytes),
            std::string(kChunkBytes, 'p') + std::string(kChunkBytes, 'q'));
}

TEST(StoreServiceOptionsTest, ChunksMustFitTheMessageLimit) {
  RpcOptions rpc;
  rpc.message_bytes_max = 64 << 10;
  EXPECT_TRUE(StoreServiceOptions{.data_chunk_bytes = 32 << 10}.Validate(rpc).ok());
  EXPECT_EQ(StoreServiceOptions{.data_chunk_bytes = 64 << 10}.Validate(rpc).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(StoreServiceOptions{.data_chunk_bytes = 0}.Validate(rpc).code(),
            absl::StatusCode::kInvalidArgument);
  GrpcDataPathOptions path;
  path.rpc = rpc;
  path.data_chunk_bytes = 64 << 10;
  EXPECT_EQ(GrpcObjectDataPath::Create(path).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MakeObjectDataPath("udp", RpcOptions{}, TcpTransportKnobs{}).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::unique_ptr<ObjectDataPath>> tcp =
      MakeObjectDataPath("tcp", RpcOptions{}, TcpTransportKnobs{});
  ASSERT_TRUE(tcp.ok());
  EXPECT_EQ((*tcp)->name(), "tcp");
}

// A master with tenant bindings and stores serving the gRPC data service.
class BoundClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MasterKnobs master_knobs;
    master_knobs.sweep_interval_ms = 100;
    master_knobs.default_kv_lease_ttl_ms = 200;
    absl::StatusOr<std::unique_ptr<ReplicatedMaster>> master =
        ReplicatedMaster::Create(env_.env(), master_knobs, ReplicationKnobs{}, nullptr);
    ASSERT_TRUE(master.ok()) << master.status();
    master_ = *std::move(master);
    TenantBindings tenants;
    ASSERT_TRUE(tenants.BindFromFlag("10=t1").ok());
    ASSERT_TRUE(tenants.BindFromFlag("20=t2").ok());
    ASSERT_TRUE(tenants.Bind(ClientId(30), "").ok());  // the default tenant
    absl::StatusOr<std::unique_ptr<MasterServer>> server =
        MasterServer::Start(master_.get(), "127.0.0.1:0", RpcOptions{}, std::move(tenants));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);

    absl::StatusOr<std::unique_ptr<GrpcMasterClient>> store_rpc =
        GrpcMasterClient::Connect(env_.env()->clock, server_->address(), RpcOptions{});
    ASSERT_TRUE(store_rpc.ok());
    store_rpc_ = *std::move(store_rpc);
    GrpcMasterClient* raw = store_rpc_.get();
    resolver_ = std::make_unique<SegmentDirectoryResolver>(env_.env()->clock,
                                                           [raw] { return raw->ListSegments(); });
    StoreNodeOptions options;
    options.client_id = ClientId(1);
    options.segment_bytes = 8 << 20;
    options.worker.heartbeat_interval_ms = 200;
    absl::StatusOr<std::unique_ptr<StoreNode>> node = StoreNode::Start(
        env_.env(), store_rpc_.get(), resolver_.get(), options,
        [](SegmentMemory* memory) -> absl::StatusOr<std::unique_ptr<SegmentDataService>> {
          absl::StatusOr<std::unique_ptr<StoreServer>> s = StoreServer::Start(
              memory, "127.0.0.1:0", RpcOptions{}, StoreServiceOptions{.data_chunk_bytes = 8192});
          if (!s.ok()) return s.status();
          return std::unique_ptr<SegmentDataService>(*std::move(s));
        });
    ASSERT_TRUE(node.ok()) << node.status();
    node_ = *std::move(node);
    ASSERT_TRUE(WaitFor([&] { return master_->master().ListSegments().size() == 1; }));
    GrpcDataPathOptions path;
    path.data_chunk_bytes = 8192;
    absl::StatusOr<std::unique_ptr<GrpcObjectDataPath>> data = GrpcObjectDataPath::Create(path);
    ASSERT_TRUE(data.ok());
    data_ = *std::move(data);
  }

  void TearDown() override {
    if (node_ != nullptr) node_->Stop();
    if (server_ != nullptr) server_->Shutdown(absl::Seconds(1));
    env_.Shutdown();
  }

  // A client calling as `id` and naming objects of `tenant`.
  std::unique_ptr<HeatsinkClient> Client(uint64_t id, const std::string& tenant,
                                         bool send_identity_on_remove = true) {
    RpcOptions rpc;
    if (send_identity_on_remove) rpc.caller_client_id = id;
    absl::StatusOr<std::unique_ptr<GrpcMasterClient>> master =
        GrpcMasterClient::Connect(env_.env()->clock, server_->address(), rpc);
    EXPECT_TRUE(master.ok());
    client_rpcs_.push_back(*std::move(master));
    HeatsinkClientOptions options;
    options.client_id = ClientId(id);
    options.tenant = tenant;
    return std::make_unique<HeatsinkClient>(client_rpcs_.back().get(), data_.get(), options);
  }

  RuntimeEnv env_{RuntimeEnvOptions{.executor = {.threads = 4}, .seed = 3}};
  std::unique_ptr<ReplicatedMaster> master_;
  std::unique_ptr<MasterServer> server_;
  std::unique_ptr<GrpcMasterClient> store_rpc_;
  std::unique_ptr<SegmentDirectoryResolver> resolver_;
  std::unique_ptr<StoreNode> node_;
  std::unique_ptr<GrpcObjectDataPath> data_;
  std::vector<std::unique_ptr<GrpcMasterClient>> client_rpcs_;
};

TEST_F(BoundClusterTest, PutAndGetOverTheGrpcDataPath) {
  ASSERT_FALSE(node_->data_service_endpoint().empty());
  std::vector<SegmentView> segments = master_->master().ListSegments();
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_EQ(segments[0].location.data_service_endpoint, node_->data_service_endpoint());

  std::unique_ptr<HeatsinkClient> writer = Client(10, "t1");
  const std::string bytes = Pattern(5, (1 << 20) + 3);  // 129 chunks of 8 KiB
  ASSERT_TRUE(writer->Put("k", bytes).ok());
  absl::StatusOr<GetResult> got = writer->Get("k");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(StableHash(got->bytes), StableHash(bytes));
  // Into the caller's buffer, the chunks in place; the tail untouched.
  std::vector<uint8_t> buffer(bytes.size() + 100, 0xEE);
  absl::StatusOr<GetResult> into = writer->GetInto("k", absl::MakeSpan(buffer));
  ASSERT_TRUE(into.ok()) << into.status();
  EXPECT_EQ(into->size_bytes, bytes.size());
  EXPECT_TRUE(into->bytes.empty());
  EXPECT_EQ(std::string(buffer.begin(), buffer.begin() + bytes.size()), bytes);
  EXPECT_EQ(buffer[bytes.size()], 0xEE);
  absl::StatusOr<v1::StatResponse> stat = data_->Stat(node_->data_service_endpoint());
  ASSERT_TRUE(stat.ok());
  EXPECT_EQ(stat->writes_completed(), 1u);
  EXPECT_EQ(stat->reads_completed(), 2u);
}

TEST_F(BoundClusterTest, CallersNameOnlyTheirOwnTenant) {
  std::unique_ptr<HeatsinkClient> owner = Client(10, "t1");
  const std::string bytes = Pattern(6, 5000);
  const absl::Status put = owner->Put("k", bytes);
  ASSERT_TRUE(put.ok()) << put;
  const MasterStats before = master_->master().Stats();

  // Client 20 is bound to t2 and names t1's object: refused, nothing changes.
  std::unique_ptr<HeatsinkClient> intruder = Client(20, "t1");
  EXPECT_EQ(intruder->Get("k").status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(intruder->Lookup("k").status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(intruder->Remove("k").code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(intruder->Put("k2", bytes).code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(intruder->Put("k", bytes).code(), absl::StatusCode::kPermissionDenied);
  const std::vector<std::string> keys = {"k"};
  EXPECT_EQ(intruder->BatchGet(keys).status().code(), absl::StatusCode::kPermissionDenied);
  const MasterStats after = master_->master().Stats();
  EXPECT_EQ(after.objects, before.objects);
  EXPECT_EQ(after.used_bytes, before.used_bytes);
  EXPECT_EQ(after.puts_completed_total, before.puts_completed_total);

  // In its own tenant client 20 sees no "k" at all.
  std::unique_ptr<HeatsinkClient> own = Client(20, "t2");
  EXPECT_EQ(own->Get("k").status().code(), absl::StatusCode::kNotFound);
  // Client 30 is bound to the default tenant; an unbound client names nothing.
  EXPECT_EQ(Client(30, "")->Get("k").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Client(30, "t1")->Get("k").status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(Client(40, "t1")->Get("k").status().code(), absl::StatusCode::kPermissionDenied);
  // Without an identity a call that names an object is UNAUTHENTICATED.
  EXPECT_EQ(Client(10, "t1", /*send_identity_on_remove=*/false)->Remove("k").code(),
            absl::StatusCode::kUnauthenticated);

  // A read in another client's name, and a batch with one foreign name.
  auto channel = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
  auto stub = v1::Master::NewStub(channel);
  {
    grpc::ClientContext ctx;
    ctx.AddMetadata(kClientIdMetadataKey, "20");
    v1::GetReplicaListRequest req;
    req.mutable_name()->set_tenant("t2");
    req.mutable_name()->set_key("k");
    req.set_requester(10);
    v1::GetReplicaListResponse resp;
    EXPECT_EQ(FromGrpcStatus(stub->GetReplicaList(&ctx, req, &resp)).code(),
              absl::StatusCode::kPermissionDenied);
  }
  {
    grpc::ClientContext ctx;
    ctx.AddMetadata(kClientIdMetadataKey, "20");
    v1::BatchGetReplicaListRequest req;
    req.set_requester(20);
    v1::ObjectName* mine = req.add_names();
    mine->set_tenant("t2");
    mine->set_key("x");
    v1::ObjectName* theirs = req.add_names();
    theirs->set_tenant("t1");
    theirs->set_key("k");
    v1::BatchGetReplicaListResponse resp;
    EXPECT_EQ(FromGrpcStatus(stub->BatchGetReplicaList(&ctx, req, &resp)).code(),
              absl::StatusCode::kPermissionDenied);
    EXPECT_EQ(resp.results_size(), 0);
  }
  {
    // A batch put with one foreign name is refused whole: nothing starts.
    grpc::ClientContext ctx;
    ctx.AddMetadata(kClientIdMetadataKey, "20");
    v1::BatchPutStartRequest req;
    v1::ObjectName* mine = req.add_names();
    mine->set_tenant("t2");
    mine->set_key("x");
    v1::ObjectName* theirs = req.add_names();
    theirs->set_tenant("t1");
    theirs->set_key("k3");
    req.add_sizes_bytes(100);
    req.add_sizes_bytes(100);
    req.set_replica_num(1);
    v1::BatchPutStartResponse resp;
    EXPECT_EQ(FromGrpcStatus(stub->BatchPutStart(&ctx, req, &resp)).code(),
              absl::StatusCode::kPermissionDenied);
    EXPECT_EQ(resp.results_size(), 0);
    EXPECT_EQ(master_->master().Stats().objects, before.objects);
  }
  for (const bool end : {true, false}) {
    grpc::ClientContext ctx;
    ctx.AddMetadata(kClientIdMetadataKey, "20");
    v1::BatchPutFenceRequest req;
    v1::PutFenceRequest* put = req.add_puts();
    put->mutable_name()->set_tenant("t1");
    put->mutable_name()->set_key("k");
    put->set_version(1);
    v1::BatchPutResponse resp;
    const grpc::Status st =
        end ? stub->BatchPutEnd(&ctx, req, &resp) : stub->BatchPutRevoke(&ctx, req, &resp);
    EXPECT_EQ(FromGrpcStatus(st).code(), absl::StatusCode::kPermissionDenied);
  }
  EXPECT_GE(server_->stats().calls_permission_denied_total, 13);

  // The owner still reads its bytes and may remove them once the read lease
  // (default_kv_lease_ttl_ms, 200 ms here) has passed.
  absl::StatusOr<GetResult> got = owner->Get("k");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->bytes, bytes);
  EXPECT_TRUE(WaitFor([&] { return owner->Remove("k").ok(); }));
  EXPECT_EQ(owner->Get("k").status().code(), absl::StatusCode::kNotFound);
}

TEST(TenantBindingsTest, BindingsAreFixedAndParsed) {
  TenantBindings tenants;
  EXPECT_TRUE(tenants.Check(ClientId(5), "anything").ok());  // unbound mode trusts callers
  EXPECT_TRUE(tenants.BindFromFlag("5=t1").ok());
  EXPECT_TRUE(tenants.BindFromFlag("5=t1").ok());
  EXPECT_EQ(tenants.BindFromFlag("5=t2").code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(tenants.BindFromFlag("0=t1").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(tenants.BindFromFlag("x=t1").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(tenants.BindFromFlag("6=").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(tenants.BindFromFlag("6").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(tenants.BindFromFlag("6=default").ok());
  EXPECT_TRUE(tenants.Check(ClientId(6), "").ok());  // "" is the default tenant
  EXPECT_TRUE(tenants.Check(ClientId(5), "t1").ok());
  EXPECT_EQ(tenants.Check(ClientId(5), "t2").code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(tenants.Check(ClientId(7), "t1").code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(tenants.size(), 2u);
}

}  // namespace
}  // namespace heatsink::runtime
