#include "runtime/rpc/master_server.h"

#include <chrono>
#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "grpc/grpc_security_constants.h"
#include "grpcpp/resource_quota.h"
#include "grpcpp/security/auth_context.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "grpcpp/server_context.h"
#include "heatsink/master.grpc.pb.h"
#include "core/base/status_macros.h"
#include "runtime/rpc/certificate_identity.h"
#include "runtime/rpc/convert.h"
#include "runtime/rpc/status.h"

namespace heatsink::runtime {

// Who calls: a client id (invalid when unknown) and, when its certificate
// names one, the tenant it is bound to (normalised).
struct Caller {
  ClientId id;
  std::string tenant;
};

class MasterServer::Service final : public v1::Master::Service {
 public:
  // `identities_proven`: the server verifies client certificates, and the
  // caller's identity comes from its certificate under `trust_domain`.
  Service(MasterHandler* handler, TenantBindings tenants, bool identities_proven,
          std::string trust_domain)
      : handler_(handler),
        tenants_(std::move(tenants)),
        identities_proven_(identities_proven),
        trust_domain_(std::move(trust_domain)) {}

  MasterServerStats stats() const {
    MasterServerStats s;
    s.calls_total = calls_.load(std::memory_order_relaxed);
    s.calls_failed_total = failed_.load(std::memory_order_relaxed);
    s.calls_unauthenticated_total = unauthenticated_.load(std::memory_order_relaxed);
    s.get_replica_list_calls_total = get_replica_list_.load(std::memory_order_relaxed);
    s.calls_permission_denied_total = permission_denied_.load(std::memory_order_relaxed);
    s.calls_identity_mismatch_total = identity_mismatch_.load(std::memory_order_relaxed);
    return s;
  }

  grpc::Status Ping(grpc::ServerContext*, const v1::Empty*, v1::Empty*) override {
    return Finish(absl::OkStatus());
  }

  grpc::Status RegisterClient(grpc::ServerContext* ctx, const v1::RegisterClientRequest* req,
                              v1::Empty*) override {
    return ForCaller(ctx, [&](const Caller& caller) {
      return handler_->RegisterClient(RegisterClientRequest{caller.id, req->host(), req->domain()});
    });
  }

  grpc::Status Heartbeat(grpc::ServerContext* ctx, const v1::Empty*, v1::Empty*) override {
    return ForCaller(ctx, [&](const Caller& caller) { return handler_->Heartbeat(caller.id); });
  }

  grpc::Status MountSegment(grpc::ServerContext* ctx, const v1::MountSegmentRequest* req,
                            v1::Empty*) override {
    return ForCaller(ctx, [&](const Caller& caller) {
      return handler_->MountSegment(caller.id, FromProto(*req));
    });
  }

  grpc::Status UnmountSegment(grpc::ServerContext* ctx, const v1::UnmountSegmentRequest* req,
                              v1::Empty*) override {
    return ForCaller(ctx, [&](const Caller& caller) {
      return handler_->UnmountSegment(caller.id, SegmentId(req->segment_id()));
    });
  }

