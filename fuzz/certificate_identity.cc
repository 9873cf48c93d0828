// Fuzz target: the certificate-to-identity mapping
// (runtime/rpc/certificate_identity.h) on malformed SANs.
//
// The input is a list of URI SANs, one per '\n'-separated piece (any bytes,
// NUL included); its first byte picks the trust domain. Checked:
//   - the answer is deterministic and does not depend on the SANs' order
//     (whether an identity is found, and which);
//   - an identity found has a valid client, a tenant of the documented
//     alphabet, and its IdentityUri is exactly one of the SANs, while no other
//     SAN starts with the trust domain's heatsink prefix;
//   - no identity means no SAN starts with that prefix;
//   - a refusal is INVALID_ARGUMENT and happens only when some SAN starts with
//     the prefix or there are more than kUriSansMax SANs.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/base/check.h"
#include "runtime/rpc/certificate_identity.h"

namespace heatsink::runtime {
namespace {

void CheckOne(const std::vector<std::string>& sans, const std::string& trust_domain) {
  const std::string prefix = absl::StrCat("spiffe://", trust_domain, "/heatsink/");
  size_t ours = 0;
  for (const std::string& san : sans) ours += absl::StartsWith(san, prefix) ? 1 : 0;

  const absl::StatusOr<std::optional<CertificateIdentity>> mapped =
      IdentityFromUriSans(sans, trust_domain);
  const absl::StatusOr<std::optional<CertificateIdentity>> again =
      IdentityFromUriSans(sans, trust_domain);
  HS_CHECK(mapped.ok() == again.ok());
  std::vector<std::string> reversed(sans.rbegin(), sans.rend());
  const absl::StatusOr<std::optional<CertificateIdentity>> backwards =
      IdentityFromUriSans(reversed, trust_domain);
  HS_CHECK(mapped.ok() == backwards.ok());

  if (!mapped.ok()) {
    HS_CHECK(mapped.status().code() == absl::StatusCode::kInvalidArgument);
    HS_CHECK(ours > 0 || sans.size() > kUriSansMax);
    return;
  }
  HS_CHECK(*mapped == *again && *mapped == *backwards);
  if (!mapped->has_value()) {
    HS_CHECK(ours == 0);
    return;
  }
  const CertificateIdentity& identity = **mapped;
  HS_CHECK(identity.client.valid());
  HS_CHECK(identity.tenant.size() <= kCertificateTenantBytesMax);
  for (char c : identity.tenant) {
    HS_CHECK(absl::ascii_isalnum(c) || c == '.' || c == '-' || c == '_');
  }
  HS_CHECK(ours == 1);
  const std::string uri = IdentityUri(trust_domain, identity);
  HS_CHECK(std::count(sans.begin(), sans.end(), uri) == 1);
}

}  // namespace
}  // namespace heatsink::runtime

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const char* const kTrustDomains[] = {"heatsink.local", "a", "prod-1.example_x"};
  if (size == 0) return 0;
  const std::string trust_domain = kTrustDomains[data[0] % 3];
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::vector<std::string> sans = absl::StrSplit(text, '\n');
  if (text.empty()) sans.clear();
  heatsink::runtime::CheckOne(sans, trust_domain);
  return 0;
}
