#include "runtime/rpc/server_tls_reloader.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/security/tls_certificate_provider.h"
#include "grpcpp/security/tls_credentials_options.h"

namespace heatsink::runtime {
namespace {

namespace fs = std::filesystem;

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct X509Free {
  void operator()(X509* x509) const { X509_free(x509); }
};
struct KeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
using Bio = std::unique_ptr<BIO, BioFree>;
using Certificate = std::unique_ptr<X509, X509Free>;
using PrivateKey = std::unique_ptr<EVP_PKEY, KeyFree>;

Bio MemoryBio(const std::string& text) {
  return Bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

// The first certificate of PEM `text`, or null.
Certificate FirstCertificate(const std::string& text) {
  Bio bio = MemoryBio(text);
  if (bio == nullptr) return nullptr;
  return Certificate(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

absl::Status Invalid(const char* flag, const std::string& path, const char* what) {
  ERR_clear_error();  // OpenSSL's queue is per thread; leave it empty
  return absl::InvalidArgumentError(absl::StrCat(flag, " '", path, "': ", what));
}

absl::Status WriteFile(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return absl::UnavailableError(absl::StrCat("cannot write '", path.string(), "'"));
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckPemFiles(const std::string& cert_chain, const std::string& key,
                           const std::string& ca, const TlsFiles& paths) {
  Certificate certificate = FirstCertificate(cert_chain);
  if (certificate == nullptr) {
    return Invalid("--tls-cert", paths.cert_path, "holds no PEM certificate");
  }
  Bio key_bio = MemoryBio(key);
  PrivateKey private_key(
      key_bio == nullptr ? nullptr
                         : PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  if (private_key == nullptr) {
    return Invalid("--tls-key", paths.key_path, "holds no PEM private key");
  }
  if (X509_check_private_key(certificate.get(), private_key.get()) != 1) {
    return Invalid("--tls-key", paths.key_path,
                   absl::StrCat("does not match the certificate of --tls-cert '",
                                paths.cert_path, "'")
                       .c_str());
  }
  if (!paths.client_ca_path.empty() && FirstCertificate(ca) == nullptr) {
    return Invalid("--tls-client-ca", paths.client_ca_path, "holds no PEM certificate");
  }
  ERR_clear_error();
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ServerTlsReloader>> ServerTlsReloader::Create(const TlsFiles& tls) {
  if (!tls.server_enabled()) {
    return absl::InvalidArgumentError("certificate reloading needs --tls-cert and --tls-key");
  }
  std::unique_ptr<ServerTlsReloader> reloader(new ServerTlsReloader(tls));
  std::string pattern = (fs::temp_directory_path() / "heatsink-tls-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) {
    return absl::UnavailableError(absl::StrCat("cannot make a directory like '", pattern, "'"));
  }
  reloader->staging_dir_ = pattern;  // mkdtemp makes it mode 0700
  HS_RETURN_IF_ERROR(reloader->Stage());

  const fs::path current = fs::path(reloader->staging_dir_) / "current";
  const bool verify_clients = !tls.client_ca_path.empty();
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      (current / "key.pem").string(), (current / "cert.pem").string(),
      verify_clients ? (current / "ca.pem").string() : std::string(), kRefreshIntervalSeconds);
  grpc::experimental::TlsServerCredentialsOptions options(provider);
  options.watch_identity_key_cert_pairs();
  if (verify_clients) {
    options.watch_root_certs();
    options.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  } else {
    options.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  }
  reloader->credentials_ = grpc::experimental::TlsServerCredentials(options);
  if (reloader->credentials_ == nullptr) {
    return absl::InternalError("gRPC made no TLS server credentials");
  }
  return reloader;
}

ServerTlsReloader::~ServerTlsReloader() {
  if (staging_dir_.empty()) return;
  std::error_code ignored;
  fs::remove_all(staging_dir_, ignored);
}

absl::Status ServerTlsReloader::Reload() { return Stage(); }

int64_t ServerTlsReloader::reloads() const {
  MutexLock lock(&mu_);
  return generation_ > 0 ? generation_ - 1 : 0;
}

absl::Status ServerTlsReloader::Stage() {
  MutexLock lock(&mu_);
  HS_ASSIGN_OR_RETURN(std::string cert_chain, ReadPem(tls_.cert_path));
  HS_ASSIGN_OR_RETURN(std::string key, ReadPem(tls_.key_path));
  std::string ca;
  if (!tls_.client_ca_path.empty()) {
    HS_ASSIGN_OR_RETURN(ca, ReadPem(tls_.client_ca_path));
  }
  HS_RETURN_IF_ERROR(CheckPemFiles(cert_chain, key, ca, tls_));

  const fs::path root(staging_dir_);
  const std::string generation = absl::StrCat("gen-", generation_ + 1);
  std::error_code error;
  fs::create_directory(root / generation, error);
  if (error) {
    return absl::UnavailableError(
        absl::StrCat("cannot make '", (root / generation).string(), "': ", error.message()));
  }
  ::chmod((root / generation).c_str(), 0700);
  HS_RETURN_IF_ERROR(WriteFile(root / generation / "key.pem", key));
  HS_RETURN_IF_ERROR(WriteFile(root / generation / "cert.pem", cert_chain));
  if (!ca.empty()) HS_RETURN_IF_ERROR(WriteFile(root / generation / "ca.pem", ca));
  // Swap `current` in one rename, so the watcher never sees a mixed set.
  const fs::path next_link = root / "current.next";
  fs::remove(next_link, error);
  fs::create_directory_symlink(generation, next_link, error);
  if (!error) fs::rename(next_link, root / "current", error);
  if (error) {
    return absl::UnavailableError(
        absl::StrCat("cannot switch '", (root / "current").string(), "': ", error.message()));
  }
  // The generation before the previous one is no longer read (a watcher
  // that resolved the old link a moment ago still finds the previous one).
  if (generation_ > 1) fs::remove_all(root / absl::StrCat("gen-", generation_ - 1), error);
  ++generation_;
  return absl::OkStatus();
}

}  // namespace heatsink::runtime
