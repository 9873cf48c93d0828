// The fixture of the in-process control-plane tests (control_plane_test.cc,
// batch_put_test.cc): a ReplicatedMaster served by MasterServer on an
// ephemeral port, store nodes that register, mount and run REPLICA_COPY
// tasks through GrpcMasterClient, and HeatsinkClient writers and readers.
#ifndef HEATSINK_TESTS_RUNTIME_RPC_CONTROL_PLANE_FIXTURE_H_
#define HEATSINK_TESTS_RUNTIME_RPC_CONTROL_PLANE_FIXTURE_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/env/rng.h"
#include "core/replication/replicated_master.h"
#include "gtest/gtest.h"
#include "runtime/client/heatsink_client.h"
#include "runtime/env/runtime_env.h"
#include "runtime/rpc/grpc_master_client.h"
#include "runtime/rpc/master_server.h"
#include "runtime/store/segment_directory_resolver.h"
#include "runtime/store/store_node.h"
#include "tests/runtime/rpc/rpc_test_util.h"

namespace heatsink::runtime::test {

inline constexpr uint64_t kSegmentBytes = 8 << 20;

// Polls `condition` every 10 ms for up to `timeout`.
template <typename Fn>
bool WaitFor(Fn condition, absl::Duration timeout = absl::Seconds(20)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return condition();
}

struct Store {
  std::unique_ptr<GrpcMasterClient> rpc;
  std::unique_ptr<SegmentDirectoryResolver> resolver;
  std::unique_ptr<StoreNode> node;
};

class ControlPlaneTest : public ::testing::Test {
 protected:
  void StartCluster(DynamicReplicationMode mode, StoreDataMover mover = StoreDataMover::kTcp) {
    data_mover_ = mover;
    MasterKnobs master_knobs;
    master_knobs.sweep_interval_ms = 100;
    ReplicationKnobs replication;
    replication.dynamic_replication_mode = mode;
    replication.dynamic_replication_heat_window_seconds = 1;
    replication.dynamic_replication_admission_qps_threshold = 4.0;  // 4 reads in 1 s
    replication.dynamic_replication_domain_aware = true;
    replication.dynamic_replication_lease_ttl_ms = 10'000;
    absl::StatusOr<std::unique_ptr<ReplicatedMaster>> master =
        ReplicatedMaster::Create(env_.env(), master_knobs, replication, nullptr);
    ASSERT_TRUE(master.ok()) << master.status();
    master_ = *std::move(master);
    absl::StatusOr<std::unique_ptr<MasterServer>> server =
        MasterServer::Start(master_.get(), "127.0.0.1:0", rpc_options_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    AddStore(ClientId(1), "host-a", "a");
    AddStore(ClientId(2), "host-b", "b");
    ASSERT_TRUE(WaitFor([&] { return master_->master().ListSegments().size() == 2; }));
  }

  void AddStore(ClientId id, const std::string& host, const std::string& domain) {
    Store store;
    absl::StatusOr<std::unique_ptr<GrpcMasterClient>> rpc =
        GrpcMasterClient::Connect(env_.env()->clock, server_->address(), rpc_options_);
    ASSERT_TRUE(rpc.ok()) << rpc.status();
    store.rpc = *std::move(rpc);
    GrpcMasterClient* raw = store.rpc.get();
    store.resolver = std::make_unique<SegmentDirectoryResolver>(
        env_.env()->clock, [raw] { return raw->ListSegments(); });
    StoreNodeOptions options;
    options.client_id = id;
    options.host = host;
    options.domain = domain;
    options.segment_bytes = kSegmentBytes;
    options.data_mover = data_mover_;
    options.ucx_put_chunk_bytes = uint64_t{1} << 20;
    options.worker.heartbeat_interval_ms = 200;
    options.worker.fetch_interval_ms = 20;
    absl::StatusOr<std::unique_ptr<StoreNode>> node =
        StoreNode::Start(env_.env(), store.rpc.get(), store.resolver.get(), options);
    ASSERT_TRUE(node.ok()) << node.status();
    store.node = *std::move(node);
    stores_.push_back(std::move(store));
  }

  std::unique_ptr<HeatsinkClient> MakeClient(ClientId id, const std::string& host,
                                             const std::string& domain) {
    absl::StatusOr<std::unique_ptr<GrpcMasterClient>> rpc =
        GrpcMasterClient::Connect(env_.env()->clock, server_->address(), rpc_options_);
    EXPECT_TRUE(rpc.ok()) << rpc.status();
    client_rpcs_.push_back(*std::move(rpc));
    HeatsinkClientOptions options;
    options.client_id = id;
    options.host = host;
    options.domain = domain;
    options.tenant = "t1";
    options.preferred_segments = {stores_[0].node->segment_ids()[0]};
    return std::make_unique<HeatsinkClient>(client_rpcs_.back().get(), options);
  }

  void TearDown() override {
    for (Store& store : stores_) store.node->Stop();
    if (server_ != nullptr) server_->Shutdown(absl::Seconds(1));
    env_.Shutdown();
    stores_.clear();
    client_rpcs_.clear();
  }

  RuntimeEnv env_{RuntimeEnvOptions{.executor = {.threads = 4}, .seed = 7}};
  StoreDataMover data_mover_ = StoreDataMover::kTcp;
  RpcOptions rpc_options_;
  std::unique_ptr<ReplicatedMaster> master_;
  std::unique_ptr<MasterServer> server_;
  std::vector<Store> stores_;
  std::vector<std::unique_ptr<GrpcMasterClient>> client_rpcs_;
};

}  // namespace heatsink::runtime::test

#endif  // HEATSINK_TESTS_RUNTIME_RPC_CONTROL_PLANE_FIXTURE_H_
