// File: runtime/rpc/master_server.h
//
// The master's gRPC server: the heatsink.v1.Master service over the master's
// one call surface, MasterEndpoint (core/master/master_endpoint.h; the
// ReplicatedMaster). TLS, when configured, authenticates the peer; the server
// establishes the caller's identity, checks that callers name only their own
// tenant when tenants are bound (tenant_bindings.h), converts messages, maps
// statuses 1:1, and bounds message sizes.
//
// Identity. With client certificates (RpcOptions::tls.client_ca_path) the
// caller is the client its verified certificate proves
// (certificate_identity.h: a URI SAN spiffe://<trust-domain>/heatsink/client/
// <id>, optionally naming a tenant); the `heatsink-client-id` metadata is then
// optional, and a call whose metadata names another client is
// PERMISSION_DENIED and counted (calls_identity_mismatch_total). A
// certificate that names a tenant may name objects of that tenant only.
// Without client certificates the metadata id is taken as asserted. A call
// that acts for a client without an identity is UNAUTHENTICATED.
// Every decision stays in the master.
//
// Serving. The service runs on gRPC's callback API: each call runs inline on
// one of gRPC's threads (sized by gRPC from the cores), since every master
// call is in-memory work under the master's locks. Load is bounded three
// ways (RpcOptions): streams per connection (streams_per_connection_max; a
// client with more calls outstanding waits on its own side), data calls in
// flight (calls_in_flight_max: puts, reads and removes beyond it are refused
// at once with RESOURCE_EXHAUSTED and counted in calls_overloaded_total;
// control calls of the stores - heartbeats, segments, tasks, copies,
// manifests - are always admitted, so a flood of readers never costs a store
// its heartbeat), and gRPC's memory (server_memory_bytes_max). Batches
// above the master's batch_keys_max are INVALID_ARGUMENT.
//
// Example:
//   HS_ASSIGN_OR_RETURN(std::unique_ptr<ReplicatedMaster> master, ReplicatedMaster::Create(...));
//   HS_ASSIGN_OR_RETURN(auto server, MasterServer::Start(master.get(), "127.0.0.1:0", options));
//   std::cout << server->address();  // "127.0.0.1:41234"
//   ...
//   server->Shutdown(absl::Seconds(5));
//
// Thread safety: thread-safe. REQUIRES: the master outlives the server.
#ifndef HEATSINK_RUNTIME_RPC_MASTER_SERVER_H_
#define HEATSINK_RUNTIME_RPC_MASTER_SERVER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/base/mutex.h"
#include "core/master/master_endpoint.h"
#include "runtime/etcd/leader_election.h"
#include "runtime/rpc/rpc_options.h"
#include "runtime/rpc/server_tls_reloader.h"
#include "runtime/rpc/tenant_bindings.h"

namespace grpc {
class Server;
}

namespace heatsink::runtime {

// Per-server call counters (aggregated; for /metrics and tests).
struct MasterServerStats {
  int64_t calls_total = 0;
  int64_t calls_failed_total = 0;  // any non-OK status
  int64_t calls_unauthenticated_total = 0;
  int64_t get_replica_list_calls_total = 0;
  int64_t calls_permission_denied_total = 0;  // tenant bindings and ownership checks
  int64_t calls_identity_mismatch_total = 0;  // metadata id differs from the certificate's
  // Data calls refused with RESOURCE_EXHAUSTED above calls_in_flight_max.
  int64_t calls_overloaded_total = 0;
  int64_t data_calls_in_flight = 0;  // now
};

class MasterServer {
 public:
  // Binds `listen_address` ("host:port"; port 0 picks a free one) and starts
  // serving. UNAVAILABLE when the address cannot be bound.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<MasterServer>> Start(
      MasterEndpoint* master, const std::string& listen_address, const RpcOptions& options);
  // The same, with callers bound to tenants (tenant_bindings.h).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<MasterServer>> Start(
      MasterEndpoint* master, const std::string& listen_address, const RpcOptions& options,
      TenantBindings tenants);
  // The same, answering only while `leadership` holds its etcd lease (every
  // call; UNAVAILABLE "not_leader" otherwise) and sending its epoch with
  // every answer (kLeaderEpochMetadataKey). Null: no election.
  // REQUIRES: `leadership` won its campaign and outlives the server.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<MasterServer>> Start(
      MasterEndpoint* master, const std::string& listen_address, const RpcOptions& options,
      TenantBindings tenants, const LeaderElection* leadership);
  ~MasterServer();  // Shutdown(zero grace)
  MasterServer(const MasterServer&) = delete;
  MasterServer& operator=(const MasterServer&) = delete;

  int port() const { return port_; }
  // "host:port" with the bound port.
  const std::string& address() const { return address_; }

  // Stops accepting calls, lets running calls finish for up to `grace`, then
  // cancels the rest and returns once no call runs. Idempotent.
  void Shutdown(absl::Duration grace);

  MasterServerStats stats() const;

  // Reads the TLS PEM files again (server_tls_reloader.h): new handshakes use
  // them within ServerTlsReloader::kRefreshIntervalSeconds; open connections
  // keep theirs. FAILED_PRECONDITION without TLS; on a bad file (its status,
  // naming the flag) nothing changes.
  [[nodiscard]] absl::Status ReloadTls();

  // True when callers' identities come from their client certificates; false
  // when they are asserted in metadata.
  bool identities_proven() const { return identities_proven_; }

  class Service;

 private:
  MasterServer() = default;

  std::unique_ptr<ServerTlsReloader> tls_;  // null without TLS
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  bool identities_proven_ = false;
  std::string address_;
  Mutex shutdown_mu_;
  bool shut_down_ ABSL_GUARDED_BY(shutdown_mu_) = false;
};

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_RPC_MASTER_SERVER_H_
