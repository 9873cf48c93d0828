// File: runtime/rpc/certificate_identity.h
//
// The mapping from a verified client certificate to a Heatsink caller: which
// client id (and, optionally, which tenant) the certificate proves. The
// master's gRPC server uses it when it requires client certificates
// (--tls-client-ca); docs/runtime.md "Identities from certificates" is the
// user's description.
//
// The identity is a SPIFFE-style URI subject alternative name:
//
//   spiffe://<trust-domain>/heatsink/client/<id>
//   spiffe://<trust-domain>/heatsink/tenant/<tenant>/client/<id>
//
//   - <trust-domain> is the server's (--tls-trust-domain, default
//     "heatsink.local"); URIs of other trust domains, other schemes, and
//     paths outside /heatsink/ are not ours and are ignored (a certificate may
//     carry other SPIFFE identities too).
//   - <id> is a decimal client id in [1, 2^64 - 1] without sign or leading
//     zeros. <tenant> is 1..128 bytes of [A-Za-z0-9._-], neither "." nor
//     "..": the SPIFFE path-segment alphabet, so no percent-encoding.
//   - Only URI SANs count. DNS names are never read as identities (an
//     issuer's DNS SAN could carry any text), nor is the common name.
//   - A URI of the trust domain under /heatsink/ that is not exactly one of
//     the two forms (a bad id, an empty segment, a trailing slash, a query,
//     extra segments) makes the certificate unusable: INVALID_ARGUMENT, so a
//     typo is refused rather than read as "no identity". So do two heatsink
//     identities in one certificate, even equal ones, and more than
//     kUriSansMax URI SANs.
//
// Thread safety: pure functions.
#ifndef HEATSINK_RUNTIME_RPC_CERTIFICATE_IDENTITY_H_
#define HEATSINK_RUNTIME_RPC_CERTIFICATE_IDENTITY_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/model/ids.h"

namespace heatsink::runtime {

inline constexpr char kDefaultTrustDomain[] = "heatsink.local";
inline constexpr size_t kTrustDomainBytesMax = 255;
inline constexpr size_t kCertificateTenantBytesMax = 128;
inline constexpr size_t kUriSansMax = 64;

struct CertificateIdentity {
  ClientId client;
  std::string tenant;  // empty when the certificate names no tenant

  friend bool operator==(const CertificateIdentity&, const CertificateIdentity&) = default;
};

// OK for a SPIFFE trust domain name: 1..255 bytes of [a-z0-9.-_].
// INVALID_ARGUMENT otherwise, naming the flag.
[[nodiscard]] absl::Status ValidateTrustDomain(absl::string_view trust_domain);

// The identity proven by a certificate whose URI SANs are `uri_sans`, under
// `trust_domain` (REQUIRES: valid). std::nullopt when no SAN is a heatsink
// identity of the trust domain; INVALID_ARGUMENT (with the offending SAN)
// when one is malformed, when there are two, or too many URI SANs.
[[nodiscard]] absl::StatusOr<std::optional<CertificateIdentity>> IdentityFromUriSans(
    const std::vector<std::string>& uri_sans, absl::string_view trust_domain);

// The URI SAN that proves `identity` (the inverse of IdentityFromUriSans).
// REQUIRES: a valid trust domain, a valid client, a valid or empty tenant.
std::string IdentityUri(absl::string_view trust_domain, const CertificateIdentity& identity);

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_RPC_CERTIFICATE_IDENTITY_H_
