#include "runtime/rpc/grpc_master_client.h"

#include <chrono>
#include <functional>
#include <utility>

#include "absl/functional/any_invocable.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/base/check.h"
#include "core/base/status_macros.h"
#include "google/protobuf/arena.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/support/channel_arguments.h"
#include "runtime/etcd/etcd_client.h"
#include "runtime/rpc/convert.h"
#include "runtime/rpc/status.h"
#include "runtime/transport/tls_stream.h"

namespace heatsink::runtime {

namespace {

google::protobuf::ArenaOptions InlineArena(char* block, size_t size) {
  google::protobuf::ArenaOptions options;
  options.initial_block = block;
  options.initial_block_size = size;
  options.start_block_size = 16 << 10;
  options.max_block_size = 256 << 10;
  return options;
}

}  // namespace

// The answer lives on an arena whose first 2 KiB are inline, so a replica
// list, or a batch of them, is parsed with few or no allocations.
template <typename Req, typename Resp>
struct GrpcMasterClient::PendingCall {
  grpc::ClientContext ctx;
  Req req;
  alignas(16) char arena_block[2048];
  google::protobuf::Arena arena{InlineArena(arena_block, sizeof(arena_block))};
  Resp& resp = *google::protobuf::Arena::CreateMessage<Resp>(&arena);
  // Turns the finished RPC into the caller's result and runs its `done`.
  absl::AnyInvocable<void(const grpc::Status&, Resp&) &&> finish;
};

namespace {

// How long one connection attempt to the master may take (see NewChannel).
constexpr int kConnectAttemptMs = 10'000;

grpc::Status NoLeader() {
  return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                      "no_leader: no master leads under etcd yet (the leader key is absent or "
                      "etcd is unreachable)");
}

// Depth of Start() calls on this thread: a gRPC callback that sees it
// non-zero is running inside the issuing call and must be deferred.
thread_local int t_issuing = 0;

template <typename Req, typename Resp>
using Pending = GrpcMasterClient::PendingCall<Req, Resp>;

// Finishers: map the RPC status (and response) to the MasterClient callback.
template <typename Resp>
absl::AnyInvocable<void(const grpc::Status&, Resp&) &&> StatusOnly(
    MasterClient::StatusCallback done) {
  return [done = std::move(done)](const grpc::Status& status, Resp&) mutable {
    std::move(done)(FromGrpcStatus(status));
  };
}

template <typename Resp, typename Result>
absl::AnyInvocable<void(const grpc::Status&, Resp&) &&> WithResult(
    MasterClient::Callback<Result> done) {
  return [done = std::move(done)](const grpc::Status& status, Resp& resp) mutable {
    if (!status.ok()) {
      std::move(done)(FromGrpcStatus(status));
      return;
    }
    std::move(done)(absl::StatusOr<Result>(FromProto(resp)));
  };
}

v1::CopyTaskFence FenceProto(const CopyTaskFence& fence) {
  v1::CopyTaskFence out;
  ToProto(fence, &out);
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<GrpcMasterClient>> GrpcMasterClient::Connect(
    const Clock* clock, const std::string& master_address, const RpcOptions& options) {
  HS_CHECK(clock != nullptr);
  HS_RETURN_IF_ERROR(options.Validate());
  if (master_address.empty()) return absl::InvalidArgumentError("empty master address");
  if (IsEtcdAddress(master_address)) return FollowEtcd(clock, master_address, options);
  HS_ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel,
                      NewChannel(master_address, options));
  return std::unique_ptr<GrpcMasterClient>(
      new GrpcMasterClient(clock, master_address, std::move(channel), options));
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> GrpcMasterClient::NewChannel(
    const std::string& master_address, const RpcOptions& options) {
  HS_ASSIGN_OR_RETURN(std::shared_ptr<grpc::ChannelCredentials> credentials,
                      MakeChannelCredentials(options.tls));
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options.message_bytes_max);
  args.SetMaxSendMessageSize(options.message_bytes_max);
  // A restarted master is back within a second or two: reconnect soon after
  // it (gRPC's default backoff grows to two minutes), so stores re-report
  // and clients read again without waiting out a long backoff.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1'000);
  // gRPC takes the "min reconnect backoff" as the time one connection
  // attempt (TCP, TLS handshake, HTTP/2 settings) may last, not as a delay:
  // at 100 ms, TLS handshakes on a loaded machine timed out and the calls
  // waiting for them failed with UNAVAILABLE. A refused connection still
  // fails at once and is retried after the backoff above.
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, kConnectAttemptMs);
  if (options.own_connection) args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateCustomChannel(master_address, credentials, args);
  if (channel == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("cannot create a channel to ", master_address));
  }
  return channel;
}

