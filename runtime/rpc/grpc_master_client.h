// File: runtime/rpc/grpc_master_client.h
//
// MasterClient over gRPC: every call is one unary RPC on the heatsink.v1.Master
// service with the call deadline of RpcOptions, the caller's client id in the
// `heatsink-client-id` metadata, and bounded message sizes. The master's
// status comes back unchanged; transport failures are UNAVAILABLE or
// DEADLINE_EXCEEDED (core/worker/master_client.h's contract).
//
// `done` runs on a gRPC completion thread (or, if gRPC finishes a call before
// the issuing function returned, on the client's own executor thread), never
// inside the call. Callbacks must not block for long: they share gRPC's
// threads.
//
// Example:
//   HS_ASSIGN_OR_RETURN(auto client,
//                       GrpcMasterClient::Connect(env->clock, "127.0.0.1:5000", {}));
//   StoreWorker worker(env, client.get(), &mover, options);
//
// Following the leader (etcd failover, docs/runtime.md "Failover with
// etcd"). Connect() also takes "etcd://host:port[,host:port][/prefix]": the
// client then reads the leader key (LeaderFollower, every
// kLeaderPollIntervalMs and at once after an UNAVAILABLE answer) and sends
// every later call to the address published there; until a leader is known,
// calls are UNAVAILABLE. Every answer that carries a leader epoch
// (kLeaderEpochMetadataKey) is checked against the highest epoch this client
// has seen: an answer from a lower epoch, a deposed leader's, is refused as
// UNAVAILABLE ("stale_leader") and never reaches the caller's callback as
// success. Callers retry UNAVAILABLE (the store's heartbeat, the clients'
// loops): a new leader that does not know a store makes it register again
// and report its manifest.
//
// Clock: the process Env's clock, given to Connect; the client's own executor
// (the callbacks gRPC completes early) reads it. Call deadlines are gRPC's
// own, in real time.
//
// Lifetime: the destructor waits until every issued call has run its `done`
// (each call is bounded by its deadline). The clock must outlive the client.
// Thread-safe.
#ifndef HEATSINK_RUNTIME_RPC_GRPC_MASTER_CLIENT_H_
#define HEATSINK_RUNTIME_RPC_GRPC_MASTER_CLIENT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/base/mutex.h"
#include "core/env/clock.h"
#include "core/worker/master_client.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "heatsink/master.grpc.pb.h"
#include "runtime/env/thread_pool_executor.h"
#include "runtime/etcd/leader_follower.h"
#include "runtime/rpc/rpc_options.h"

namespace heatsink::runtime {

class GrpcMasterClient final : public MasterClient {
 public:
  // How often a client following etcd reads the leader key.
  static constexpr int64_t kLeaderPollIntervalMs = 250;

  // Creates the channel (connecting lazily). INVALID_ARGUMENT for bad
  // options, unreadable TLS files or a malformed etcd:// address.
  // REQUIRES: `clock` (the Env's) is not null and outlives the client.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<GrpcMasterClient>> Connect(
      const Clock* clock, const std::string& master_address, const RpcOptions& options);
  ~GrpcMasterClient() override;
  GrpcMasterClient(const GrpcMasterClient&) = delete;
  GrpcMasterClient& operator=(const GrpcMasterClient&) = delete;

  void RegisterClient(const RegisterClientRequest& req, StatusCallback done) override;
  void Heartbeat(ClientId client, StatusCallback done) override;
  void MountSegment(ClientId client, const MountSegmentRequest& req, StatusCallback done) override;
  void UnmountSegment(ClientId client, SegmentId segment, StatusCallback done) override;
  void PutStart(ClientId client, const PutStartRequest& req,
                Callback<PutStartResponse> done) override;
  void PutEnd(ClientId client, const PutEndRequest& req, StatusCallback done) override;
  void PutRevoke(ClientId client, const PutRevokeRequest& req, StatusCallback done) override;
  void BatchPutStart(ClientId client, const BatchPutStartRequest& req,
                     Callback<BatchPutStartResponse> done) override;
  void BatchPutEnd(ClientId client, const BatchPutEndRequest& req,
                   Callback<BatchPutResponse> done) override;
  void BatchPutRevoke(ClientId client, const BatchPutRevokeRequest& req,
                      Callback<BatchPutResponse> done) override;
  void GetReplicaList(const GetReplicaListRequest& req,
                      Callback<GetReplicaListResponse> done) override;
  void BatchGetReplicaList(const BatchGetReplicaListRequest& req,
                           Callback<BatchGetReplicaListResponse> done) override;
  void Remove(const RemoveRequest& req, StatusCallback done) override;
  void ReportManifest(ClientId client, const ReportManifestRequest& req,
                      Callback<ReportManifestResponse> done) override;
  void FetchTasks(ClientId client, size_t batch_max, uint64_t manifest_ack_seq,
                  Callback<FetchTasksResponse> done) override;
  void MarkTaskComplete(ClientId client, const MarkTaskCompleteRequest& req,
                        StatusCallback done) override;
  void CopyStart(ClientId client, const CopyStartRequest& req,
                 Callback<CopyStartResponse> done) override;
  void CopyEnd(ClientId client, const CopyEndRequest& req, StatusCallback done) override;
  void CopyRevoke(ClientId client, const CopyRevokeRequest& req, StatusCallback done) override;
  void DynamicReplicaCopyStart(ClientId client, const CopyStartRequest& req,
                               Callback<CopyStartResponse> done) override;
  void DynamicReplicaCopyEnd(ClientId client, const CopyEndRequest& req,
                             StatusCallback done) override;
  void DynamicReplicaCopyRevoke(ClientId client, const CopyRevokeRequest& req,
                                StatusCallback done) override;

