#include "runtime/rpc/certificate_identity.h"

#include <cstdint>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/base/check.h"

namespace heatsink::runtime {
namespace {

constexpr absl::string_view kScheme = "spiffe://";
constexpr absl::string_view kHeatsinkPath = "/heatsink/";

bool IsTrustDomainByte(char c) {
  return absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '.' || c == '-' || c == '_';
}

bool IsSegmentByte(char c) {
  return absl::ascii_isalnum(c) || c == '.' || c == '-' || c == '_';
}

bool ValidTenant(absl::string_view tenant) {
  if (tenant.empty() || tenant.size() > kCertificateTenantBytesMax) return false;
  if (tenant == "." || tenant == "..") return false;
  for (char c : tenant) {
    if (!IsSegmentByte(c)) return false;
  }
  return true;
}

// A decimal id in [1, 2^64 - 1] with no sign, no leading zero, nothing else.
std::optional<ClientId> ParseId(absl::string_view text) {
  if (text.empty() || text.size() > 20 || text[0] == '0') return std::nullopt;
  for (char c : text) {
    if (!absl::ascii_isdigit(c)) return std::nullopt;
  }
  uint64_t id = 0;
  if (!absl::SimpleAtoi(text, &id) || id == 0) return std::nullopt;
  return ClientId(id);
}

// The identity of one URI below "spiffe://<trust-domain>/heatsink/":
// `rest` is what follows that prefix.
std::optional<CertificateIdentity> ParseHeatsinkPath(absl::string_view rest) {
  const std::vector<absl::string_view> parts = absl::StrSplit(rest, '/');
  CertificateIdentity identity;
  if (parts.size() == 2 && parts[0] == "client") {
    std::optional<ClientId> id = ParseId(parts[1]);
    if (!id) return std::nullopt;
    identity.client = *id;
    return identity;
  }
  if (parts.size() == 4 && parts[0] == "tenant" && parts[2] == "client" && ValidTenant(parts[1])) {
    std::optional<ClientId> id = ParseId(parts[3]);
    if (!id) return std::nullopt;
    identity.client = *id;
    identity.tenant = std::string(parts[1]);
    return identity;
  }
  return std::nullopt;
}

// Quotes a SAN for an error message, bounded and without control bytes.
std::string Quoted(absl::string_view san) {
  std::string out = "'";
  for (size_t i = 0; i < san.size() && i < 200; ++i) {
    const char c = san[i];
    out.push_back(absl::ascii_isprint(c) ? c : '?');
  }
  if (san.size() > 200) out += "...";
  out += "'";
  return out;
}

}  // namespace

absl::Status ValidateTrustDomain(absl::string_view trust_domain) {
  if (trust_domain.empty() || trust_domain.size() > kTrustDomainBytesMax) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tls-trust-domain must have 1 to ", kTrustDomainBytesMax, " bytes, got ",
        trust_domain.size()));
  }
  for (char c : trust_domain) {
    if (!IsTrustDomainByte(c)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--tls-trust-domain '", trust_domain,
          "' may hold only lowercase letters, digits, '.', '-' and '_' (a SPIFFE trust domain)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<CertificateIdentity>> IdentityFromUriSans(
    const std::vector<std::string>& uri_sans, absl::string_view trust_domain) {
  HS_CHECK(ValidateTrustDomain(trust_domain).ok());
  if (uri_sans.size() > kUriSansMax) {
    return absl::InvalidArgumentError(absl::StrCat("the client certificate has ",
                                                    uri_sans.size(), " URI SANs, at most ",
                                                    kUriSansMax, " are read"));
  }
  const std::string prefix = absl::StrCat(kScheme, trust_domain, kHeatsinkPath);
  std::optional<CertificateIdentity> found;
  for (const std::string& san : uri_sans) {
    if (!absl::StartsWith(san, prefix)) continue;  // another scheme, domain or workload
    std::optional<CertificateIdentity> identity =
        ParseHeatsinkPath(absl::string_view(san).substr(prefix.size()));
    if (!identity) {
      return absl::InvalidArgumentError(absl::StrCat(
          "client certificate SAN ", Quoted(san), " is not spiffe://", trust_domain,
          "/heatsink/client/<id> nor spiffe://", trust_domain,
          "/heatsink/tenant/<tenant>/client/<id>"));
    }
    if (found) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the client certificate names more than one heatsink identity (", Quoted(san), ")"));
    }
    found = std::move(identity);
  }
  return found;
}

std::string IdentityUri(absl::string_view trust_domain, const CertificateIdentity& identity) {
  HS_CHECK(ValidateTrustDomain(trust_domain).ok());
  HS_CHECK(identity.client.valid());
  HS_CHECK(identity.tenant.empty() || ValidTenant(identity.tenant));
  if (identity.tenant.empty()) {
    return absl::StrCat(kScheme, trust_domain, kHeatsinkPath, "client/", identity.client.value);
  }
  return absl::StrCat(kScheme, trust_domain, kHeatsinkPath, "tenant/", identity.tenant,
                      "/client/", identity.client.value);
}

}  // namespace heatsink::runtime
