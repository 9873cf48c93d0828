// File: runtime/rpc/server_tls_reloader.h
//
// Server TLS credentials whose PEM files can be read again while the server
// runs (certificate rotation without a restart; heatsink-master does it on
// SIGHUP).
//
// gRPC 1.51 reloads certificates only through its FileWatcherCertificateProvider,
// which polls files on its own. So that new certificates take effect when the
// operator says so, and only once they are known to be good, the reloader
// keeps a private staging directory (mode 0700) that the provider watches:
//
//   <staging>/current -> gen-N/{key.pem, cert.pem, ca.pem}
//
// Create() and Reload() read the operator's files (TlsFiles cert, key and
// client CA), check them with OpenSSL (every file parses, the key matches the
// first certificate of the chain), write them into a new gen-N directory and
// swap the `current` symlink atomically (the provider then reads a consistent
// set). The provider looks every kRefreshIntervalSeconds, so new handshakes
// use the new files at most that long after Reload() returns; connections
// already open keep the session they negotiated. A reload that fails changes
// nothing.
//
// Rotating the client CA: put the old and the new CA in the client CA file
// (PEM bundle) until every client certificate of the old CA has expired, so
// clients holding one keep working.
//
// Thread safety: Reload() may run concurrently with handshakes; calls to
// Reload() are serialised internally.
#ifndef HEATSINK_RUNTIME_RPC_SERVER_TLS_RELOADER_H_
#define HEATSINK_RUNTIME_RPC_SERVER_TLS_RELOADER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/base/mutex.h"
#include "grpcpp/security/server_credentials.h"
#include "runtime/rpc/rpc_options.h"

namespace heatsink::runtime {

class ServerTlsReloader {
 public:
  static constexpr unsigned kRefreshIntervalSeconds = 1;

  // REQUIRES: tls.server_enabled(). INVALID_ARGUMENT or NOT_FOUND (naming the
  // flag and file) when a file is missing or not usable; UNAVAILABLE when the
  // staging directory cannot be written.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ServerTlsReloader>> Create(
      const TlsFiles& tls);
  ~ServerTlsReloader();  // removes the staging directory
  ServerTlsReloader(const ServerTlsReloader&) = delete;
  ServerTlsReloader& operator=(const ServerTlsReloader&) = delete;

  // Credentials for grpc::ServerBuilder: TLS from the staged files, client
  // certificates required and verified when the files name a client CA.
  std::shared_ptr<grpc::ServerCredentials> credentials() const { return credentials_; }

  // Reads the operator's files again; on success the server presents them
  // (and verifies clients against the new CA file) within
  // kRefreshIntervalSeconds. On failure (same codes as Create) nothing changes.
  [[nodiscard]] absl::Status Reload();

  // Successful reloads since Create().
  int64_t reloads() const;

 private:
  explicit ServerTlsReloader(TlsFiles tls) : tls_(std::move(tls)) {}
  // Reads and checks the operator's files and stages them as generation
  // `generation_ + 1`.
  absl::Status Stage();

  const TlsFiles tls_;
  std::string staging_dir_;
  std::shared_ptr<grpc::ServerCredentials> credentials_;
  mutable Mutex mu_;
  int64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
};

// Checks PEM text with OpenSSL. INVALID_ARGUMENT naming `flag` and `path`
// when `cert_chain` holds no certificate, `key` no private key matching the
// chain's first certificate, or `ca` (when not empty) no certificate.
[[nodiscard]] absl::Status CheckPemFiles(const std::string& cert_chain, const std::string& key,
                                         const std::string& ca, const TlsFiles& paths);

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_RPC_SERVER_TLS_RELOADER_H_
