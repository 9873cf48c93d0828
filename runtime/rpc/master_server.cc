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
#include "core/base/status_macros.h"
#include "google/protobuf/arena.h"
#include "grpc/grpc_security_constants.h"
#include "grpcpp/resource_quota.h"
#include "grpcpp/security/auth_context.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/message_allocator.h"
#include "grpcpp/support/server_callback.h"
#include "heatsink/master.grpc.pb.h"
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

// Which calls the admission limit applies to. Control calls (heartbeats,
// segments, tasks, copies, manifests) come from the stores, a bounded
// population that keeps the cluster alive: they are always admitted, so a
// flood of readers and writers never makes a store miss its heartbeat.
// Data calls (puts, reads, removes) come from any number of clients and are
// refused with RESOURCE_EXHAUSTED above calls_in_flight_max.
enum class Lane { kControl, kData };

// The hot calls' request and answer live on one protobuf arena per call
// (its first 4 KiB inline), so a batch of 128 replica lists costs a few
// block allocations instead of several per key; everything goes at once when
// gRPC releases the call.
template <typename Req, typename Resp>
class ArenaMessages final : public grpc::MessageAllocator<Req, Resp> {
 public:
  grpc::MessageHolder<Req, Resp>* AllocateMessages() override { return new Holder(); }

 private:
  class Holder final : public grpc::MessageHolder<Req, Resp> {
   public:
    Holder() : arena_(Options(initial_)) {
      this->set_request(google::protobuf::Arena::CreateMessage<Req>(&arena_));
      this->set_response(google::protobuf::Arena::CreateMessage<Resp>(&arena_));
    }
    void Release() override { delete this; }

   private:
    static google::protobuf::ArenaOptions Options(char* initial) {
      google::protobuf::ArenaOptions options;
      options.initial_block = initial;
      options.initial_block_size = sizeof(initial_);
      options.start_block_size = 16 << 10;
      options.max_block_size = 256 << 10;
      return options;
    }
    alignas(16) char initial_[4096];
    google::protobuf::Arena arena_;
  };
};

class MasterServer::Service final : public v1::Master::CallbackService {
 public:
  // `identities_proven`: the server verifies client certificates, and the
  // caller's identity comes from its certificate under `trust_domain`.
  Service(MasterEndpoint* master, TenantBindings tenants, bool identities_proven,
          std::string trust_domain, int64_t calls_in_flight_max, const LeaderElection* leadership)
      : leadership_(leadership),
        epoch_text_(leadership == nullptr ? "" : absl::StrCat(leadership->epoch())),
        master_(master),
        tenants_(std::move(tenants)),
        identities_proven_(identities_proven),
        trust_domain_(std::move(trust_domain)),
        calls_in_flight_max_(calls_in_flight_max) {
    // The hot calls' messages on per-call arenas (ArenaMessages).
    SetMessageAllocatorFor_GetReplicaList(&get_arena_);
    SetMessageAllocatorFor_BatchGetReplicaList(&batch_get_arena_);
    SetMessageAllocatorFor_BatchPutStart(&batch_put_start_arena_);
    SetMessageAllocatorFor_BatchPutEnd(&batch_put_end_arena_);
  }

  MasterServerStats stats() const {
    MasterServerStats s;
    s.calls_total = calls_.load(std::memory_order_relaxed);
    s.calls_failed_total = failed_.load(std::memory_order_relaxed);
    s.calls_unauthenticated_total = unauthenticated_.load(std::memory_order_relaxed);
    s.get_replica_list_calls_total = get_replica_list_.load(std::memory_order_relaxed);
    s.calls_permission_denied_total = permission_denied_.load(std::memory_order_relaxed);
    s.calls_identity_mismatch_total = identity_mismatch_.load(std::memory_order_relaxed);
    s.calls_overloaded_total = overloaded_.load(std::memory_order_relaxed);
    s.data_calls_in_flight = in_flight_.load(std::memory_order_relaxed);
    return s;
  }

  grpc::ServerUnaryReactor* Ping(grpc::CallbackServerContext* ctx, const v1::Empty*,
                                 v1::Empty*) override {
    return Answer(ctx, Lane::kControl, [&]() -> grpc::Status { return Finish(absl::OkStatus()); });
  }

