#include "runtime/transport/tls_stream.h"

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/base/status_macros.h"

namespace heatsink::runtime {
namespace {

// Every reason in OpenSSL's (per-thread) error queue, which is left empty.
std::string OpensslReason() {
  std::string out;
  for (unsigned long e = ERR_get_error(); e != 0; e = ERR_get_error()) {
    char buffer[256];
    ERR_error_string_n(e, buffer, sizeof(buffer));
    if (!out.empty()) out += "; ";
    out += buffer;
  }
  return out.empty() ? std::string("no reason given") : out;
}

int SocketFd(BIO* bio) { return static_cast<int>(reinterpret_cast<intptr_t>(BIO_get_data(bio))); }

// The socket BIO of OpenSSL writes with write(2), which raises SIGPIPE on a
// closed peer; this one sends with MSG_NOSIGNAL (socket.h: "never raises
// SIGPIPE") and retries interrupted calls. A timeout (EAGAIN) is an error.
int BioWrite(BIO* bio, const char* data, int size) {
  BIO_clear_retry_flags(bio);
  for (;;) {
    const ssize_t n = ::send(SocketFd(bio), data, static_cast<size_t>(size), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    return static_cast<int>(n);
  }
}

int BioRead(BIO* bio, char* data, int size) {
  BIO_clear_retry_flags(bio);
  for (;;) {
    const ssize_t n = ::recv(SocketFd(bio), data, static_cast<size_t>(size), 0);
    if (n < 0 && errno == EINTR) continue;
    return static_cast<int>(n);
  }
}

long BioControl(BIO*, int command, long, void*) { return command == BIO_CTRL_FLUSH ? 1 : 0; }

int BioCreate(BIO* bio) {
  BIO_set_init(bio, 1);
  return 1;
}

const BIO_METHOD* SocketBioMethod() {
  static BIO_METHOD* const method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "heatsink-socket");
    HS_CHECK(m != nullptr);
    HS_CHECK(BIO_meth_set_write(m, BioWrite) == 1 && BIO_meth_set_read(m, BioRead) == 1 &&
             BIO_meth_set_ctrl(m, BioControl) == 1 && BIO_meth_set_create(m, BioCreate) == 1);
    return m;
  }();
  return method;
}

std::string Sha256Hex(X509* certificate) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (X509_digest(certificate, EVP_sha256(), digest, &size) != 1) return "";
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < size; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 15]);
  }
  return out;
}

// The status of a failed SSL call that returned `ret`.
absl::Status IoFailure(SSL* ssl, int ret, absl::string_view what) {
  const int saved_errno = errno;
  const int error = SSL_get_error(ssl, ret);
  switch (error) {
    case SSL_ERROR_ZERO_RETURN:
      return absl::UnavailableError("peer closed the connection");
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
      ERR_clear_error();
      return absl::UnavailableError(absl::StrCat(what, " timed out"));
    case SSL_ERROR_SYSCALL:
      if (ERR_peek_error() == 0) {
        if (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK) {
          return absl::UnavailableError(absl::StrCat(what, " timed out"));
        }
        return absl::UnavailableError(
            saved_errno == 0 ? std::string("peer closed the connection")
                             : absl::StrCat(what, ": ", std::strerror(saved_errno)));
      }
      break;
    default:
      break;
  }
  return absl::UnavailableError(absl::StrCat(what, ": ", OpensslReason()));
}

class TlsStream final : public SecureStream {
 public:
  explicit TlsStream(SSL* ssl) : ssl_(ssl) {}
  ~TlsStream() override { SSL_free(ssl_); }  // frees the BIO too
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  SSL* ssl() const { return ssl_; }

  bool PeerVerified() const override {
    X509* peer = SSL_get0_peer_certificate(ssl_);
    return peer != nullptr && SSL_get_verify_result(ssl_) == X509_V_OK;
  }

