#include "runtime/rpc/read_access.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "core/base/check.h"
#include "core/base/status_macros.h"
#include "runtime/env/notification.h"

namespace heatsink::runtime {
namespace {

std::string Range(const ReadQuery& q) {
  return absl::StrCat("segment ", q.segment.value, " [", q.offset, ", +", q.size, ")");
}

// The entries cover [offset, offset + size) without a gap.
bool Covers(const std::vector<ManifestEntry>& entries, const ReadQuery& q) {
  uint64_t next = q.offset;
  const uint64_t end = q.offset + q.size;
  for (const ManifestEntry& e : entries) {
    if (e.offset > next) return false;
    next = std::max(next, e.offset + e.size_bytes);
    if (next >= end) return true;
  }
  return q.size > 0 && next >= end;
}

}  // namespace

ReadAccess::ReadAccess(Env* env, ReadAccessOptions options, LeaseCheck check_lease)
    : env_(env), options_(std::move(options)), check_lease_(std::move(check_lease)) {
  HS_CHECK(env_ != nullptr && options_.owner.valid());
  HS_CHECK_OK(ValidateTrustDomain(options_.trust_domain));
}

absl::Status ReadAccess::Allow(const ReadPeer& peer, const ReadQuery& query) {
  absl::Status status = Decide(peer, query);
  if (!status.ok()) refused_.fetch_add(1, std::memory_order_relaxed);
  return status;
}

absl::Status ReadAccess::Decide(const ReadPeer& peer, const ReadQuery& query) {
  if (!peer.verified) {
    return absl::UnauthenticatedError(
        absl::StrCat("a read of ", Range(query), " without a verified client certificate"));
  }
  absl::StatusOr<std::optional<CertificateIdentity>> identity =
      IdentityFromUriSans(peer.uri_sans, options_.trust_domain);
  if (!identity.ok()) return absl::UnauthenticatedError(identity.status().message());
  if (!identity->has_value()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "the reader's certificate names no heatsink client (a URI SAN spiffe://",
        options_.trust_domain, "/heatsink/client/<id>); ", Range(query), " refused"));
  }
  const CertificateIdentity& reader = **identity;
  if (reader.client == options_.owner) return absl::OkStatus();
  if (query.copy_lease.valid()) return CheckLease(reader.client, query);
  return CheckTenant(reader, query);
}

absl::Status ReadAccess::CheckLease(ClientId reader, const ReadQuery& query) {
  const LeaseKey key{query.copy_lease.value, reader.value, query.segment.value, query.offset,
                     query.size};
  const TimeNs now = env_->NowNs();
  {
    MutexLock lock(&mu_);
    auto it = lease_answers_.find(key);
    if (it != lease_answers_.end()) {
      if (now < it->second) return absl::OkStatus();
      lease_answers_.erase(it);
    }
  }
  absl::StatusOr<CopyLeaseGrant> grant = check_lease_(CopyLeaseQuery{
      query.copy_lease, reader, query.segment, query.offset, query.size});
  if (!grant.ok()) {
    const absl::StatusCode code = grant.status().code();
    if (code != absl::StatusCode::kNotFound && code != absl::StatusCode::kPermissionDenied &&
        code != absl::StatusCode::kOutOfRange) {
      // The master could not answer: nothing is proven, the reader may retry.
      return absl::UnavailableError(absl::StrCat("cannot check copy lease ",
                                                 query.copy_lease.value, " with the master: ",
                                                 grant.status().message()));
    }
    return absl::PermissionDeniedError(absl::StrCat(
        "client ", reader.value, " may not read ", Range(query), " under copy lease ",
        query.copy_lease.value, ": ", grant.status().message()));
  }
  const DurationNs keep =
      std::min<DurationNs>(grant->remaining_ns, options_.lease_answer_ttl_ms * 1'000'000);
  MutexLock lock(&mu_);
  if (lease_answers_.size() >= options_.lease_answers_max) {
    std::erase_if(lease_answers_, [now](const auto& entry) { return entry.second <= now; });
  }
  if (keep > 0 && lease_answers_.size() < options_.lease_answers_max) {
    lease_answers_[key] = now + keep;
  }
  return absl::OkStatus();
}

std::vector<ManifestEntry> ReadAccess::Entries(const ReadQuery& query) {
  StoreWorker* worker = worker_.load();
  if (worker == nullptr || query.size == 0) return {};
  std::vector<ManifestEntry> entries = worker->ManifestOverlapping(
      query.segment, query.offset, query.size, options_.entries_per_read_max);
  if (Covers(entries, query)) return entries;
  // The master may have recorded the object after the last fetch.
  auto fetched = std::make_shared<Notification>();
  worker->CallAfterNextFetch([fetched] { fetched->Notify(); });
  (void)fetched->WaitForNotificationWithTimeout(absl::Milliseconds(options_.manifest_wait_ms));
  return worker->ManifestOverlapping(query.segment, query.offset, query.size,
                                     options_.entries_per_read_max);
}

absl::Status ReadAccess::CheckTenant(const CertificateIdentity& reader, const ReadQuery& query) {
  const std::vector<ManifestEntry> entries = Entries(query);
  if (!Covers(entries, query)) {
    return absl::PermissionDeniedError(absl::StrCat("client ", reader.client.value, " may not read ",
                                                    Range(query),
                                                    ": it is not within objects of this store"));
  }
  const std::string tenant = NormalizeTenant(entries.front().name.tenant);
  for (const ManifestEntry& e : entries) {
    if (NormalizeTenant(e.name.tenant) != tenant) {
      return absl::PermissionDeniedError(absl::StrCat(
          "client ", reader.client.value, " may not read ", Range(query),
          ": it spans objects of tenants '", tenant, "' and '", NormalizeTenant(e.name.tenant),
          "'"));
    }
  }
  // The certificate's tenant, then the store's bindings, then the default.
  const std::string certified = reader.tenant.empty() ? "" : NormalizeTenant(reader.tenant);
  absl::Status allowed = absl::OkStatus();
  if (!certified.empty() && certified != tenant) {
    allowed = absl::PermissionDeniedError(
        absl::StrCat("its certificate names tenant '", certified, "'"));
  } else if (options_.tenants.enabled()) {
    allowed = options_.tenants.Check(reader.client, tenant);
  } else if (certified.empty() && tenant != NormalizeTenant("")) {
    allowed = absl::PermissionDeniedError(
        absl::StrCat("its certificate names no tenant and it is bound to none"));
  }
  if (!allowed.ok()) {
    return absl::PermissionDeniedError(absl::StrCat("client ", reader.client.value,
                                                    " may not read ", Range(query),
                                                    " of tenant '", tenant,
                                                    "': ", allowed.message()));
  }
  return absl::OkStatus();
}

}  // namespace heatsink::runtime
