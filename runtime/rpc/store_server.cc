#include "runtime/rpc/store_server.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <exception>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "grpc/grpc_security_constants.h"
#include "grpcpp/resource_quota.h"
#include "grpcpp/security/auth_context.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "grpcpp/server_context.h"
#include "heatsink/store.grpc.pb.h"
#include "runtime/rpc/status.h"

namespace heatsink::runtime {
namespace {

// Room for a chunk message's fields besides its data (tags, lengths, offset).
constexpr uint64_t kChunkOverheadBytes = 64;

}  // namespace

absl::Status StoreServiceOptions::Validate(const RpcOptions& rpc) const {
  HS_RETURN_IF_ERROR(rpc.Validate());
  if (data_chunk_bytes == 0) return absl::InvalidArgumentError("data_chunk_bytes must be positive");
  if (data_chunk_bytes + kChunkOverheadBytes > static_cast<uint64_t>(rpc.message_bytes_max)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data_chunk_bytes=", data_chunk_bytes, " does not fit in message_bytes_max=",
        rpc.message_bytes_max, " (", kChunkOverheadBytes, " bytes go to the other fields)"));
  }
  return absl::OkStatus();
}

class StoreServer::Service final : public v1::Store::Service {
 public:
  Service(SegmentMemory* segments, const StoreServiceOptions& options, ReadGate* read_gate)
      : segments_(segments), options_(options), read_gate_(read_gate) {}

  StoreServiceStats stats() const {
    StoreServiceStats s;
    s.reads_completed = reads_completed_.load(std::memory_order_relaxed);
    s.writes_completed = writes_completed_.load(std::memory_order_relaxed);
    s.bytes_read = bytes_read_.load(std::memory_order_relaxed);
    s.bytes_written = bytes_written_.load(std::memory_order_relaxed);
    s.calls_failed = calls_failed_.load(std::memory_order_relaxed);
    s.reads_refused = reads_refused_.load(std::memory_order_relaxed);
    return s;
  }

  grpc::Status ReadObject(grpc::ServerContext* ctx, const v1::ReadObjectRequest* req,
                          grpc::ServerWriter<v1::DataChunk>* writer) override {
    return Guarded([&]() -> absl::Status {
      HS_RETURN_IF_ERROR(AllowRead(*ctx, *req));
      HS_ASSIGN_OR_RETURN(SegmentRegion region, segments_->Region(SegmentId(req->segment_id()),
                                                                  req->offset(), req->length()));
      // A client's read is foreground: the store's copies hold back while
      // it streams. (A read under a copy lease is a copy's pull.)
      // A copy's pull waits for the store's foreground before each message
      // (bounded; gRPC's threads are shared, so they are never niced).
      const bool copy = req->copy_lease_id() != 0;
      std::optional<ForegroundTraffic::Scope> foreground;
      if (options_.foreground != nullptr && !copy) {
        foreground.emplace(options_.foreground->Enter());
      }
      uint64_t sent = 0;
      v1::DataChunk chunk;
      while (sent < req->length()) {
        if (ctx->IsCancelled()) return absl::CancelledError("read cancelled by the client");
        if (copy && options_.foreground != nullptr) {
          options_.foreground->YieldToForeground(options_.copy_yield_max_ms,
                                                 options_.copy_yield_quiet_us);
        }
        const uint64_t n = std::min<uint64_t>(options_.data_chunk_bytes, req->length() - sent);
        chunk.set_offset(req->offset() + sent);
        chunk.set_data(reinterpret_cast<const char*>(region.data + sent), n);
        if (!writer->Write(chunk)) return absl::UnavailableError("the reader went away");
        sent += n;
      }
      reads_completed_.fetch_add(1, std::memory_order_relaxed);
      bytes_read_.fetch_add(sent, std::memory_order_relaxed);
      segments_->NoteRead(SegmentId(req->segment_id()), req->offset(), req->length());
      return absl::OkStatus();
    });
  }

  grpc::Status WriteObject(grpc::ServerContext*, grpc::ServerReader<v1::WriteObjectChunk>* reader,
                           v1::WriteObjectResponse* resp) override {
    return Guarded([&]() -> absl::Status {
      v1::WriteObjectChunk chunk;
      if (!reader->Read(&chunk)) {
        return absl::InvalidArgumentError("WriteObject stream without a first message");
      }
      const SegmentId segment(chunk.segment_id());
      const uint64_t offset = chunk.offset();
      const uint64_t length = chunk.length();
      HS_ASSIGN_OR_RETURN(SegmentRegion region, segments_->Region(segment, offset, length));
      // A client's put is foreground: the store's copies hold back while it
      // lands.
      std::optional<ForegroundTraffic::Scope> foreground;
      if (options_.foreground != nullptr) foreground.emplace(options_.foreground->Enter());
      uint64_t landed = 0;
      while (true) {
        if (landed > 0 || !chunk.data().empty()) {
          if (chunk.data().size() > options_.data_chunk_bytes) {
            return absl::InvalidArgumentError(
                absl::StrCat("a chunk of ", chunk.data().size(),
                             " bytes is above data_chunk_bytes=", options_.data_chunk_bytes));
          }
          if (chunk.data().size() > length - landed) {
            return absl::InvalidArgumentError(
                absl::StrCat("stream carries more than the announced ", length, " bytes"));
          }
          std::memcpy(region.data + landed, chunk.data().data(), chunk.data().size());
          landed += chunk.data().size();
        }
        if (!reader->Read(&chunk)) break;
        if (chunk.segment_id() != 0 || chunk.offset() != 0 || chunk.length() != 0) {
          return absl::InvalidArgumentError(
              "only the first WriteObject message may name a segment, offset or length");
        }
      }
      if (landed != length) {
        return absl::InvalidArgumentError(
            absl::StrCat("stream ended after ", landed, " of ", length, " bytes"));
      }
      resp->set_bytes_written(landed);
      writes_completed_.fetch_add(1, std::memory_order_relaxed);
      bytes_written_.fetch_add(landed, std::memory_order_relaxed);
      return absl::OkStatus();
    });
  }