  std::vector<std::string> PeerUriSans() const override {
    std::vector<std::string> out;
    X509* peer = SSL_get0_peer_certificate(ssl_);
    if (peer == nullptr) return out;
    auto* names = static_cast<GENERAL_NAMES*>(
        X509_get_ext_d2i(peer, NID_subject_alt_name, nullptr, nullptr));
    if (names == nullptr) return out;
    for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
      const GENERAL_NAME* name = sk_GENERAL_NAME_value(names, i);
      if (name->type != GEN_URI) continue;
      const ASN1_IA5STRING* uri = name->d.uniformResourceIdentifier;
      out.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(uri)),
                       static_cast<size_t>(ASN1_STRING_length(uri)));
    }
    GENERAL_NAMES_free(names);
    return out;
  }

  std::string PeerCertificateSha256() const override {
    X509* peer = SSL_get0_peer_certificate(ssl_);
    return peer == nullptr ? std::string() : Sha256Hex(peer);
  }

  absl::Status Send(const void* data, size_t size) override {
    const char* p = static_cast<const char*>(data);
    while (size > 0) {
      size_t written = 0;
      ERR_clear_error();
      const int ret = SSL_write_ex(ssl_, p, size, &written);
      if (ret != 1) return IoFailure(ssl_, ret, "TLS send");
      p += written;
      size -= written;
    }
    return absl::OkStatus();
  }

  absl::Status Recv(void* data, size_t size) override {
    char* p = static_cast<char*>(data);
    while (size > 0) {
      size_t got = 0;
      ERR_clear_error();
      const int ret = SSL_read_ex(ssl_, p, size, &got);
      if (ret != 1) return IoFailure(ssl_, ret, "TLS receive");
      p += got;
      size -= got;
    }
    return absl::OkStatus();
  }

 private:
  SSL* const ssl_;
};

absl::Status BadFile(absl::string_view what, const std::string& path) {
  return absl::InvalidArgumentError(
      absl::StrCat(what, " '", path, "' cannot be used: ", OpensslReason()));
}

}  // namespace

absl::StatusOr<std::shared_ptr<TlsContext>> TlsContext::Create(Side side,
                                                               const TlsPemFiles& files) {
  HS_ASSIGN_OR_RETURN(ssl_ctx_st * ctx, NewContext(side, files));
  return std::shared_ptr<TlsContext>(new TlsContext(side, files, ctx));
}

absl::Status TlsContext::Reload() {
  HS_ASSIGN_OR_RETURN(ssl_ctx_st * fresh, NewContext(side_, files_));
  ssl_ctx_st* old = nullptr;
  {
    MutexLock lock(&mu_);
    old = std::exchange(ctx_, fresh);
    ++reloads_;
  }
  // Connections made with the old context hold their own reference to it.
  SSL_CTX_free(old);
  return absl::OkStatus();
}

int64_t TlsContext::reloads() const {
  MutexLock lock(&mu_);
  return reloads_;
}

absl::StatusOr<ssl_ctx_st*> TlsContext::NewContext(Side side, const TlsPemFiles& files) {
  if (files.cert_path.empty() != files.key_path.empty()) {
    return absl::InvalidArgumentError("a TLS certificate and its key go together");
  }
  if (side == Side::kServer && files.cert_path.empty()) {
    return absl::InvalidArgumentError("a TLS data server needs a certificate and a key");
  }
  if (side == Side::kClient && files.ca_path.empty()) {
    return absl::InvalidArgumentError(
        "a TLS data client needs the CA of the servers' certificates");
  }
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(side == Side::kServer ? TLS_server_method() : TLS_client_method());
  if (ctx == nullptr) return absl::InternalError(absl::StrCat("SSL_CTX_new: ", OpensslReason()));
  // Freed on every failure below.
  std::unique_ptr<SSL_CTX, void (*)(SSL_CTX*)> owned(ctx, SSL_CTX_free);
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_mode(ctx, SSL_MODE_AUTO_RETRY);
  if (!files.cert_path.empty()) {
    if (SSL_CTX_use_certificate_chain_file(ctx, files.cert_path.c_str()) != 1) {
      return BadFile("certificate", files.cert_path);
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, files.key_path.c_str(), SSL_FILETYPE_PEM) != 1) {
      return BadFile("key", files.key_path);
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
      ERR_clear_error();
      return absl::InvalidArgumentError(absl::StrCat("key '", files.key_path,
                                                     "' does not match certificate '",
                                                     files.cert_path, "'"));
    }
  }
  if (!files.ca_path.empty()) {
    if (SSL_CTX_load_verify_locations(ctx, files.ca_path.c_str(), nullptr) != 1) {
      return BadFile("CA", files.ca_path);
    }
    SSL_CTX_set_verify(ctx,
                       side == Side::kServer
                           ? SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT
                           : SSL_VERIFY_PEER,
                       nullptr);
  }
  return owned.release();
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

