// File: runtime/transport/tls_stream.h
//
// TLS for the framed TCP data plane (runtime/transport/wire.h), with OpenSSL
// from Debian (libssl-dev). A store whose data server has a server context
// accepts only TLS connections and advertises its endpoint as
// "tls://host:port"; a client (a store's TCP mover, HeatsinkClient's TCP data
// path, the UCX mover's bootstrap) secures a connection to such an endpoint
// with its client context, and reaches a plain "host:port" endpoint in clear.
// The endpoints come from the master over the (TLS) control plane.
//
//   - Server context: the certificate and key the store presents; with a CA
//     file, clients must present a certificate that CA signed (mutual TLS).
//     heatsink-store builds it from --data-tls-cert, --data-tls-key and
//     --data-tls-client-ca (the flags of its gRPC data service).
//   - Client context: the CA that signed the servers' certificates, checked
//     against the host or IPv4 address of the endpoint, and optionally the
//     client's own certificate and key (--tls-ca, --tls-cert, --tls-key, as
//     for the control plane).
//   - TLS 1.2 at least; certificate expiry and chain are checked by OpenSSL.
//     A failed handshake is UNAVAILABLE with OpenSSL's reason.
//   - Rotation: Reload() reads the context's PEM files again (heatsink-store
//     on SIGHUP); new handshakes use them, connections already made keep
//     theirs. A reload that fails changes nothing.
//
// UCX's RMA puts are not encrypted: the UCX mover is for trusted fabrics
// (docs/runtime.md).
//
// Thread safety: a TlsContext may be shared; Secure() and Reload() may run
// concurrently. A secured Socket is used by one thread at a time (ShutdownBoth from another
// thread still interrupts it).
#ifndef HEATSINK_RUNTIME_TRANSPORT_TLS_STREAM_H_
#define HEATSINK_RUNTIME_TRANSPORT_TLS_STREAM_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/base/mutex.h"
#include "runtime/transport/socket.h"
#include "runtime/transport/tcp_knobs.h"

struct ssl_ctx_st;

namespace heatsink::runtime {

inline constexpr absl::string_view kTlsEndpointScheme = "tls://";

struct TlsPemFiles {
  std::string cert_path;  // own certificate chain (required for a server)
  std::string key_path;   // its private key
  std::string ca_path;    // server: CA of client certificates; client: CA of servers
};

class TlsContext {
 public:
  enum class Side { kServer, kClient };

  // INVALID_ARGUMENT naming the file when a PEM file is missing, does not
  // parse, or the key does not match the certificate.
  [[nodiscard]] static absl::StatusOr<std::shared_ptr<TlsContext>> Create(
      Side side, const TlsPemFiles& files);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  Side side() const { return side_; }

  // Reads the PEM files of Create() again; new handshakes use them. Errors
  // as for Create(); on error the previous files stay in use.
  [[nodiscard]] absl::Status Reload();
  // Successful Reload() calls.
  int64_t reloads() const;

  // Runs the handshake on the connected `socket` and makes its I/O go through
  // TLS. `peer_host`: on the client side the host name or IPv4 address the
  // server's certificate must name; ignored on the server side. Bounded by
  // the socket's I/O timeout. UNAVAILABLE when the handshake fails.
  [[nodiscard]] absl::Status Secure(Socket& socket, absl::string_view peer_host) const;

 private:
  TlsContext(Side side, TlsPemFiles files, ssl_ctx_st* ctx)
      : side_(side), files_(std::move(files)), ctx_(ctx) {}
  [[nodiscard]] static absl::StatusOr<ssl_ctx_st*> NewContext(Side side, const TlsPemFiles& files);

  const Side side_;
  const TlsPemFiles files_;
  mutable Mutex mu_;
  ssl_ctx_st* ctx_ ABSL_GUARDED_BY(mu_);
  int64_t reloads_ ABSL_GUARDED_BY(mu_) = 0;
};

// The SHA-256 of the DER of the first certificate in PEM file `path`, in
// lowercase hex (as SecureStream::PeerCertificateSha256); INVALID_ARGUMENT
// naming the file when it holds none.
[[nodiscard]] absl::StatusOr<std::string> PemCertificateSha256(const std::string& path);

struct DataEndpoint {
  std::string address;  // "host:port"
  bool tls = false;
};
// "tls://host:port" -> {"host:port", true}; anything else -> {it, false}.
DataEndpoint ParseDataEndpoint(absl::string_view endpoint);

// Connects to a data endpoint within knobs' timeouts; a "tls://" endpoint is
// secured with knobs.tls_client (FAILED_PRECONDITION when there is none).
[[nodiscard]] absl::StatusOr<Socket> ConnectDataEndpoint(absl::string_view endpoint,
                                                         const TcpTransportKnobs& knobs);

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_TRANSPORT_TLS_STREAM_H_
