#include "runtime/rpc/master_server.h"

#include <chrono>
#include <exception>
#include <iostream>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "grpcpp/resource_quota.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "grpcpp/server_context.h"
#include "heatsink/master.grpc.pb.h"
#include "core/base/status_macros.h"
#include "runtime/rpc/convert.h"
#include "runtime/rpc/status.h"

namespace heatsink::runtime {

class MasterServer::Service final : public v1::Master::Service {
 public:
  Service(MasterHandler* handler, TenantBindings tenants)
      : handler_(handler), tenants_(std::move(tenants)) {}

  MasterServerStats stats() const {
    MasterServerStats s;
    s.calls_total = calls_.load(std::memory_order_relaxed);
    s.calls_failed_total = failed_.load(std::memory_order_relaxed);
    s.calls_unauthenticated_total = unauthenticated_.load(std::memory_order_relaxed);
    s.get_replica_list_calls_total = get_replica_list_.load(std::memory_order_relaxed);
    s.calls_permission_denied_total = permission_denied_.load(std::memory_order_relaxed);
    return s;
  }

  grpc::Status Ping(grpc::ServerContext*, const v1::Empty*, v1::Empty*) override {
    return Finish(absl::OkStatus());
  }

  grpc::Status RegisterClient(grpc::ServerContext* ctx, const v1::RegisterClientRequest* req,
                              v1::Empty*) override {
    return ForCaller(ctx, [&](ClientId caller) {
      return handler_->RegisterClient(RegisterClientRequest{caller, req->host(), req->domain()});
    });
  }

  grpc::Status Heartbeat(grpc::ServerContext* ctx, const v1::Empty*, v1::Empty*) override {
    return ForCaller(ctx, [&](ClientId caller) { return handler_->Heartbeat(caller); });
  }

  grpc::Status MountSegment(grpc::ServerContext* ctx, const v1::MountSegmentRequest* req,
                            v1::Empty*) override {
    return ForCaller(ctx, [&](ClientId caller) {
      return handler_->MountSegment(caller, FromProto(*req));
    });
  }

  grpc::Status UnmountSegment(grpc::ServerContext* ctx, const v1::UnmountSegmentRequest* req,
                              v1::Empty*) override {
    return ForCaller(ctx, [&](ClientId caller) {
      return handler_->UnmountSegment(caller, SegmentId(req->segment_id()));
    });
  }

  grpc::Status ReportManifest(grpc::ServerContext* ctx, const v1::ReportManifestRequest* req,
                              v1::ReportManifestResponse* resp) override {
    return ForCaller(ctx, [&](ClientId caller) -> absl::Status {
      ReportManifestRequest in;
      in.last = req->last();
      in.entries.reserve(req->entries_size());
      for (const v1::ManifestEntry& e : req->entries()) in.entries.push_back(FromProto(e));
      absl::StatusOr<ReportManifestResponse> r = handler_->ReportManifest(caller, in);
      if (!r.ok()) return r.status();
      for (const absl::Status& s : r->results) {
        // Rejected or discarded entries are logged; each message names the
        // store, the key, the version and the range.
        if (!s.ok()) std::cerr << "heatsink-master: manifest: " << s << "\n";
        ToProto(s, resp->add_results());
      }
      return absl::OkStatus();
    });
  }

  grpc::Status ListSegments(grpc::ServerContext*, const v1::Empty*,
                            v1::ListSegmentsResponse* resp) override {
    return Guarded([&] {
      for (const SegmentView& view : handler_->ListSegments()) ToProto(view, resp->add_segments());
      return absl::OkStatus();
    });
  }

  grpc::Status PutStart(grpc::ServerContext* ctx, const v1::PutStartRequest* req,
                        v1::PutStartResponse* resp) override {
    return ForCaller(ctx, [&](ClientId caller) -> absl::Status {
      HS_RETURN_IF_ERROR(tenants_.Check(caller, req->name().tenant()));
      absl::StatusOr<PutStartResponse> r = handler_->PutStart(caller, FromProto(*req));
      if (r.ok()) ToProto(*r, resp);
      return r.status();
    });
  }