absl::StatusOr<std::unique_ptr<GrpcMasterClient>> GrpcMasterClient::FollowEtcd(
    const Clock* clock, const std::string& etcd_address, const RpcOptions& options) {
  HS_ASSIGN_OR_RETURN(EtcdTarget target, ParseEtcdTarget(etcd_address));
  HS_ASSIGN_OR_RETURN(std::unique_ptr<EtcdClient> etcd,
                      EtcdClient::Create(EtcdClientOptions{.endpoints = target.endpoints}));
  std::unique_ptr<GrpcMasterClient> client(new GrpcMasterClient(clock, "", nullptr, options));
  GrpcMasterClient* raw = client.get();
  client->follower_ = std::make_unique<LeaderFollower>(
      std::move(etcd),
      LeaderFollowerOptions{.leader_key = LeaderKey(target.prefix),
                            .poll_interval_ms = kLeaderPollIntervalMs},
      [raw](const std::string& address, int64_t) { raw->SwitchTo(address); });
  // No leader yet, or etcd down for now: calls are UNAVAILABLE until the
  // follower finds one.
  (void)client->follower_->PollOnce();
  client->follower_->Start();
  return client;
}

void GrpcMasterClient::SwitchTo(const std::string& address) {
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = NewChannel(address, options_);
  if (!channel.ok()) return;  // the options were checked at Connect: not reached
  std::shared_ptr<v1::Master::Stub> fresh = v1::Master::NewStub(*channel);
  MutexLock lock(&stub_mu_);
  master_address_ = address;
  // The old channel stays (as ReloadTls keeps its): gRPC 1.51 crashed in
  // its callback queue's thread ("nexting_thread") when a channel with calls
  // still in flight towards a stopped leader was destroyed here. Bounded:
  // the oldest go once kRetiredStubsMax were kept.
  if (stub_ != nullptr) retired_stubs_.push_back(std::move(stub_));
  if (retired_stubs_.size() > kRetiredStubsMax) retired_stubs_.erase(retired_stubs_.begin());
  stub_ = std::move(fresh);
}

std::string GrpcMasterClient::master_address() const {
  MutexLock lock(&stub_mu_);
  return master_address_;
}

grpc::Status GrpcMasterClient::Fence(const grpc::ClientContext& ctx, grpc::Status status) {
  const auto& metadata = ctx.GetServerInitialMetadata();
  const auto it = metadata.find(kLeaderEpochMetadataKey);
  int64_t epoch = 0;
  if (it != metadata.end() &&
      absl::SimpleAtoi(absl::string_view(it->second.data(), it->second.size()), &epoch)) {
    int64_t seen = epoch_seen_.load(std::memory_order_acquire);
    while (epoch > seen &&
           !epoch_seen_.compare_exchange_weak(seen, epoch, std::memory_order_acq_rel)) {
    }
    if (epoch < seen) {
      status = grpc::Status(grpc::StatusCode::UNAVAILABLE,
                            absl::StrCat("stale_leader: an answer from leader epoch ", epoch,
                                         " after one from epoch ", seen, " was refused"));
    }
  }
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE && follower_ != nullptr) {
    follower_->Wake();
  }
  return status;
}

GrpcMasterClient::GrpcMasterClient(const Clock* clock, std::string master_address,
                                   std::shared_ptr<grpc::Channel> channel,
                                   const RpcOptions& options)
    : options_(options),
      master_address_(std::move(master_address)),
      stub_(channel == nullptr ? nullptr : v1::Master::NewStub(channel)),
      clock_(clock),
      deferred_(clock_, ThreadPoolOptions{.threads = 1}) {
  HS_CHECK(clock_ != nullptr);
}

std::shared_ptr<v1::Master::Stub> GrpcMasterClient::stub() const {
  MutexLock lock(&stub_mu_);
  return stub_;
}

