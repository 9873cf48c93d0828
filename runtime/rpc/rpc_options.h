// File: runtime/rpc/rpc_options.h
//
// Transport settings shared by the master's gRPC server and its clients:
// message size limits, deadlines, and optional TLS. Names are the flag names
// of heatsink-master / heatsink-store / heatsink-load.
//
// TLS (optional): give the server `tls_cert_path` + `tls_key_path` (PEM) and,
// to require client certificates, `tls_client_ca_path`. Clients give
// `tls_ca_path` (the CA that signed the server's certificate) and, when the
// server requires client certificates, their own `tls_cert_path` +
// `tls_key_path`. Empty paths mean plaintext (loopback and trusted networks).
#ifndef HEATSINK_RUNTIME_RPC_RPC_OPTIONS_H_
#define HEATSINK_RUNTIME_RPC_RPC_OPTIONS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "runtime/rpc/certificate_identity.h"

namespace heatsink::runtime {

// The metadata key carrying the caller's client id (decimal).
inline constexpr char kClientIdMetadataKey[] = "heatsink-client-id";
// The initial-metadata key carrying, under etcd leader election, the epoch
// (the leader key's create revision) of the master that answers (decimal).
inline constexpr char kLeaderEpochMetadataKey[] = "heatsink-leader-epoch";

struct TlsFiles {
  std::string cert_path;       // own certificate chain (PEM)
  std::string key_path;        // own private key (PEM)
  std::string ca_path;         // client: CA of the server's certificate
  std::string client_ca_path;  // server: CA of client certificates (enables mutual TLS)
  // Server with client_ca_path: the trust domain of the SPIFFE URIs that name
  // callers (certificate_identity.h).
  std::string trust_domain = kDefaultTrustDomain;

  bool server_enabled() const { return !cert_path.empty(); }
  bool client_enabled() const { return !ca_path.empty(); }
};

struct RpcOptions {
  // Largest message either side accepts or sends; larger ones fail with
  // RESOURCE_EXHAUSTED. Bounds a BatchGetReplicaList answer too.
  int message_bytes_max = 4 << 20;
  // Deadline of every client call; an expired call is DEADLINE_EXCEEDED.
  int64_t call_timeout_ms = 5'000;
  // Server: threads serving calls at most (the stores' data service; the
  // master runs on gRPC's callback threads and is bounded by the limits
  // below instead).
  int server_threads_max = 16;
  // Master: data calls (puts, reads, removes) in flight at once, from
  // admission until their answer is sent; more are RESOURCE_EXHAUSTED at
  // once. Control calls of the stores are not counted (master_server.h).
  int64_t calls_in_flight_max = 4'096;
  // Master: calls one connection may have open at once (HTTP/2 streams).
  int streams_per_connection_max = 256;
  // Master: memory gRPC may use for calls and buffers, in bytes.
  int64_t server_memory_bytes_max = int64_t{1} << 30;
  // Client: the identity sent with the calls whose MasterClient method names
  // no caller (Remove), which a master with tenant bindings requires; 0 sends
  // none.
  uint64_t caller_client_id = 0;
  // Client: a connection of this client's own. By default gRPC shares one
  // connection among the channels of a process that have the same target
  // and settings.
  bool own_connection = false;
  TlsFiles tls;

  [[nodiscard]] absl::Status Validate() const;
};

// The text of the PEM file `path`: NOT_FOUND when it cannot be read,
// INVALID_ARGUMENT when it is empty.
[[nodiscard]] absl::StatusOr<std::string> ReadPem(const std::string& path);

// Server credentials: TLS when configured, else insecure. INVALID_ARGUMENT
// or NOT_FOUND when a PEM file cannot be read.
[[nodiscard]] absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const TlsFiles& tls);
[[nodiscard]] absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const TlsFiles& tls);

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_RPC_RPC_OPTIONS_H_