  // Blocking calls beyond the MasterClient interface (tools, resolvers,
  // benchmarks). Each is bounded by the call deadline.
  [[nodiscard]] absl::Status Ping();
  [[nodiscard]] absl::StatusOr<std::vector<SegmentView>> ListSegments();
  // Master::CheckCopyLease, synchronous (a store's data service asks before
  // it serves a read under a copy lease), bounded by the call deadline.
  // `asker` (the store's own id) goes in the metadata as for every call.
  [[nodiscard]] absl::StatusOr<CopyLeaseGrant> CheckCopyLease(ClientId asker,
                                                              const CopyLeaseQuery& query);

  size_t calls_in_flight() const;
  // The highest leader epoch an answer carried (0: none yet, or no etcd).
  int64_t leader_epoch_seen() const { return epoch_seen_.load(std::memory_order_acquire); }
  // The address calls go to now ("" while following etcd and no leader is
  // known yet).
  std::string master_address() const;

  // Reads the TLS files of RpcOptions again (--tls-ca, --tls-cert,
  // --tls-key) and sends later calls over a new channel that uses them
  // (heatsink-store on SIGHUP); calls in flight finish on the old one.
  // FAILED_PRECONDITION without TLS; INVALID_ARGUMENT naming the file when
  // one does not load, and then nothing changes.
  [[nodiscard]] absl::Status ReloadTls();

  template <typename Req, typename Resp>
  struct PendingCall;

 private:
  GrpcMasterClient(const Clock* clock, std::string master_address,
                   std::shared_ptr<grpc::Channel> channel, const RpcOptions& options);
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<GrpcMasterClient>> FollowEtcd(
      const Clock* clock, const std::string& etcd_address, const RpcOptions& options);
  // Sends later calls to `address` (a new leader); calls in flight finish on
  // the old channel.
  void SwitchTo(const std::string& address);
  // The fence: `status` of a finished call, or UNAVAILABLE when its answer
  // came from a lower leader epoch than one seen before. Wakes the follower
  // on UNAVAILABLE.
  grpc::Status Fence(const grpc::ClientContext& ctx, grpc::Status status);
  [[nodiscard]] static absl::StatusOr<std::shared_ptr<grpc::Channel>> NewChannel(
      const std::string& master_address, const RpcOptions& options);
  std::shared_ptr<v1::Master::Stub> stub() const;

  // Sets the deadline and, for a valid `caller`, the identity metadata.
  void Prepare(grpc::ClientContext* ctx, ClientId caller) const;
  // Issues `call` through `issue` and arranges for its finish to run exactly
  // once, never inside this function.
  template <typename Req, typename Resp, typename Issue>
  void Start(std::unique_ptr<PendingCall<Req, Resp>> call, ClientId caller, Issue issue);
  void CallEnded();

  const RpcOptions options_;
  mutable Mutex stub_mu_;
  std::string master_address_ ABSL_GUARDED_BY(stub_mu_);
  // Null: no leader known yet.
  std::shared_ptr<v1::Master::Stub> stub_ ABSL_GUARDED_BY(stub_mu_);
  // Stubs of channels replaced by ReloadTls or a new leader (kept: both are
  // rare; at most kRetiredStubsMax).
  static constexpr size_t kRetiredStubsMax = 16;
  std::vector<std::shared_ptr<v1::Master::Stub>> retired_stubs_ ABSL_GUARDED_BY(stub_mu_);
  const Clock* const clock_;
  // Runs the rare callbacks gRPC completes before the issuing call returned.
  ThreadPoolExecutor deferred_;

  mutable Mutex mu_;
  CondVar idle_;
  size_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<int64_t> epoch_seen_{0};
  // Set when following etcd; last member, so it stops first.
  std::unique_ptr<LeaderFollower> follower_;
};

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_RPC_GRPC_MASTER_CLIENT_H_
