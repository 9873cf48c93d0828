// The master under a flood of readers: data calls beyond calls_in_flight_max
// are refused at once with RESOURCE_EXHAUSTED (counted), the stores' control
// calls are always admitted so a heartbeat lands within the client TTL, and
// the master serves normally once the flood stops.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/replication/replicated_master.h"
#include "gtest/gtest.h"
#include "runtime/env/runtime_env.h"
#include "runtime/rpc/grpc_master_client.h"
#include "runtime/rpc/master_server.h"
#include "tests/runtime/rpc/rpc_test_util.h"

namespace heatsink::runtime {
namespace {

constexpr ClientId kStore(1);
constexpr SegmentId kSegment(257);

class MasterOverloadTest : public testing::Test {
 protected:
  void Start(const RpcOptions& options) {
    MasterKnobs knobs;
    auto master = ReplicatedMaster::Create(env_.env(), knobs, ReplicationKnobs{}, nullptr);
    ASSERT_TRUE(master.ok()) << master.status();
    master_ = *std::move(master);
    auto server = MasterServer::Start(master_.get(), "127.0.0.1:0", options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    ASSERT_TRUE(master_->RegisterClient({kStore, "host-a", "a"}).ok());
    MountSegmentRequest mount;
    mount.segment_id = kSegment;
    mount.name = "segment";
    mount.host = "host-a";
    mount.domain = "a";
    mount.capacity_bytes = 64 << 20;
    mount.transport_endpoint = "127.0.0.1:1";
    ASSERT_TRUE(master_->MountSegment(kStore, mount).ok());
    PutStartRequest put;
    put.name = ObjectName{"", "hot"};
    put.size_bytes = 4096;
    auto started = master_->PutStart(kStore, put);
    ASSERT_TRUE(started.ok());
    ASSERT_TRUE(master_->PutEnd(kStore, {put.name, started->version}).ok());
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown(absl::Seconds(1));
    env_.Shutdown();
  }

  RuntimeEnv env_{RuntimeEnvOptions{.executor = {.threads = 2}}};
  std::unique_ptr<ReplicatedMaster> master_;
  std::unique_ptr<MasterServer> server_;
};

// Keeps `depth` lookups outstanding on `rpc` until `stop`; counts answers.
// A refused lookup is issued again after 1 ms, as the refusal asks ("retry
// with backoff"); a served one at once.
// REQUIRES: after `stop`, StopRetrying, then `rpc` is destroyed (it waits for
// its calls), then the flooder.
class Flooder {
 public:
  Flooder(GrpcMasterClient* rpc, int depth, std::atomic<bool>* stop)
      : rpc_(rpc), stop_(stop), retry_([this] { RetryLoop(); }) {
    for (int i = 0; i < depth; ++i) Issue();
  }
  ~Flooder() { StopRetrying(); }
  // REQUIRES: `stop` is set.
  void StopRetrying() {
    if (retry_.joinable()) retry_.join();
  }
  int64_t ok() const { return ok_.load(); }
  int64_t exhausted() const { return exhausted_.load(); }
  int64_t other() const { return other_.load(); }
  absl::Status first_other() const {
    std::lock_guard<std::mutex> lock(mu_);
    return first_other_;
  }

 private:
  void Issue() {
    GetReplicaListRequest req;
    req.name = ObjectName{"", "hot"};
    req.requester = ClientId(2);
    rpc_->GetReplicaList(req, [this](absl::StatusOr<GetReplicaListResponse> r) {
      if (r.ok()) {
        ok_.fetch_add(1);
        if (!stop_->load()) Issue();
        return;
      }
      if (r.status().code() == absl::StatusCode::kResourceExhausted) {
        exhausted_.fetch_add(1);
        backed_off_.fetch_add(1);
      } else {
        if (other_.fetch_add(1) == 0) {
          std::lock_guard<std::mutex> lock(mu_);
          first_other_ = r.status();
        }
      }
    });
  }
  // Every millisecond, issues the lookups refused since.
  void RetryLoop() {
    while (!stop_->load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      for (int64_t n = backed_off_.exchange(0); n > 0; --n) Issue();
    }
  }

