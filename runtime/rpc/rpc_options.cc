#include "runtime/rpc/rpc_options.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"

namespace heatsink::runtime {
absl::StatusOr<std::string> ReadPem(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read '", path, "'"));
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str().empty()) return absl::InvalidArgumentError(absl::StrCat("'", path, "' is empty"));
  return text.str();
}

absl::Status RpcOptions::Validate() const {
  if (message_bytes_max < 1024) {
    return absl::InvalidArgumentError("message_bytes_max must be at least 1024");
  }
  if (call_timeout_ms <= 0) return absl::InvalidArgumentError("call_timeout_ms must be positive");
  if (server_threads_max < 2) {
    return absl::InvalidArgumentError("server_threads_max must be at least 2");
  }
  if (calls_in_flight_max < 1) {
    return absl::InvalidArgumentError("calls_in_flight_max must be positive");
  }
  if (streams_per_connection_max < 1) {
    return absl::InvalidArgumentError("streams_per_connection_max must be positive");
  }
  if (server_memory_bytes_max < (int64_t{1} << 20)) {
    return absl::InvalidArgumentError("server_memory_bytes_max must be at least 1 MiB (1048576)");
  }
  if (tls.cert_path.empty() != tls.key_path.empty()) {
    return absl::InvalidArgumentError("tls_cert_path and tls_key_path go together");
  }
  if (!tls.client_ca_path.empty()) {
    if (tls.cert_path.empty()) {
      return absl::InvalidArgumentError("tls_client_ca_path needs tls_cert_path and tls_key_path");
    }
    HS_RETURN_IF_ERROR(ValidateTrustDomain(tls.trust_domain));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const TlsFiles& tls) {
  if (!tls.server_enabled()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions options;
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  HS_ASSIGN_OR_RETURN(pair.cert_chain, ReadPem(tls.cert_path));
  HS_ASSIGN_OR_RETURN(pair.private_key, ReadPem(tls.key_path));
  options.pem_key_cert_pairs.push_back(std::move(pair));
  if (!tls.client_ca_path.empty()) {
    HS_ASSIGN_OR_RETURN(options.pem_root_certs, ReadPem(tls.client_ca_path));
    options.client_certificate_request =
        GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(options);
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const TlsFiles& tls) {
  if (!tls.client_enabled()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions options;
  HS_ASSIGN_OR_RETURN(options.pem_root_certs, ReadPem(tls.ca_path));
  if (!tls.cert_path.empty()) {
    HS_ASSIGN_OR_RETURN(options.pem_cert_chain, ReadPem(tls.cert_path));
    HS_ASSIGN_OR_RETURN(options.pem_private_key, ReadPem(tls.key_path));
  }
  return grpc::SslCredentials(options);
}

}  // namespace heatsink::runtime