absl::Status TlsContext::Secure(Socket& socket, absl::string_view peer_host) const {
  HS_CHECK(socket.valid() && socket.secure() == nullptr);
  ERR_clear_error();
  SSL* ssl = nullptr;
  {
    // SSL_new takes its own reference to the context, so a Reload() that
    // frees this one later leaves the connection intact.
    MutexLock lock(&mu_);
    ssl = SSL_new(ctx_);
  }
  if (ssl == nullptr) return absl::UnavailableError(absl::StrCat("SSL_new: ", OpensslReason()));
  auto stream = std::make_unique<TlsStream>(ssl);
  BIO* bio = BIO_new(SocketBioMethod());
  if (bio == nullptr) return absl::UnavailableError(absl::StrCat("BIO_new: ", OpensslReason()));
  BIO_set_data(bio, reinterpret_cast<void*>(static_cast<intptr_t>(socket.fd())));
  SSL_set_bio(ssl, bio, bio);
  if (side_ == Side::kClient) {
    const std::string host(peer_host);
    in_addr ignored{};
    const bool numeric = inet_pton(AF_INET, host.c_str(), &ignored) == 1;
    const int named =
        numeric ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str())
                : SSL_set1_host(ssl, host.c_str()) & SSL_set_tlsext_host_name(ssl, host.c_str());
    if (named != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot check a certificate against '", host, "': ", OpensslReason()));
    }
  }
  const int ret = side_ == Side::kServer ? SSL_accept(ssl) : SSL_connect(ssl);
  if (ret != 1) {
    absl::Status failure = IoFailure(ssl, ret, "TLS handshake");
    const long verified = SSL_get_verify_result(ssl);
    if (verified != X509_V_OK) {
      failure = absl::UnavailableError(
          absl::StrCat(failure.message(), " (certificate: ",
                       X509_verify_cert_error_string(verified), ")"));
    }
    return failure;
  }
  socket.SetSecure(std::move(stream));
  return absl::OkStatus();
}

absl::StatusOr<std::string> PemCertificateSha256(const std::string& path) {
  ERR_clear_error();
  std::unique_ptr<BIO, int (*)(BIO*)> bio(BIO_new_file(path.c_str(), "r"), BIO_free);
  if (bio == nullptr) return BadFile("certificate", path);
  std::unique_ptr<X509, void (*)(X509*)> certificate(
      PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr), X509_free);
  if (certificate == nullptr) return BadFile("certificate", path);
  return Sha256Hex(certificate.get());
}

DataEndpoint ParseDataEndpoint(absl::string_view endpoint) {
  if (absl::StartsWith(endpoint, kTlsEndpointScheme)) {
    return DataEndpoint{std::string(endpoint.substr(kTlsEndpointScheme.size())), true};
  }
  return DataEndpoint{std::string(endpoint), false};
}

absl::StatusOr<Socket> ConnectDataEndpoint(absl::string_view endpoint,
                                           const TcpTransportKnobs& knobs) {
  const DataEndpoint parsed = ParseDataEndpoint(endpoint);
  if (parsed.tls && knobs.tls_client == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("data endpoint '", endpoint,
                     "' requires TLS; give this client the CA of the stores (--tls-ca)"));
  }
  HS_ASSIGN_OR_RETURN(Socket socket,
                      ConnectTcp(parsed.address, knobs.connect_timeout_ms, knobs.io_timeout_ms));
  if (parsed.tls) {
    HS_ASSIGN_OR_RETURN(HostPort host_port, ParseEndpoint(parsed.address));
    HS_RETURN_IF_ERROR(knobs.tls_client->Secure(socket, host_port.host));
  }
  return socket;
}

}  // namespace heatsink::runtime