  grpc::Status PutEnd(grpc::ServerContext* ctx, const v1::PutFenceRequest* req,
                      v1::Empty*) override {
    return ForCaller(ctx, [&](ClientId caller) -> absl::Status {
      HS_RETURN_IF_ERROR(tenants_.Check(caller, req->name().tenant()));
      return handler_->PutEnd(caller, PutEndRequest{FromProto(req->name()), req->version()});
    });
  }

  grpc::Status PutRevoke(grpc::ServerContext* ctx, const v1::PutFenceRequest* req,
                         v1::Empty*) override {
    return ForCaller(ctx, [&](ClientId caller) -> absl::Status {
      HS_RETURN_IF_ERROR(tenants_.Check(caller, req->name().tenant()));
      return handler_->PutRevoke(caller, PutRevokeRequest{FromProto(req->name()), req->version()});
    });
  }

  // Batch puts: every name must be the caller's tenant's, or the whole batch
  // is refused (PERMISSION_DENIED), as a single put would be.
  grpc::Status BatchPutStart(grpc::ServerContext* ctx, const v1::BatchPutStartRequest* req,
                             v1::BatchPutStartResponse* resp) override {
    return ForCaller(ctx, [&](ClientId caller) -> absl::Status {
      HS_RETURN_IF_ERROR(CheckNameTenants(caller, req->names()));
      absl::StatusOr<BatchPutStartResponse> r = handler_->BatchPutStart(caller, FromProto(*req));
      if (r.ok()) ToProto(*r, resp);
      return r.status();
    });
  }

  grpc::Status BatchPutEnd(grpc::ServerContext* ctx, const v1::BatchPutFenceRequest* req,
                           v1::BatchPutResponse* resp) override {
    return ForCaller(ctx, [&](ClientId caller) -> absl::Status {
      HS_RETURN_IF_ERROR(CheckFenceTenants(caller, *req));
      absl::StatusOr<BatchPutResponse> r =
          handler_->BatchPutEnd(caller, BatchPutEndFromProto(*req));
      if (r.ok()) ToProto(*r, resp);
      return r.status();
    });
  }

  grpc::Status BatchPutRevoke(grpc::ServerContext* ctx, const v1::BatchPutFenceRequest* req,
                              v1::BatchPutResponse* resp) override {
    return ForCaller(ctx, [&](ClientId caller) -> absl::Status {
      HS_RETURN_IF_ERROR(CheckFenceTenants(caller, *req));
      absl::StatusOr<BatchPutResponse> r =
          handler_->BatchPutRevoke(caller, BatchPutRevokeFromProto(*req));
      if (r.ok()) ToProto(*r, resp);
      return r.status();
    });
  }

  grpc::Status GetReplicaList(grpc::ServerContext* ctx, const v1::GetReplicaListRequest* req,
                              v1::GetReplicaListResponse* resp) override {
    get_replica_list_.fetch_add(1, std::memory_order_relaxed);
    return ForNamer(ctx, [&](ClientId caller) -> absl::Status {
      if (tenants_.enabled()) {
        HS_RETURN_IF_ERROR(CheckRequester(caller, req->requester()));
        HS_RETURN_IF_ERROR(tenants_.Check(caller, req->name().tenant()));
      }
      absl::StatusOr<GetReplicaListResponse> r = handler_->GetReplicaList(FromProto(*req));
      if (r.ok()) ToProto(*r, resp);
      return r.status();
    });
  }

  grpc::Status BatchGetReplicaList(grpc::ServerContext* ctx,
                                   const v1::BatchGetReplicaListRequest* req,
                                   v1::BatchGetReplicaListResponse* resp) override {
    return ForNamer(ctx, [&](ClientId caller) -> absl::Status {
      if (tenants_.enabled()) {
        HS_RETURN_IF_ERROR(CheckRequester(caller, req->requester()));
        HS_RETURN_IF_ERROR(CheckNameTenants(caller, req->names()));
      }
      absl::StatusOr<BatchGetReplicaListResponse> r =
          handler_->BatchGetReplicaList(FromProto(*req));
      if (r.ok()) ToProto(*r, resp);
      return r.status();
    });
  }

  grpc::Status Remove(grpc::ServerContext* ctx, const v1::RemoveRequest* req,
                      v1::Empty*) override {
    return ForNamer(ctx, [&](ClientId caller) -> absl::Status {
      HS_RETURN_IF_ERROR(tenants_.Check(caller, req->name().tenant()));
      return handler_->Remove(RemoveRequest{FromProto(req->name())});
    });
  }