  grpc::Status Stat(grpc::ServerContext*, const v1::StatRequest*, v1::StatResponse* resp) override {
    return Guarded([&]() -> absl::Status {
      for (SegmentId id : segments_->ids()) {
        absl::StatusOr<std::shared_ptr<SegmentBuffer>> buffer = segments_->Find(id);
        if (!buffer.ok()) continue;  // removed since ids() listed it
        v1::SegmentStat* stat = resp->add_segments();
        stat->set_segment_id(id.value);
        stat->set_size_bytes((*buffer)->size_bytes());
      }
      const StoreServiceStats s = stats();
      resp->set_data_chunk_bytes(options_.data_chunk_bytes);
      resp->set_reads_completed(s.reads_completed);
      resp->set_writes_completed(s.writes_completed);
      resp->set_bytes_read(s.bytes_read);
      resp->set_bytes_written(s.bytes_written);
      resp->set_reads_refused(s.reads_refused);
      return absl::OkStatus();
    });
  }

 private:
  // The read gate's answer for this caller and range (OK without a gate).
  absl::Status AllowRead(const grpc::ServerContext& ctx, const v1::ReadObjectRequest& req) {
    if (read_gate_ == nullptr) return absl::OkStatus();
    ReadPeer peer;
    const std::shared_ptr<const grpc::AuthContext> auth = ctx.auth_context();
    if (auth != nullptr && auth->IsPeerAuthenticated()) {
      peer.verified = true;
      for (const grpc::string_ref& uri : auth->FindPropertyValues(GRPC_PEER_URI_PROPERTY_NAME)) {
        peer.uri_sans.emplace_back(uri.data(), uri.size());
      }
    }
    const absl::Status allowed =
        read_gate_->Allow(peer, ReadQuery{SegmentId(req.segment_id()), req.offset(), req.length(),
                                          LeaseId(req.copy_lease_id())});
    if (!allowed.ok()) reads_refused_.fetch_add(1, std::memory_order_relaxed);
    return allowed;
  }

  // Library exceptions stop here and become INTERNAL.
  template <typename Fn>
  grpc::Status Guarded(Fn&& fn) {
    absl::Status status;
    try {
      status = fn();
    } catch (const std::exception& e) {
      status = absl::InternalError(absl::StrCat("exception in store call: ", e.what()));
    }
    if (!status.ok()) calls_failed_.fetch_add(1, std::memory_order_relaxed);
    return ToGrpcStatus(status);
  }

  SegmentMemory* const segments_;
  const StoreServiceOptions options_;
  ReadGate* const read_gate_;
  std::atomic<uint64_t> reads_refused_{0};
  std::atomic<uint64_t> reads_completed_{0};
  std::atomic<uint64_t> writes_completed_{0};
  std::atomic<uint64_t> bytes_read_{0};
  std::atomic<uint64_t> bytes_written_{0};
  std::atomic<uint64_t> calls_failed_{0};
};

absl::StatusOr<std::unique_ptr<StoreServer>> StoreServer::Start(
    SegmentMemory* segments, const std::string& listen_address, const RpcOptions& rpc,
    const StoreServiceOptions& options, ReadGate* read_gate) {
  HS_RETURN_IF_ERROR(options.Validate(rpc));
  std::unique_ptr<StoreServer> server(new StoreServer());
  std::shared_ptr<grpc::ServerCredentials> credentials;
  if (rpc.tls.server_enabled()) {
    HS_ASSIGN_OR_RETURN(server->tls_, ServerTlsReloader::Create(rpc.tls));
    credentials = server->tls_->credentials();
  } else {
    HS_ASSIGN_OR_RETURN(credentials, MakeServerCredentials(rpc.tls));
  }
  server->service_ = std::make_unique<Service>(segments, options, read_gate);

  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(listen_address, credentials, &port);
  builder.RegisterService(server->service_.get());
  builder.SetMaxReceiveMessageSize(rpc.message_bytes_max);
  builder.SetMaxSendMessageSize(rpc.message_bytes_max);
  grpc::ResourceQuota quota("heatsink-store");
  quota.SetMaxThreads(rpc.server_threads_max);
  builder.SetResourceQuota(quota);
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot serve on '", listen_address, "'"));
  }
  const size_t colon = listen_address.rfind(':');
  server->endpoint_ = absl::StrCat(listen_address.substr(0, colon), ":", port);
  return server;
}

StoreServer::~StoreServer() { Shutdown(); }

void StoreServer::Shutdown() {
  MutexLock lock(&shutdown_mu_);
  if (shut_down_ || server_ == nullptr) return;
  shut_down_ = true;
  server_->Shutdown(std::chrono::system_clock::now());
  server_->Wait();
}

StoreServiceStats StoreServer::stats() const { return service_->stats(); }

absl::Status StoreServer::ReloadTls() {
  if (tls_ == nullptr) {
    return absl::FailedPreconditionError("the store's data service serves without TLS");
  }
  return tls_->Reload();
}

}  // namespace heatsink::runtime