  grpc::Status ReportManifest(grpc::ServerContext* ctx, const v1::ReportManifestRequest* req,
                              v1::ReportManifestResponse* resp) override {
    return ForCaller(ctx, [&](const Caller& caller) -> absl::Status {
      ReportManifestRequest in;
      in.last = req->last();
      in.entries.reserve(req->entries_size());
      for (const v1::ManifestEntry& e : req->entries()) in.entries.push_back(FromProto(e));
      absl::StatusOr<ReportManifestResponse> r = handler_->ReportManifest(caller.id, in);
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
    return ForCaller(ctx, [&](const Caller& caller) -> absl::Status {
      HS_RETURN_IF_ERROR(CheckTenant(caller, req->name().tenant()));
      absl::StatusOr<PutStartResponse> r = handler_->PutStart(caller.id, FromProto(*req));
      if (r.ok()) ToProto(*r, resp);
      return r.status();
    });
  }

  grpc::Status PutEnd(grpc::ServerContext* ctx, const v1::PutFenceRequest* req,
                      v1::Empty*) override {
    return ForCaller(ctx, [&](const Caller& caller) -> absl::Status {
      HS_RETURN_IF_ERROR(CheckTenant(caller, req->name().tenant()));
      return handler_->PutEnd(caller.id, PutEndRequest{FromProto(req->name()), req->version()});
    });
  }

  grpc::Status PutRevoke(grpc::ServerContext* ctx, const v1::PutFenceRequest* req,
                         v1::Empty*) override {
    return ForCaller(ctx, [&](const Caller& caller) -> absl::Status {
      HS_RETURN_IF_ERROR(CheckTenant(caller, req->name().tenant()));
      return handler_->PutRevoke(caller.id, PutRevokeRequest{FromProto(req->name()), req->version()});
    });
  }

  // Batch puts: every name must be the caller's tenant's, or the whole batch
  // is refused (PERMISSION_DENIED), as a single put would be.
  grpc::Status BatchPutStart(grpc::ServerContext* ctx, const v1::BatchPutStartRequest* req,
                             v1::BatchPutStartResponse* resp) override {
    return ForCaller(ctx, [&](const Caller& caller) -> absl::Status {
      HS_RETURN_IF_ERROR(CheckNameTenants(caller, req->names()));
      absl::StatusOr<BatchPutStartResponse> r = handler_->BatchPutStart(caller.id, FromProto(*req));
      if (r.ok()) ToProto(*r, resp);
      return r.status();
    });
  }

  grpc::Status BatchPutEnd(grpc::ServerContext* ctx, const v1::BatchPutFenceRequest* req,
                           v1::BatchPutResponse* resp) override {
    return ForCaller(ctx, [&](const Caller& caller) -> absl::Status {
      HS_RETURN_IF_ERROR(CheckFenceTenants(caller, *req));
      absl::StatusOr<BatchPutResponse> r =
          handler_->BatchPutEnd(caller.id, BatchPutEndFromProto(*req));
      if (r.ok()) ToProto(*r, resp);
      return r.status();
    });
  }

  grpc::Status BatchPutRevoke(grpc::ServerContext* ctx, const v1::BatchPutFenceRequest* req,
                              v1::BatchPutResponse* resp) override {
    return ForCaller(ctx, [&](const Caller& caller) -> absl::Status {
      HS_RETURN_IF_ERROR(CheckFenceTenants(caller, *req));
      absl::StatusOr<BatchPutResponse> r =
          handler_->BatchPutRevoke(caller.id, BatchPutRevokeFromProto(*req));
      if (r.ok()) ToProto(*r, resp);
      return r.status();
    });
  }

  grpc::Status GetReplicaList(grpc::ServerContext* ctx, const v1::GetReplicaListRequest* req,
                              v1::GetReplicaListResponse* resp) override {
    get_replica_list_.fetch_add(1, std::memory_order_relaxed);
    return ForNamer(ctx, [&](const Caller& caller) -> absl::Status {
      HS_RETURN_IF_ERROR(CheckRequester(caller, req->requester()));
      HS_RETURN_IF_ERROR(CheckTenant(caller, req->name().tenant()));
      absl::StatusOr<GetReplicaListResponse> r = handler_->GetReplicaList(FromProto(*req));
      if (r.ok()) ToProto(*r, resp);
      return r.status();
    });
  }

  grpc::Status BatchGetReplicaList(grpc::ServerContext* ctx,
                                   const v1::BatchGetReplicaListRequest* req,
                                   v1::BatchGetReplicaListResponse* resp) override {
    return ForNamer(ctx, [&](const Caller& caller) -> absl::Status {
      HS_RETURN_IF_ERROR(CheckRequester(caller, req->requester()));
      HS_RETURN_IF_ERROR(CheckNameTenants(caller, req->names()));
      absl::StatusOr<BatchGetReplicaListResponse> r =
          handler_->BatchGetReplicaList(FromProto(*req));
      if (r.ok()) ToProto(*r, resp);
      return r.status();
    });
  }

  grpc::Status Remove(grpc::ServerContext* ctx, const v1::RemoveRequest* req,
                      v1::Empty*) override {
    return ForNamer(ctx, [&](const Caller& caller) -> absl::Status {
      HS_RETURN_IF_ERROR(CheckTenant(caller, req->name().tenant()));
      return handler_->Remove(RemoveRequest{FromProto(req->name())});
    });
  }

  grpc::Status FetchTasks(grpc::ServerContext* ctx, const v1::FetchTasksRequest* req,
                          v1::FetchTasksResponse* resp) override {
    return ForCaller(ctx, [&](const Caller& caller) -> absl::Status {
      absl::StatusOr<FetchTasksResponse> r =
          handler_->FetchTasks(caller.id, static_cast<size_t>(req->batch_max()),
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
    return ForCaller(ctx, [&](const Caller& caller) {
      return handler_->MarkTaskComplete(caller.id, FromProto(*req));
    });
  }

  grpc::Status CopyStart(grpc::ServerContext* ctx, const v1::CopyTaskFence* req,
                         v1::CopyStartResponse* resp) override {
    return ForCaller(ctx, [&](const Caller& caller) -> absl::Status {
      absl::StatusOr<CopyStartResponse> r = handler_->CopyStart(caller.id, FromProto(*req));
      if (r.ok()) ToProto(*r, resp);
      return r.status();
    });
  }

  grpc::Status CopyEnd(grpc::ServerContext* ctx, const v1::CopyTaskFence* req,
                       v1::Empty*) override {
    return ForCaller(ctx,
                     [&](const Caller& caller) { return handler_->CopyEnd(caller.id, FromProto(*req)); });
  }

  grpc::Status CopyRevoke(grpc::ServerContext* ctx, const v1::CopyTaskFence* req,
                          v1::Empty*) override {
    return ForCaller(ctx, [&](const Caller& caller) {
      return handler_->CopyRevoke(caller.id, FromProto(*req));
    });
  }

  // The source-client rule of dynamic copies is enforced by the handler
  // against `caller`, the identity of the channel, not a field of the message.
  grpc::Status DynamicReplicaCopyStart(grpc::ServerContext* ctx, const v1::CopyTaskFence* req,
                                       v1::CopyStartResponse* resp) override {
    return ForCaller(ctx, [&](const Caller& caller) -> absl::Status {
      absl::StatusOr<CopyStartResponse> r =
          handler_->DynamicReplicaCopyStart(caller.id, FromProto(*req));
      if (r.ok()) ToProto(*r, resp);
      return r.status();
    });
  }

  grpc::Status DynamicReplicaCopyEnd(grpc::ServerContext* ctx, const v1::CopyTaskFence* req,
                                     v1::Empty*) override {
    return ForCaller(ctx, [&](const Caller& caller) {
      return handler_->DynamicReplicaCopyEnd(caller.id, FromProto(*req));
    });
  }

  grpc::Status DynamicReplicaCopyRevoke(grpc::ServerContext* ctx, const v1::CopyTaskFence* req,
                                        v1::Empty*) override {
    return ForCaller(ctx, [&](const Caller& caller) {
      return handler_->DynamicReplicaCopyRevoke(caller.id, FromProto(*req));
    });
  }

  // The asker is the store serving the source segment, proven like every
  // caller; the reader is the client that store's data service identified.
  grpc::Status CheckCopyLease(grpc::ServerContext* ctx, const v1::CheckCopyLeaseRequest* req,
                              v1::CheckCopyLeaseResponse* resp) override {
    return ForCaller(ctx, [&](const Caller& caller) -> absl::Status {
      const CopyLeaseQuery query{LeaseId(req->lease_id()), ClientId(req->reader()),
                                 SegmentId(req->segment_id()), req->offset(), req->size_bytes()};
      absl::StatusOr<CopyLeaseGrant> grant = handler_->CheckCopyLease(caller.id, query);
      if (grant.ok()) resp->set_remaining_ms(grant->remaining_ns / 1'000'000);
      return grant.status();
    });
  }

 private:
  grpc::Status Finish(const absl::Status& status) {
    calls_.fetch_add(1, std::memory_order_relaxed);
    if (!status.ok()) failed_.fetch_add(1, std::memory_order_relaxed);
    if (status.code() == absl::StatusCode::kPermissionDenied) {
      permission_denied_.fetch_add(1, std::memory_order_relaxed);
    }
    if (status.code() == absl::StatusCode::kUnauthenticated) {
      unauthenticated_.fetch_add(1, std::memory_order_relaxed);
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
  // tenants are bound (see tenant_bindings.h) or identities are proven by
  // certificates; otherwise `fn` sees no identity.
  template <typename Fn>
  grpc::Status ForNamer(grpc::ServerContext* ctx, Fn&& fn) {
    if (tenants_.enabled()) return ForCaller(ctx, std::forward<Fn>(fn));
    if (!identities_proven_) return Guarded([&] { return fn(Caller{}); });
    absl::StatusOr<Caller> caller = Identify(*ctx);
    if (!caller.ok()) return Finish(caller.status());
    return Guarded([&] { return fn(*caller); });
  }

  // Every name of a batch is the caller's tenant's, or the batch is refused.
  absl::Status CheckNameTenants(
      const Caller& caller, const google::protobuf::RepeatedPtrField<v1::ObjectName>& names) const {
    for (const v1::ObjectName& name : names) {
      HS_RETURN_IF_ERROR(CheckTenant(caller, name.tenant()));
    }
    return absl::OkStatus();
  }
  absl::Status CheckFenceTenants(const Caller& caller, const v1::BatchPutFenceRequest& req) const {
    for (const v1::PutFenceRequest& put : req.puts()) {
      HS_RETURN_IF_ERROR(CheckTenant(caller, put.name().tenant()));
    }
    return absl::OkStatus();
  }

  // The --tenant binding of the caller, and the tenant its certificate names
  // when it names one: both must allow `tenant`.
  absl::Status CheckTenant(const Caller& caller, absl::string_view tenant) const {
    HS_RETURN_IF_ERROR(tenants_.Check(caller.id, tenant));
    if (!caller.tenant.empty() && caller.tenant != NormalizeTenant(tenant)) {
      return absl::PermissionDeniedError(absl::StrCat(
          "client ", caller.id.value, " holds a certificate of tenant '", caller.tenant,
          "' and may not name tenant '", NormalizeTenant(tenant), "'"));
    }
    return absl::OkStatus();
  }

  // A read's requester is the caller itself whenever the master knows who
  // calls (tenants bound or identities proven): nobody feeds the heat window
  // in another client's name.
  absl::Status CheckRequester(const Caller& caller, uint64_t requester) const {
    if (!tenants_.enabled() && !identities_proven_) return absl::OkStatus();
    if (requester != caller.id.value) {
      return absl::PermissionDeniedError(absl::StrCat("client ", caller.id.value,
                                                      " may not read as client ", requester));
    }
    return absl::OkStatus();
  }

  // The id of the `heatsink-client-id` metadata: nullopt when absent,
  // UNAUTHENTICATED when malformed or 0.
  static absl::StatusOr<std::optional<ClientId>> AssertedId(const grpc::ServerContext& ctx) {
    const auto& metadata = ctx.client_metadata();
    const auto it = metadata.find(kClientIdMetadataKey);
    if (it == metadata.end()) return std::nullopt;
    uint64_t id = 0;
    if (!absl::SimpleAtoi(absl::string_view(it->second.data(), it->second.size()), &id) ||
        id == 0) {
      return absl::UnauthenticatedError(
          absl::StrCat("invalid '", kClientIdMetadataKey, "' metadata"));
    }
    return ClientId(id);
  }

  // The identity the verified client certificate proves
  // (certificate_identity.h); UNAUTHENTICATED when it is malformed.
  absl::StatusOr<std::optional<CertificateIdentity>> ProvenIdentity(
      const grpc::ServerContext& ctx) const {
    const std::shared_ptr<const grpc::AuthContext> auth = ctx.auth_context();
    if (auth == nullptr || !auth->IsPeerAuthenticated()) {
      return absl::UnauthenticatedError("the caller presented no verified client certificate");
    }
    std::vector<std::string> uris;
    for (const grpc::string_ref& uri : auth->FindPropertyValues(GRPC_PEER_URI_PROPERTY_NAME)) {
      uris.emplace_back(uri.data(), uri.size());
    }
    absl::StatusOr<std::optional<CertificateIdentity>> identity =
        IdentityFromUriSans(uris, trust_domain_);
    if (!identity.ok()) return absl::UnauthenticatedError(identity.status().message());
    return identity;
  }

  // Who calls. With client certificates, the certificate's identity; a
  // metadata id that differs from it (or that a certificate naming no client
  // cannot back) is PERMISSION_DENIED and counted as a mismatch. Without
  // client certificates, the metadata's id, as asserted.
  absl::StatusOr<Caller> Identify(const grpc::ServerContext& ctx) {
    HS_ASSIGN_OR_RETURN(std::optional<ClientId> asserted, AssertedId(ctx));
    Caller caller;
    if (!identities_proven_) {
      if (asserted) caller.id = *asserted;
      return caller;
    }
    HS_ASSIGN_OR_RETURN(std::optional<CertificateIdentity> proven, ProvenIdentity(ctx));
    if (proven) {
      caller.id = proven->client;
      caller.tenant = proven->tenant.empty() ? "" : NormalizeTenant(proven->tenant);
    }
    if (asserted && *asserted != caller.id) {
      identity_mismatch_.fetch_add(1, std::memory_order_relaxed);
      return absl::PermissionDeniedError(absl::StrCat(
          "the caller claims client ", asserted->value, " but its certificate proves ",
          proven ? absl::StrCat("client ", caller.id.value) : std::string("no client")));
    }
    return caller;
  }

  template <typename Fn>
  grpc::Status ForCaller(grpc::ServerContext* ctx, Fn&& fn) {
    absl::StatusOr<Caller> caller = Identify(*ctx);
    if (!caller.ok()) return Finish(caller.status());
    if (!caller->id.valid()) {
      return Finish(absl::UnauthenticatedError(
          identities_proven_
              ? absl::StrCat("the client certificate names no heatsink client (a URI SAN "
                             "spiffe://",
                             trust_domain_, "/heatsink/client/<id>)")
              : absl::StrCat("missing '", kClientIdMetadataKey, "' metadata")));
    }
    return Guarded([&] { return fn(*caller); });
  }

  MasterHandler* const handler_;
  const TenantBindings tenants_;
  const bool identities_proven_;
  const std::string trust_domain_;
  std::atomic<int64_t> calls_{0};
  std::atomic<int64_t> failed_{0};
  std::atomic<int64_t> unauthenticated_{0};
  std::atomic<int64_t> get_replica_list_{0};
  std::atomic<int64_t> permission_denied_{0};
  std::atomic<int64_t> identity_mismatch_{0};
};

absl::StatusOr<std::unique_ptr<MasterServer>> MasterServer::Start(
    MasterHandler* handler, const std::string& listen_address, const RpcOptions& options) {
  return Start(handler, listen_address, options, TenantBindings());
}

absl::StatusOr<std::unique_ptr<MasterServer>> MasterServer::Start(
    MasterHandler* handler, const std::string& listen_address, const RpcOptions& options,
    TenantBindings tenants) {
  HS_RETURN_IF_ERROR(options.Validate());
  std::unique_ptr<MasterServer> server(new MasterServer());
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (options.tls.server_enabled()) {
    HS_ASSIGN_OR_RETURN(server->tls_, ServerTlsReloader::Create(options.tls));
    credentials = server->tls_->credentials();
  }
  server->identities_proven_ = !options.tls.client_ca_path.empty();
  server->service_ = std::make_unique<Service>(handler, std::move(tenants),
                                               server->identities_proven_, options.tls.trust_domain);

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

absl::Status MasterServer::ReloadTls() {
  if (tls_ == nullptr) return absl::FailedPreconditionError("the master serves without TLS");
  return tls_->Reload();
}

}  // namespace heatsink::runtime