  grpc::Status FetchTasks(grpc::ServerContext* ctx, const v1::FetchTasksRequest* req,
                          v1::FetchTasksResponse* resp) override {
    return ForCaller(ctx, [&](ClientId caller) -> absl::Status {
      absl::StatusOr<FetchTasksResponse> r =
          handler_->FetchTasks(caller, static_cast<size_t>(req->batch_max()),
                               req->manifest_ack_seq());
      if (!r.ok()) return r.status();
      for (const Task& task : r->tasks) ToProto(task, resp->add_tasks());
      for (const ManifestChange& c : r->manifest_changes) {
        ToProto(c, resp->add_manifest_changes());
      }
      return absl::OkStatus();
    });
  }

  grpc::Status MarkTaskComplete(grpc::ServerContext* ctx, const v1::MarkTaskCompleteRequest* req,
                                v1::Empty*) override {
    return ForCaller(ctx, [&](ClientId caller) {
      return handler_->MarkTaskComplete(caller, FromProto(*req));
    });
  }

  grpc::Status CopyStart(grpc::ServerContext* ctx, const v1::CopyTaskFence* req,
                         v1::CopyStartResponse* resp) override {
    return ForCaller(ctx, [&](ClientId caller) -> absl::Status {
      absl::StatusOr<CopyStartResponse> r = handler_->CopyStart(caller, FromProto(*req));
      if (r.ok()) ToProto(*r, resp);
      return r.status();
    });
  }

  grpc::Status CopyEnd(grpc::ServerContext* ctx, const v1::CopyTaskFence* req,
                       v1::Empty*) override {
    return ForCaller(ctx,
                     [&](ClientId caller) { return handler_->CopyEnd(caller, FromProto(*req)); });
  }

  grpc::Status CopyRevoke(grpc::ServerContext* ctx, const v1::CopyTaskFence* req,
                          v1::Empty*) override {
    return ForCaller(ctx, [&](ClientId caller) {
      return handler_->CopyRevoke(caller, FromProto(*req));
    });
  }

  // The source-client rule of dynamic copies is enforced by the handler
  // against `caller`, the identity of the channel, not a field of the message.
  grpc::Status DynamicReplicaCopyStart(grpc::ServerContext* ctx, const v1::CopyTaskFence* req,
                                       v1::CopyStartResponse* resp) override {
    return ForCaller(ctx, [&](ClientId caller) -> absl::Status {
      absl::StatusOr<CopyStartResponse> r =
          handler_->DynamicReplicaCopyStart(caller, FromProto(*req));
      if (r.ok()) ToProto(*r, resp);
      return r.status();
    });
  }

  grpc::Status DynamicReplicaCopyEnd(grpc::ServerContext* ctx, const v1::CopyTaskFence* req,
                                     v1::Empty*) override {
    return ForCaller(ctx, [&](ClientId caller) {
      return handler_->DynamicReplicaCopyEnd(caller, FromProto(*req));
    });
  }

  grpc::Status DynamicReplicaCopyRevoke(grpc::ServerContext* ctx, const v1::CopyTaskFence* req,
                                        v1::Empty*) override {
    return ForCaller(ctx, [&](ClientId caller) {
      return handler_->DynamicReplicaCopyRevoke(caller, FromProto(*req));
    });
  }

 private:
  grpc::Status Finish(const absl::Status& status) {
    calls_.fetch_add(1, std::memory_order_relaxed);
    if (!status.ok()) failed_.fetch_add(1, std::memory_order_relaxed);
    if (status.code() == absl::StatusCode::kPermissionDenied) {
      permission_denied_.fetch_add(1, std::memory_order_relaxed);
    }
    return ToGrpcStatus(status);
  }

  // Library exceptions (allocation failure inside protobuf, for example) stop
  // here and become INTERNAL instead of unwinding into gRPC.
  template <typename Fn>
  grpc::Status Guarded(Fn&& fn) {
    absl::Status status;
    try {
      status = fn();
    } catch (const std::exception& e) {
      status = absl::InternalError(absl::StrCat("exception in master call: ", e.what()));
    }
    return Finish(status);
  }