  grpc::ServerUnaryReactor* RegisterClient(grpc::CallbackServerContext* ctx,
                                           const v1::RegisterClientRequest* req,
                                           v1::Empty*) override {
    return AsCaller(ctx, Lane::kControl, [&](const Caller& caller) {
      return master_->RegisterClient(RegisterClientRequest{caller.id, req->host(), req->domain()});
    });
  }

  grpc::ServerUnaryReactor* Heartbeat(grpc::CallbackServerContext* ctx, const v1::Empty*,
                                      v1::Empty*) override {
    return AsCaller(ctx, Lane::kControl,
                    [&](const Caller& caller) { return master_->Heartbeat(caller.id); });
  }

  grpc::ServerUnaryReactor* MountSegment(grpc::CallbackServerContext* ctx,
                                         const v1::MountSegmentRequest* req, v1::Empty*) override {
    return AsCaller(ctx, Lane::kControl, [&](const Caller& caller) {
      return master_->MountSegment(caller.id, FromProto(*req));
    });
  }

  grpc::ServerUnaryReactor* UnmountSegment(grpc::CallbackServerContext* ctx,
                                           const v1::UnmountSegmentRequest* req,
                                           v1::Empty*) override {
    return AsCaller(ctx, Lane::kControl, [&](const Caller& caller) {
      return master_->UnmountSegment(caller.id, SegmentId(req->segment_id()));
    });
  }