absl::Status GrpcMasterClient::ReloadTls() {
  if (!options_.tls.client_enabled()) {
    return absl::FailedPreconditionError("the channel to the master does not use TLS");
  }
  // OpenSSL checks the files first (they parse, the key matches): a bad set
  // leaves the channel as it is.
  HS_RETURN_IF_ERROR(TlsContext::Create(TlsContext::Side::kClient,
                                        {options_.tls.cert_path, options_.tls.key_path,
                                         options_.tls.ca_path})
                         .status());
  const std::string address = master_address();
  if (address.empty()) return absl::OkStatus();  // no leader yet: its channel will use the files
  HS_ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel, NewChannel(address, options_));
  std::shared_ptr<v1::Master::Stub> fresh = v1::Master::NewStub(channel);
  MutexLock lock(&stub_mu_);
  // Calls started on the old channel finish there.
  retired_stubs_.push_back(std::exchange(stub_, std::move(fresh)));
  return absl::OkStatus();
}

GrpcMasterClient::~GrpcMasterClient() {
  follower_.reset();
  {
    MutexLock lock(&mu_);
    while (in_flight_ != 0) idle_.Wait(&mu_);
  }
  deferred_.Shutdown();
}

size_t GrpcMasterClient::calls_in_flight() const {
  MutexLock lock(&mu_);
  return in_flight_;
}

void GrpcMasterClient::Prepare(grpc::ClientContext* ctx, ClientId caller) const {
  ctx->set_deadline(std::chrono::system_clock::now() +
                    std::chrono::milliseconds(options_.call_timeout_ms));
  if (caller.valid()) ctx->AddMetadata(kClientIdMetadataKey, absl::StrCat(caller.value));
}

void GrpcMasterClient::CallEnded() {
  MutexLock lock(&mu_);
  if (--in_flight_ == 0) idle_.SignalAll();
}

template <typename Req, typename Resp, typename Issue>
void GrpcMasterClient::Start(std::unique_ptr<PendingCall<Req, Resp>> call, ClientId caller,
                             Issue issue) {
  Prepare(&call->ctx, caller);
  {
    MutexLock lock(&mu_);
    ++in_flight_;
  }
  PendingCall<Req, Resp>* raw = call.release();
  // std::function needs a copyable callable: it holds only the raw pointer,
  // which the completion takes back exactly once.
  std::function<void(grpc::Status)> on_done = [this, raw](grpc::Status status) {
    status = Fence(raw->ctx, std::move(status));
    auto finish = [this, raw, status = std::move(status)]() mutable {
      std::unique_ptr<PendingCall<Req, Resp>> owned(raw);
      std::move(owned->finish)(status, owned->resp);
      owned.reset();
      CallEnded();
    };
    if (t_issuing > 0) {
      deferred_.Post(std::move(finish));
    } else {
      finish();
    }
  };
  std::shared_ptr<v1::Master::Stub> to = stub();
  if (to == nullptr) {
    // Following etcd and no leader known yet: finish off this thread.
    deferred_.Post([this, raw] {
      std::unique_ptr<PendingCall<Req, Resp>> owned(raw);
      std::move(owned->finish)(NoLeader(), owned->resp);
      owned.reset();
      CallEnded();
    });
    return;
  }
  ++t_issuing;
  issue(to->async(), &raw->ctx, &raw->req, &raw->resp, std::move(on_done));
  --t_issuing;
}

#define HS_GRPC_ISSUE(Method)                                                             \
  [](v1::Master::Stub::async_interface* async, grpc::ClientContext* ctx, const auto* req, \
     auto* resp, std::function<void(grpc::Status)> on_done) {                             \
    async->Method(ctx, req, resp, std::move(on_done));                                    \
  }

void GrpcMasterClient::RegisterClient(const RegisterClientRequest& req, StatusCallback done) {
  auto call = std::make_unique<Pending<v1::RegisterClientRequest, v1::Empty>>();
  call->req.set_host(req.host);
  call->req.set_domain(req.domain);
  call->finish = StatusOnly<v1::Empty>(std::move(done));
  Start(std::move(call), req.client_id, HS_GRPC_ISSUE(RegisterClient));
}