  // Calls that name objects: they need the caller's identity only when
  // tenants are bound (see tenant_bindings.h); otherwise `fn` sees the
  // identity when one was sent, else an invalid id.
  template <typename Fn>
  grpc::Status ForNamer(grpc::ServerContext* ctx, Fn&& fn) {
    if (tenants_.enabled()) return ForCaller(ctx, std::forward<Fn>(fn));
    return Guarded([&] { return fn(ClientId()); });
  }

  // Every name of a batch is the caller's tenant's, or the batch is refused.
  absl::Status CheckNameTenants(
      ClientId caller, const google::protobuf::RepeatedPtrField<v1::ObjectName>& names) const {
    for (const v1::ObjectName& name : names) {
      HS_RETURN_IF_ERROR(tenants_.Check(caller, name.tenant()));
    }
    return absl::OkStatus();
  }
  absl::Status CheckFenceTenants(ClientId caller, const v1::BatchPutFenceRequest& req) const {
    for (const v1::PutFenceRequest& put : req.puts()) {
      HS_RETURN_IF_ERROR(tenants_.Check(caller, put.name().tenant()));
    }
    return absl::OkStatus();
  }

  static absl::Status CheckRequester(ClientId caller, uint64_t requester) {
    if (requester != caller.value) {
      return absl::PermissionDeniedError(absl::StrCat("client ", caller.value,
                                                      " may not read as client ", requester));
    }
    return absl::OkStatus();
  }

  template <typename Fn>
  grpc::Status ForCaller(grpc::ServerContext* ctx, Fn&& fn) {
    const auto& metadata = ctx->client_metadata();
    const auto it = metadata.find(kClientIdMetadataKey);
    uint64_t id = 0;
    if (it == metadata.end() ||
        !absl::SimpleAtoi(absl::string_view(it->second.data(), it->second.size()), &id) ||
        id == 0) {
      unauthenticated_.fetch_add(1, std::memory_order_relaxed);
      return Finish(absl::UnauthenticatedError(
          absl::StrCat("missing or invalid '", kClientIdMetadataKey, "' metadata")));
    }
    return Guarded([&] { return fn(ClientId(id)); });
  }

  MasterHandler* const handler_;
  const TenantBindings tenants_;
  std::atomic<int64_t> calls_{0};
  std::atomic<int64_t> failed_{0};
  std::atomic<int64_t> unauthenticated_{0};
  std::atomic<int64_t> get_replica_list_{0};
  std::atomic<int64_t> permission_denied_{0};
};

absl::StatusOr<std::unique_ptr<MasterServer>> MasterServer::Start(
    MasterHandler* handler, const std::string& listen_address, const RpcOptions& options) {
  return Start(handler, listen_address, options, TenantBindings());
}

absl::StatusOr<std::unique_ptr<MasterServer>> MasterServer::Start(
    MasterHandler* handler, const std::string& listen_address, const RpcOptions& options,
    TenantBindings tenants) {
  HS_RETURN_IF_ERROR(options.Validate());
  HS_ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> credentials,
                      MakeServerCredentials(options.tls));
  std::unique_ptr<MasterServer> server(new MasterServer());
  server->service_ = std::make_unique<Service>(handler, std::move(tenants));

  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(listen_address, credentials, &port);
  builder.RegisterService(server->service_.get());
  builder.SetMaxReceiveMessageSize(options.message_bytes_max);
  builder.SetMaxSendMessageSize(options.message_bytes_max);
  grpc::ResourceQuota quota("heatsink-master");
  quota.SetMaxThreads(options.server_threads_max);
  builder.SetResourceQuota(quota);
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot serve on '", listen_address, "'"));
  }
  server->port_ = port;
  const size_t colon = listen_address.rfind(':');
  server->address_ = absl::StrCat(listen_address.substr(0, colon), ":", port);
  return server;
}

MasterServer::~MasterServer() { Shutdown(absl::ZeroDuration()); }

void MasterServer::Shutdown(absl::Duration grace) {
  std::lock_guard<std::mutex> lock(shutdown_mu_);
  if (shut_down_ || server_ == nullptr) return;
  shut_down_ = true;
  server_->Shutdown(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(grace));
  server_->Wait();
}

MasterServerStats MasterServer::stats() const { return service_->stats(); }

}  // namespace heatsink::runtime