  GrpcMasterClient* const rpc_;
  std::atomic<bool>* const stop_;
  std::atomic<int64_t> ok_{0};
  std::atomic<int64_t> exhausted_{0};
  std::atomic<int64_t> other_{0};
  std::atomic<int64_t> backed_off_{0};
  mutable std::mutex mu_;
  absl::Status first_other_;
  std::thread retry_;
};

TEST_F(MasterOverloadTest, AFloodOfReadsIsRefusedQuicklyWhileHeartbeatsStillLand) {
  RpcOptions options;
  options.calls_in_flight_max = 2;
  Start(options);
  ASSERT_FALSE(HasFailure());

  // The store's own connection to the master.
  RpcOptions store_options;
  store_options.own_connection = true;
  auto store = GrpcMasterClient::Connect(env_.env()->clock, server_->address(), store_options);
  ASSERT_TRUE(store.ok());
  // Connected before the flood, as a store is.
  ASSERT_TRUE(test::Wait<absl::Status>([&](auto done) {
                (*store)->Heartbeat(kStore, std::move(done));
              }).ok());

  // Eight reader connections with 64 lookups outstanding each.
  std::atomic<bool> stop{false};
  std::vector<std::unique_ptr<GrpcMasterClient>> readers;
  std::vector<std::unique_ptr<Flooder>> flooders;
  for (int i = 0; i < 8; ++i) {
    RpcOptions reader_options;
    reader_options.own_connection = true;
    auto rpc = GrpcMasterClient::Connect(env_.env()->clock, server_->address(), reader_options);
    ASSERT_TRUE(rpc.ok());
    // Connected before the flood: a call that finds its channel still
    // connecting under load fails fast (UNAVAILABLE), which is not what
    // this test is about.
    ASSERT_TRUE((*rpc)->Ping().ok());
    readers.push_back(*std::move(rpc));
  }
  for (auto& rpc : readers) flooders.push_back(std::make_unique<Flooder>(rpc.get(), 64, &stop));

  // Heartbeats every 100 ms for 2 s under the flood: each lands, well within
  // the client TTL (10 s).
  int64_t slowest_heartbeat_ms = 0;
  for (int beat = 0; beat < 20; ++beat) {
    const auto t0 = std::chrono::steady_clock::now();
    const absl::Status status =
        test::Wait<absl::Status>([&](auto done) { (*store)->Heartbeat(kStore, std::move(done)); });
    const int64_t ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    EXPECT_TRUE(status.ok()) << "heartbeat " << beat << ": " << status;
    slowest_heartbeat_ms = std::max(slowest_heartbeat_ms, ms);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_LT(slowest_heartbeat_ms, 10'000);
  // The store is still live: its segment is listed.
  EXPECT_EQ(master_->master().ListSegments().size(), 1u);

  stop.store(true);
  for (auto& f : flooders) f->StopRetrying();
  readers.clear();  // waits for the outstanding lookups; none is issued again
  int64_t ok = 0;
  int64_t exhausted = 0;
  int64_t other = 0;
  absl::Status first_other;
  for (const auto& f : flooders) {
    ok += f->ok();
    exhausted += f->exhausted();
    other += f->other();
    if (first_other.ok()) first_other = f->first_other();
  }
  flooders.clear();
  // Some reads were served, some refused at once; none waited out its
  // deadline or failed otherwise.
  EXPECT_GT(ok, 0);
  EXPECT_GT(exhausted, 0) << "the flood never passed calls_in_flight_max";
  EXPECT_EQ(other, 0) << "first: " << first_other;
  const MasterServerStats stats = server_->stats();
  EXPECT_EQ(stats.calls_overloaded_total, exhausted);
  EXPECT_EQ(stats.data_calls_in_flight, 0);

  // After the flood the master answers reads again.
  auto after = GrpcMasterClient::Connect(env_.env()->clock, server_->address(), RpcOptions{});
  ASSERT_TRUE(after.ok());
  GetReplicaListRequest req;
  req.name = ObjectName{"", "hot"};
  req.requester = ClientId(2);
  const absl::StatusOr<GetReplicaListResponse> read =
      test::Wait<absl::StatusOr<GetReplicaListResponse>>(
          [&](auto done) { (*after)->GetReplicaList(req, std::move(done)); });
  EXPECT_TRUE(read.ok()) << read.status();
}

}  // namespace
}  // namespace heatsink::runtime