  grpc::ServerUnaryReactor* ReportManifest(grpc::CallbackServerContext* ctx,
                                           const v1::ReportManifestRequest* req,
                                           v1::ReportManifestResponse* resp) override {
    return AsCaller(ctx, Lane::kControl, [&](const Caller& caller) -> absl::Status {
      ReportManifestRequest in;
      in.last = req->last();
      in.entries.reserve(req->entries_size());
      for (const v1::ManifestEntry& e : req->entries()) in.entries.push_back(FromProto(e));
      absl::StatusOr<ReportManifestResponse> r = master_->ReportManifest(caller.id, in);
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

  grpc::ServerUnaryReactor* ListSegments(grpc::CallbackServerContext* ctx, const v1::Empty*,
                                         v1::ListSegmentsResponse* resp) override {
    return Answer(ctx, Lane::kControl, [&]() -> grpc::Status {
      return Guarded([&] {
        for (const SegmentView& view : master_->ListSegments()) ToProto(view, resp->add_segments());
        return absl::OkStatus();
      });
    });
  }

  grpc::ServerUnaryReactor* PutStart(grpc::CallbackServerContext* ctx,
                                     const v1::PutStartRequest* req,
                                     v1::PutStartResponse* resp) override {
    return AsCaller(ctx, Lane::kData, [&](const Caller& caller) -> absl::Status {
      HS_RETURN_IF_ERROR(CheckTenant(caller, req->name().tenant()));
      absl::StatusOr<PutStartResponse> r = master_->PutStart(caller.id, FromProto(*req));
      if (r.ok()) ToProto(*r, resp);
      return r.status();
    });
  }

  grpc::ServerUnaryReactor* PutEnd(grpc::CallbackServerContext* ctx, const v1::PutFenceRequest* req,
                                   v1::Empty*) override {
    return AsCaller(ctx, Lane::kData, [&](const Caller& caller) -> absl::Status {
      HS_RETURN_IF_ERROR(CheckTenant(caller, req->name().tenant()));
      return master_->PutEnd(caller.id, PutEndRequest{FromProto(req->name()), req->version()});
    });
  }

  grpc::ServerUnaryReactor* PutRevoke(grpc::CallbackServerContext* ctx,
                                      const v1::PutFenceRequest* req, v1::Empty*) override {
    return AsCaller(ctx, Lane::kData, [&](const Caller& caller) -> absl::Status {
      HS_RETURN_IF_ERROR(CheckTenant(caller, req->name().tenant()));
      return master_->PutRevoke(caller.id,
                                PutRevokeRequest{FromProto(req->name()), req->version()});
    });
  }

  // Batch puts: every name must be the caller's tenant's, or the whole batch
  // is refused (PERMISSION_DENIED), as a single put would be.
  grpc::ServerUnaryReactor* BatchPutStart(grpc::CallbackServerContext* ctx,
                                          const v1::BatchPutStartRequest* req,
                                          v1::BatchPutStartResponse* resp) override {
    return AsCaller(ctx, Lane::kData, [&](const Caller& caller) -> absl::Status {
      HS_RETURN_IF_ERROR(CheckNameTenants(caller, req->names()));
      absl::StatusOr<BatchPutStartResponse> r = master_->BatchPutStart(caller.id, FromProto(*req));
      if (r.ok()) ToProto(*r, resp);
      return r.status();
    });
  }

  grpc::ServerUnaryReactor* BatchPutEnd(grpc::CallbackServerContext* ctx,
                                        const v1::BatchPutFenceRequest* req,
                                        v1::BatchPutResponse* resp) override {
    return AsCaller(ctx, Lane::kData, [&](const Caller& caller) -> absl::Status {
      HS_RETURN_IF_ERROR(CheckFenceTenants(caller, *req));
      absl::StatusOr<BatchPutResponse> r =
          master_->BatchPutEnd(caller.id, BatchPutEndFromProto(*req));
      if (r.ok()) ToProto(*r, resp);
      return r.status();
    });
  }

  grpc::ServerUnaryReactor* BatchPutRevoke(grpc::CallbackServerContext* ctx,
                                           const v1::BatchPutFenceRequest* req,
                                           v1::BatchPutResponse* resp) override {
    return AsCaller(ctx, Lane::kData, [&](const Caller& caller) -> absl::Status {
      HS_RETURN_IF_ERROR(CheckFenceTenants(caller, *req));
      absl::StatusOr<BatchPutResponse> r =
          master_->BatchPutRevoke(caller.id, BatchPutRevokeFromProto(*req));
      if (r.ok()) ToProto(*r, resp);
      return r.status();
    });
  }

  grpc::ServerUnaryReactor* GetReplicaList(grpc::CallbackServerContext* ctx,
                                           const v1::GetReplicaListRequest* req,
                                           v1::GetReplicaListResponse* resp) override {
    return Answer(ctx, Lane::kData, [&]() -> grpc::Status {
      get_replica_list_.fetch_add(1, std::memory_order_relaxed);
      return ForNamer(ctx, [&](const Caller& caller) -> absl::Status {
        HS_RETURN_IF_ERROR(CheckRequester(caller, req->requester()));
        HS_RETURN_IF_ERROR(CheckTenant(caller, req->name().tenant()));
        absl::StatusOr<GetReplicaListResponse> r = master_->GetReplicaList(FromProto(*req));
        if (r.ok()) ToProto(*r, resp);
        return r.status();
      });
    });
  }

  grpc::ServerUnaryReactor* BatchGetReplicaList(grpc::CallbackServerContext* ctx,
                                                const v1::BatchGetReplicaListRequest* req,
                                                v1::BatchGetReplicaListResponse* resp) override {
    return AsNamer(ctx, Lane::kData, [&](const Caller& caller) -> absl::Status {
      HS_RETURN_IF_ERROR(CheckRequester(caller, req->requester()));
      HS_RETURN_IF_ERROR(CheckNameTenants(caller, req->names()));
      absl::StatusOr<BatchGetReplicaListResponse> r = master_->BatchGetReplicaList(FromProto(*req));
      if (r.ok()) ToProto(*r, resp);
      return r.status();
    });
  }

  grpc::ServerUnaryReactor* Remove(grpc::CallbackServerContext* ctx, const v1::RemoveRequest* req,
                                   v1::Empty*) override {
    return AsNamer(ctx, Lane::kData, [&](const Caller& caller) -> absl::Status {
      HS_RETURN_IF_ERROR(CheckTenant(caller, req->name().tenant()));
      return master_->Remove(RemoveRequest{FromProto(req->name())});
    });
  }

  grpc::ServerUnaryReactor* FetchTasks(grpc::CallbackServerContext* ctx,
                                       const v1::FetchTasksRequest* req,
                                       v1::FetchTasksResponse* resp) override {
    return AsCaller(ctx, Lane::kControl, [&](const Caller& caller) -> absl::Status {
      absl::StatusOr<FetchTasksResponse> r = master_->FetchTasks(
          caller.id, static_cast<size_t>(req->batch_max()), req->manifest_ack_seq());
      if (!r.ok()) return r.status();
      for (const Task& task : r->tasks) ToProto(task, resp->add_tasks());
      for (const ManifestChange& c : r->manifest_changes) {
        ToProto(c, resp->add_manifest_changes());
      }
      return absl::OkStatus();
    });
  }

  grpc::ServerUnaryReactor* MarkTaskComplete(grpc::CallbackServerContext* ctx,
                                             const v1::MarkTaskCompleteRequest* req,
                                             v1::Empty*) override {
    return AsCaller(ctx, Lane::kControl, [&](const Caller& caller) {
      return master_->MarkTaskComplete(caller.id, FromProto(*req));
    });
  }

  grpc::ServerUnaryReactor* CopyStart(grpc::CallbackServerContext* ctx,
                                      const v1::CopyTaskFence* req,
                                      v1::CopyStartResponse* resp) override {
    return AsCaller(ctx, Lane::kControl, [&](const Caller& caller) -> absl::Status {
      absl::StatusOr<CopyStartResponse> r = master_->CopyStart(caller.id, FromProto(*req));
      if (r.ok()) ToProto(*r, resp);
      return r.status();
    });
  }

  grpc::ServerUnaryReactor* CopyEnd(grpc::CallbackServerContext* ctx, const v1::CopyTaskFence* req,
                                    v1::Empty*) override {
    return AsCaller(ctx, Lane::kControl, [&](const Caller& caller) {
      return master_->CopyEnd(caller.id, FromProto(*req));
    });
  }

  grpc::ServerUnaryReactor* CopyRevoke(grpc::CallbackServerContext* ctx,
                                       const v1::CopyTaskFence* req, v1::Empty*) override {
    return AsCaller(ctx, Lane::kControl, [&](const Caller& caller) {
      return master_->CopyRevoke(caller.id, FromProto(*req));
    });
  }

  // The source-client rule of dynamic copies is enforced by the master
  // against `caller`, the identity of the channel, not a field of the message.
  grpc::ServerUnaryReactor* DynamicReplicaCopyStart(grpc::CallbackServerContext* ctx,
                                                    const v1::CopyTaskFence* req,
                                                    v1::CopyStartResponse* resp) override {
    return AsCaller(ctx, Lane::kControl, [&](const Caller& caller) -> absl::Status {
      absl::StatusOr<CopyStartResponse> r =
          master_->DynamicReplicaCopyStart(caller.id, FromProto(*req));
      if (r.ok()) ToProto(*r, resp);
      return r.status();
    });
  }

  grpc::ServerUnaryReactor* DynamicReplicaCopyEnd(grpc::CallbackServerContext* ctx,
                                                  const v1::CopyTaskFence* req,
                                                  v1::Empty*) override {
    return AsCaller(ctx, Lane::kControl, [&](const Caller& caller) {
      return master_->DynamicReplicaCopyEnd(caller.id, FromProto(*req));
    });
  }

  grpc::ServerUnaryReactor* DynamicReplicaCopyRevoke(grpc::CallbackServerContext* ctx,
                                                     const v1::CopyTaskFence* req,
                                                     v1::Empty*) override {
    return AsCaller(ctx, Lane::kControl, [&](const Caller& caller) {
      return master_->DynamicReplicaCopyRevoke(caller.id, FromProto(*req));
    });
  }

  // The asker is the store serving the source segment, proven like every
  // caller; the reader is the client that store's data service identified.
  // A control call: a store asks it before it serves a read.
  grpc::ServerUnaryReactor* CheckCopyLease(grpc::CallbackServerContext* ctx,
                                           const v1::CheckCopyLeaseRequest* req,
                                           v1::CheckCopyLeaseResponse* resp) override {
    return AsCaller(ctx, Lane::kControl, [&](const Caller& caller) -> absl::Status {
      const CopyLeaseQuery query{LeaseId(req->lease_id()), ClientId(req->reader()),
                                 SegmentId(req->segment_id()), req->offset(), req->size_bytes()};
      absl::StatusOr<CopyLeaseGrant> grant = master_->CheckCopyLease(caller.id, query);
      if (grant.ok()) resp->set_remaining_ms(grant->remaining_ns / 1'000'000);
      return grant.status();
    });
  }

 private:
  ArenaMessages<v1::GetReplicaListRequest, v1::GetReplicaListResponse> get_arena_;
  ArenaMessages<v1::BatchGetReplicaListRequest, v1::BatchGetReplicaListResponse> batch_get_arena_;
  ArenaMessages<v1::BatchPutStartRequest, v1::BatchPutStartResponse> batch_put_start_arena_;
  ArenaMessages<v1::BatchPutFenceRequest, v1::BatchPutResponse> batch_put_end_arena_;

  // A data call's reactor: the call counts as in flight from its admission
  // until gRPC is done with it (the answer sent, or the call cancelled), so
  // answers queued towards slow readers count as well.
  class CountedReactor final : public grpc::ServerUnaryReactor {
   public:
    explicit CountedReactor(std::atomic<int64_t>* in_flight) : in_flight_(in_flight) {}
    void OnDone() override {
      in_flight_->fetch_sub(1, std::memory_order_relaxed);
      delete this;
    }

   private:
    std::atomic<int64_t>* const in_flight_;
  };

  // Runs `fn` inline on gRPC's callback thread (every master call is
  // in-memory work under the master's locks: nothing blocks on I/O) and
  // finishes the call with its status. Data calls beyond calls_in_flight_max
  // are refused at once, before any work.
  //
  // Under etcd leader election every call, of either lane, first checks that
  // the lease is still held (LeaderElection::Held(), the monotonic clock) and
  // is refused with UNAVAILABLE "not_leader" otherwise; it checks again after
  // the work, so no answer leaves once the lease may have lapsed. Every
  // answer carries the leader's epoch in the `heatsink-leader-epoch` initial
  // metadata (the fence GrpcMasterClient checks).
  template <typename Fn>
  grpc::ServerUnaryReactor* Answer(grpc::CallbackServerContext* ctx, Lane lane, Fn&& fn) {
    if (leadership_ != nullptr) {
      if (!leadership_->Held()) {
        grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
        reactor->Finish(Finish(NotLeader()));
        return reactor;
      }
      ctx->AddInitialMetadata(kLeaderEpochMetadataKey, epoch_text_);
    }
    if (lane == Lane::kControl) {
      grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
      reactor->Finish(StillLeading(fn()));
      return reactor;
    }
    const int64_t before = in_flight_.fetch_add(1, std::memory_order_relaxed);
    if (before >= calls_in_flight_max_) {
      in_flight_.fetch_sub(1, std::memory_order_relaxed);
      overloaded_.fetch_add(1, std::memory_order_relaxed);
      grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
      reactor->Finish(Finish(absl::ResourceExhaustedError(absl::StrCat(
          "the master is overloaded: ", before, " data calls in flight (calls_in_flight_max=",
          calls_in_flight_max_, "); retry with backoff"))));
      return reactor;
    }
    auto* reactor = new CountedReactor(&in_flight_);
    reactor->Finish(StillLeading(fn()));
    return reactor;
  }

  absl::Status NotLeader() const {
    return absl::UnavailableError(absl::StrCat(
        "not_leader: this master's etcd lease (epoch ", leadership_->epoch(),
        ") is no longer held; ask the leader key again"));
  }

  // The answer `status` if the lease is still held, else not_leader.
  grpc::Status StillLeading(grpc::Status status) {
    if (leadership_ == nullptr || leadership_->Held()) return status;
    return ToGrpcStatus(NotLeader());
  }

  // Answer() of ForCaller() / ForNamer().
  template <typename Fn>
  grpc::ServerUnaryReactor* AsCaller(grpc::CallbackServerContext* ctx, Lane lane, Fn&& fn) {
    return Answer(ctx, lane, [&] { return ForCaller(ctx, std::forward<Fn>(fn)); });
  }
  template <typename Fn>
  grpc::ServerUnaryReactor* AsNamer(grpc::CallbackServerContext* ctx, Lane lane, Fn&& fn) {
    return Answer(ctx, lane, [&] { return ForNamer(ctx, std::forward<Fn>(fn)); });
  }

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
  grpc::Status ForNamer(grpc::ServerContextBase* ctx, Fn&& fn) {
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
      return absl::PermissionDeniedError(
          absl::StrCat("client ", caller.id.value, " holds a certificate of tenant '",
                       caller.tenant, "' and may not name tenant '", NormalizeTenant(tenant), "'"));
    }
    return absl::OkStatus();
  }

  // A read's requester is the caller itself whenever the master knows who
  // calls (tenants bound or identities proven): nobody feeds the heat window
  // in another client's name.
  absl::Status CheckRequester(const Caller& caller, uint64_t requester) const {
    if (!tenants_.enabled() && !identities_proven_) return absl::OkStatus();
    if (requester != caller.id.value) {
      return absl::PermissionDeniedError(
          absl::StrCat("client ", caller.id.value, " may not read as client ", requester));
    }
    return absl::OkStatus();
  }

  // The id of the `heatsink-client-id` metadata: nullopt when absent,
  // UNAUTHENTICATED when malformed or 0.
  static absl::StatusOr<std::optional<ClientId>> AssertedId(const grpc::ServerContextBase& ctx) {
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
      const grpc::ServerContextBase& ctx) const {
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
  absl::StatusOr<Caller> Identify(const grpc::ServerContextBase& ctx) {
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
  grpc::Status ForCaller(grpc::ServerContextBase* ctx, Fn&& fn) {
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

  const LeaderElection* const leadership_;  // null without etcd
  const std::string epoch_text_;
  MasterEndpoint* const master_;
  const TenantBindings tenants_;
  const bool identities_proven_;
  const std::string trust_domain_;
  const int64_t calls_in_flight_max_;
  std::atomic<int64_t> in_flight_{0};
  std::atomic<int64_t> overloaded_{0};
  std::atomic<int64_t> calls_{0};
  std::atomic<int64_t> failed_{0};
  std::atomic<int64_t> unauthenticated_{0};
  std::atomic<int64_t> get_replica_list_{0};
  std::atomic<int64_t> permission_denied_{0};
  std::atomic<int64_t> identity_mismatch_{0};
};

absl::StatusOr<std::unique_ptr<MasterServer>> MasterServer::Start(MasterEndpoint* master,
                                                                  const std::string& listen_address,
                                                                  const RpcOptions& options) {
  return Start(master, listen_address, options, TenantBindings());
}

absl::StatusOr<std::unique_ptr<MasterServer>> MasterServer::Start(MasterEndpoint* master,
                                                                  const std::string& listen_address,
                                                                  const RpcOptions& options,
                                                                  TenantBindings tenants) {
  return Start(master, listen_address, options, std::move(tenants), nullptr);
}

absl::StatusOr<std::unique_ptr<MasterServer>> MasterServer::Start(
    MasterEndpoint* master, const std::string& listen_address, const RpcOptions& options,
    TenantBindings tenants, const LeaderElection* leadership) {
  HS_RETURN_IF_ERROR(options.Validate());
  std::unique_ptr<MasterServer> server(new MasterServer());
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (options.tls.server_enabled()) {
    HS_ASSIGN_OR_RETURN(server->tls_, ServerTlsReloader::Create(options.tls));
    credentials = server->tls_->credentials();
  }
  server->identities_proven_ = !options.tls.client_ca_path.empty();
  server->service_ =
      std::make_unique<Service>(master, std::move(tenants), server->identities_proven_,
                                options.tls.trust_domain, options.calls_in_flight_max, leadership);

  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(listen_address, credentials, &port);
  builder.RegisterService(server->service_.get());
  builder.SetMaxReceiveMessageSize(options.message_bytes_max);
  builder.SetMaxSendMessageSize(options.message_bytes_max);
  // Streams one connection may have open at once: a client with more calls
  // outstanding waits on its own side instead of queueing in the master.
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, options.streams_per_connection_max);
  // Memory gRPC may hold for calls and buffers; beyond it gRPC refuses new
  // calls with RESOURCE_EXHAUSTED.
  grpc::ResourceQuota quota("heatsink-master");
  quota.Resize(static_cast<size_t>(options.server_memory_bytes_max));
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
  MutexLock lock(&shutdown_mu_);
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