void GrpcMasterClient::Heartbeat(ClientId client, StatusCallback done) {
  auto call = std::make_unique<Pending<v1::Empty, v1::Empty>>();
  call->finish = StatusOnly<v1::Empty>(std::move(done));
  Start(std::move(call), client, HS_GRPC_ISSUE(Heartbeat));
}

void GrpcMasterClient::MountSegment(ClientId client, const MountSegmentRequest& req,
                                    StatusCallback done) {
  auto call = std::make_unique<Pending<v1::MountSegmentRequest, v1::Empty>>();
  ToProto(req, &call->req);
  call->finish = StatusOnly<v1::Empty>(std::move(done));
  Start(std::move(call), client, HS_GRPC_ISSUE(MountSegment));
}

void GrpcMasterClient::UnmountSegment(ClientId client, SegmentId segment, StatusCallback done) {
  auto call = std::make_unique<Pending<v1::UnmountSegmentRequest, v1::Empty>>();
  call->req.set_segment_id(segment.value);
  call->finish = StatusOnly<v1::Empty>(std::move(done));
  Start(std::move(call), client, HS_GRPC_ISSUE(UnmountSegment));
}

void GrpcMasterClient::PutStart(ClientId client, const PutStartRequest& req,
                                Callback<PutStartResponse> done) {
  auto call = std::make_unique<Pending<v1::PutStartRequest, v1::PutStartResponse>>();
  ToProto(req, &call->req);
  call->finish = WithResult<v1::PutStartResponse, PutStartResponse>(std::move(done));
  Start(std::move(call), client, HS_GRPC_ISSUE(PutStart));
}

void GrpcMasterClient::PutEnd(ClientId client, const PutEndRequest& req, StatusCallback done) {
  auto call = std::make_unique<Pending<v1::PutFenceRequest, v1::Empty>>();
  ToProto(req.name, call->req.mutable_name());
  call->req.set_version(req.version);
  call->finish = StatusOnly<v1::Empty>(std::move(done));
  Start(std::move(call), client, HS_GRPC_ISSUE(PutEnd));
}

void GrpcMasterClient::PutRevoke(ClientId client, const PutRevokeRequest& req,
                                 StatusCallback done) {
  auto call = std::make_unique<Pending<v1::PutFenceRequest, v1::Empty>>();
  ToProto(req.name, call->req.mutable_name());
  call->req.set_version(req.version);
  call->finish = StatusOnly<v1::Empty>(std::move(done));
  Start(std::move(call), client, HS_GRPC_ISSUE(PutRevoke));
}

void GrpcMasterClient::BatchPutStart(ClientId client, const BatchPutStartRequest& req,
                                     Callback<BatchPutStartResponse> done) {
  auto call = std::make_unique<Pending<v1::BatchPutStartRequest, v1::BatchPutStartResponse>>();
  ToProto(req, &call->req);
  call->finish = WithResult<v1::BatchPutStartResponse, BatchPutStartResponse>(std::move(done));
  Start(std::move(call), client, HS_GRPC_ISSUE(BatchPutStart));
}

void GrpcMasterClient::BatchPutEnd(ClientId client, const BatchPutEndRequest& req,
                                   Callback<BatchPutResponse> done) {
  auto call = std::make_unique<Pending<v1::BatchPutFenceRequest, v1::BatchPutResponse>>();
  ToProto(req, &call->req);
  call->finish = WithResult<v1::BatchPutResponse, BatchPutResponse>(std::move(done));
  Start(std::move(call), client, HS_GRPC_ISSUE(BatchPutEnd));
}

void GrpcMasterClient::BatchPutRevoke(ClientId client, const BatchPutRevokeRequest& req,
                                      Callback<BatchPutResponse> done) {
  auto call = std::make_unique<Pending<v1::BatchPutFenceRequest, v1::BatchPutResponse>>();
  ToProto(req, &call->req);
  call->finish = WithResult<v1::BatchPutResponse, BatchPutResponse>(std::move(done));
  Start(std::move(call), client, HS_GRPC_ISSUE(BatchPutRevoke));
}

void GrpcMasterClient::GetReplicaList(const GetReplicaListRequest& req,
                                      Callback<GetReplicaListResponse> done) {
  auto call = std::make_unique<Pending<v1::GetReplicaListRequest, v1::GetReplicaListResponse>>();
  ToProto(req, &call->req);
  call->finish = WithResult<v1::GetReplicaListResponse, GetReplicaListResponse>(std::move(done));
  Start(std::move(call), req.requester, HS_GRPC_ISSUE(GetReplicaList));
}

