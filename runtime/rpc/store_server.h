// File: runtime/rpc/store_server.h
//
// A store's gRPC data service: heatsink.v1.Store (proto/heatsink/store.proto)
// over the store's SegmentMemory, served beside its framed TCP data endpoint.
// ReadObject streams a range in chunks of at most `data_chunk_bytes`;
// WriteObject takes a put's bytes as a client stream and answers once every
// byte landed; Stat lists the segments and the service's counters. Statuses
// map 1:1 to gRPC codes; message sizes are bounded by RpcOptions.
//
// Example:
//   HS_ASSIGN_OR_RETURN(auto server,
//                       StoreServer::Start(&memory, "127.0.0.1:0", rpc, StoreServiceOptions{}));
//   mount.data_service_endpoint = server->endpoint();
//
// Readers: with a ReadGate (runtime/transport/read_gate.h) every ReadObject
// is asked about first, with the caller's verified certificate and the
// request's copy_lease_id; a refusal ends the call with the gate's status
// (PERMISSION_DENIED) before any chunk is written, and is counted
// (reads_refused).
//
// TLS rotation: with server TLS the credentials come from a
// ServerTlsReloader, and ReloadTls() reads the PEM files again.
//
// Thread safety: thread-safe. REQUIRES: `segments` and the gate outlive the
// server.
#ifndef HEATSINK_RUNTIME_RPC_STORE_SERVER_H_
#define HEATSINK_RUNTIME_RPC_STORE_SERVER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/base/mutex.h"
#include "runtime/memory/segment_memory.h"
#include "runtime/rpc/rpc_options.h"
#include "runtime/rpc/server_tls_reloader.h"
#include "runtime/store/store_node.h"
#include "runtime/transport/foreground_traffic.h"
#include "runtime/transport/read_gate.h"

namespace grpc {
class Server;
}

namespace heatsink::runtime {

struct StoreServiceOptions {
  // Largest data piece of one ReadObject or WriteObject message. Must leave
  // room for the message's other fields below RpcOptions::message_bytes_max.
  uint64_t data_chunk_bytes = uint64_t{1} << 20;
  // The store's foreground traffic (runtime/transport/foreground_traffic.h),
  // shared with its TCP data endpoint and mover: a ReadObject without a
  // copy lease counts in it while it streams, and a WriteObject (a put)
  // while it lands, so the store's copies yield to them. Null: nothing here
  // is counted.
  std::shared_ptr<ForegroundTraffic> foreground = nullptr;
  // A ReadObject under a copy lease (a copy's pull) is background: before
  // each message it waits, at most copy_yield_max_ms, while `foreground`
  // has transfers in progress or had one less than copy_yield_quiet_us ago
  // (the TCP data endpoint's knobs of the same names; heatsink-store passes
  // its own).
  int64_t copy_yield_max_ms = TcpTransportKnobs{}.copy_yield_max_ms;
  int64_t copy_yield_quiet_us = TcpTransportKnobs{}.copy_yield_quiet_us;

  [[nodiscard]] absl::Status Validate(const RpcOptions& rpc) const;
};

struct StoreServiceStats {
  uint64_t reads_completed = 0;
  uint64_t writes_completed = 0;
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  uint64_t calls_failed = 0;
  uint64_t reads_refused = 0;
};

class StoreServer final : public SegmentDataService {
 public:
  // Binds `listen_address` ("host:port"; port 0 picks a free one).
  // INVALID_ARGUMENT for bad options, UNAVAILABLE when it cannot bind.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<StoreServer>> Start(
      SegmentMemory* segments, const std::string& listen_address, const RpcOptions& rpc,
      const StoreServiceOptions& options, ReadGate* read_gate = nullptr);
  ~StoreServer() override;  // Shutdown()
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  const std::string& endpoint() const override { return endpoint_; }
  // Cancels running calls (a reader sees its stream break, a writer its
  // call fail) and returns once no call runs. Idempotent.
  void Shutdown() override;

  StoreServiceStats stats() const;
  // Reads the TLS PEM files again (server_tls_reloader.h); new handshakes
  // use them within ServerTlsReloader::kRefreshIntervalSeconds.
  // FAILED_PRECONDITION without server TLS; on error nothing changes.
  [[nodiscard]] absl::Status ReloadTls();

  class Service;

 private:
  StoreServer() = default;

  std::unique_ptr<ServerTlsReloader> tls_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  std::string endpoint_;
  Mutex shutdown_mu_;
  bool shut_down_ ABSL_GUARDED_BY(shutdown_mu_) = false;
};

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_RPC_STORE_SERVER_H_