void GrpcMasterClient::BatchGetReplicaList(const BatchGetReplicaListRequest& req,
                                           Callback<BatchGetReplicaListResponse> done) {
  auto call =
      std::make_unique<Pending<v1::BatchGetReplicaListRequest, v1::BatchGetReplicaListResponse>>();
  ToProto(req, &call->req);
  call->finish =
      WithResult<v1::BatchGetReplicaListResponse, BatchGetReplicaListResponse>(std::move(done));
  Start(std::move(call), req.requester, HS_GRPC_ISSUE(BatchGetReplicaList));
}

void GrpcMasterClient::Remove(const RemoveRequest& req, StatusCallback done) {
  auto call = std::make_unique<Pending<v1::RemoveRequest, v1::Empty>>();
  ToProto(req.name, call->req.mutable_name());
  call->finish = StatusOnly<v1::Empty>(std::move(done));
  Start(std::move(call), ClientId(options_.caller_client_id), HS_GRPC_ISSUE(Remove));
}

void GrpcMasterClient::ReportManifest(ClientId client, const ReportManifestRequest& req,
                                      Callback<ReportManifestResponse> done) {
  auto call = std::make_unique<Pending<v1::ReportManifestRequest, v1::ReportManifestResponse>>();
  call->req.set_last(req.last);
  for (const ManifestEntry& e : req.entries) ToProto(e, call->req.add_entries());
  call->finish = [done = std::move(done)](const grpc::Status& status,
                                          v1::ReportManifestResponse& resp) mutable {
    if (!status.ok()) {
      std::move(done)(FromGrpcStatus(status));
      return;
    }
    ReportManifestResponse out;
    out.results.reserve(resp.results_size());
    for (const v1::RpcStatus& s : resp.results()) out.results.push_back(FromProto(s));
    std::move(done)(std::move(out));
  };
  Start(std::move(call), client, HS_GRPC_ISSUE(ReportManifest));
}

void GrpcMasterClient::FetchTasks(ClientId client, size_t batch_max, uint64_t manifest_ack_seq,
                                  Callback<FetchTasksResponse> done) {
  auto call = std::make_unique<Pending<v1::FetchTasksRequest, v1::FetchTasksResponse>>();
  call->req.set_batch_max(batch_max);
  call->req.set_manifest_ack_seq(manifest_ack_seq);
  call->finish = [done = std::move(done)](const grpc::Status& status,
                                          v1::FetchTasksResponse& resp) mutable {
    if (!status.ok()) {
      std::move(done)(FromGrpcStatus(status));
      return;
    }
    FetchTasksResponse out;
    out.tasks.reserve(resp.tasks_size());
    for (const v1::Task& task : resp.tasks()) out.tasks.push_back(FromProto(task));
    out.manifest_changes.reserve(resp.manifest_changes_size());
    for (const v1::ManifestChange& c : resp.manifest_changes()) {
      out.manifest_changes.push_back(FromProto(c));
    }
    std::move(done)(std::move(out));
  };
  Start(std::move(call), client, HS_GRPC_ISSUE(FetchTasks));
}

void GrpcMasterClient::MarkTaskComplete(ClientId client, const MarkTaskCompleteRequest& req,
                                        StatusCallback done) {
  auto call = std::make_unique<Pending<v1::MarkTaskCompleteRequest, v1::Empty>>();
  ToProto(req, &call->req);
  call->finish = StatusOnly<v1::Empty>(std::move(done));
  Start(std::move(call), client, HS_GRPC_ISSUE(MarkTaskComplete));
}

void GrpcMasterClient::CopyStart(ClientId client, const CopyStartRequest& req,
                                 Callback<CopyStartResponse> done) {
  auto call = std::make_unique<Pending<v1::CopyTaskFence, v1::CopyStartResponse>>();
  call->req = FenceProto(req);
  call->finish = WithResult<v1::CopyStartResponse, CopyStartResponse>(std::move(done));
  Start(std::move(call), client, HS_GRPC_ISSUE(CopyStart));
}

void GrpcMasterClient::CopyEnd(ClientId client, const CopyEndRequest& req, StatusCallback done) {
  auto call = std::make_unique<Pending<v1::CopyTaskFence, v1::Empty>>();
  call->req = FenceProto(req);
  call->finish = StatusOnly<v1::Empty>(std::move(done));
  Start(std::move(call), client, HS_GRPC_ISSUE(CopyEnd));
}

void GrpcMasterClient::CopyRevoke(ClientId client, const CopyRevokeRequest& req,
                                  StatusCallback done) {
  auto call = std::make_unique<Pending<v1::CopyTaskFence, v1::Empty>>();
  call->req = FenceProto(req);
  call->finish = StatusOnly<v1::Empty>(std::move(done));
  Start(std::move(call), client, HS_GRPC_ISSUE(CopyRevoke));
}

void GrpcMasterClient::DynamicReplicaCopyStart(ClientId client, const CopyStartRequest& req,
                                               Callback<CopyStartResponse> done) {
  auto call = std::make_unique<Pending<v1::CopyTaskFence, v1::CopyStartResponse>>();
  call->req = FenceProto(req);
  call->finish = WithResult<v1::CopyStartResponse, CopyStartResponse>(std::move(done));
  Start(std::move(call), client, HS_GRPC_ISSUE(DynamicReplicaCopyStart));
}

void GrpcMasterClient::DynamicReplicaCopyEnd(ClientId client, const CopyEndRequest& req,
                                             StatusCallback done) {
  auto call = std::make_unique<Pending<v1::CopyTaskFence, v1::Empty>>();
  call->req = FenceProto(req);
  call->finish = StatusOnly<v1::Empty>(std::move(done));
  Start(std::move(call), client, HS_GRPC_ISSUE(DynamicReplicaCopyEnd));
}

void GrpcMasterClient::DynamicReplicaCopyRevoke(ClientId client, const CopyRevokeRequest& req,
                                                StatusCallback done) {
  auto call = std::make_unique<Pending<v1::CopyTaskFence, v1::Empty>>();
  call->req = FenceProto(req);
  call->finish = StatusOnly<v1::Empty>(std::move(done));
  Start(std::move(call), client, HS_GRPC_ISSUE(DynamicReplicaCopyRevoke));
}

#undef HS_GRPC_ISSUE

absl::Status GrpcMasterClient::Ping() {
  std::shared_ptr<v1::Master::Stub> to = stub();
  if (to == nullptr) return FromGrpcStatus(NoLeader());
  grpc::ClientContext ctx;
  Prepare(&ctx, ClientId());
  v1::Empty req, resp;
  return FromGrpcStatus(Fence(ctx, to->Ping(&ctx, req, &resp)));
}

absl::StatusOr<std::vector<SegmentView>> GrpcMasterClient::ListSegments() {
  std::shared_ptr<v1::Master::Stub> to = stub();
  if (to == nullptr) return FromGrpcStatus(NoLeader());
  grpc::ClientContext ctx;
  Prepare(&ctx, ClientId());
  v1::Empty req;
  v1::ListSegmentsResponse resp;
  HS_RETURN_IF_ERROR(FromGrpcStatus(Fence(ctx, to->ListSegments(&ctx, req, &resp))));
  std::vector<SegmentView> out;
  out.reserve(resp.segments_size());
  for (const v1::SegmentView& view : resp.segments()) out.push_back(FromProto(view));
  return out;
}

absl::StatusOr<CopyLeaseGrant> GrpcMasterClient::CheckCopyLease(ClientId asker,
                                                                const CopyLeaseQuery& query) {
  std::shared_ptr<v1::Master::Stub> to = stub();
  if (to == nullptr) return FromGrpcStatus(NoLeader());
  grpc::ClientContext ctx;
  Prepare(&ctx, asker);
  v1::CheckCopyLeaseRequest req;
  req.set_lease_id(query.lease_id.value);
  req.set_reader(query.reader.value);
  req.set_segment_id(query.segment.value);
  req.set_offset(query.offset);
  req.set_size_bytes(query.size);
  v1::CheckCopyLeaseResponse resp;
  HS_RETURN_IF_ERROR(FromGrpcStatus(Fence(ctx, to->CheckCopyLease(&ctx, req, &resp))));
  return CopyLeaseGrant{resp.remaining_ms() * 1'000'000};
}

}  // namespace heatsink::runtime
