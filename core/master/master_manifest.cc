// MasterService: restart without losing objects. Stores report manifests of
// what their segments hold (ReportManifest) and the master rebuilds objects,
// replicas, used bytes and its version counter from them; while it recovers,
// keys it cannot resolve yet are UNAVAILABLE. The journal keeps each store's
// manifest current (FetchTasks carries the changes). Rules: docs/runtime.md,
// "Master restart".
#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/base/status_macros.h"
#include "core/master/master_service.h"

namespace heatsink {

using master_internal::Allocation;

namespace {

// What a complete replica reported for an object's current version (no put
// in progress) does: refused, or added, possibly in place of a dynamic
// replica.
struct SameVersionReport {
  absl::Status refused;
  // The dynamic replica that goes to make room under the dynamic cap.
  std::optional<size_t> dynamic_to_drop;
  // No complete dynamic replica can go, but a dynamic copy in flight, which
  // admission counted, holds the cap: that copy is revoked instead.
  bool revoke_copy_in_flight = false;
};

// `e` lands on a segment of `domain`. Refused when its size
// differs, when the object has a replica on that segment already or holds
// `replicas_per_object_max`; then the dynamic replica cap (`dynamic_cap`
// readable replicas, per domain with `per_domain`; 0: none), for a store
// that reports late, after others brought the object back to its cap: a
// reported dynamic replica is refused, and for an ordinary one the last
// complete dynamic replica goes instead, or, when the only dynamic one is a
// copy in flight, that copy is revoked (ordinary data is never dropped for
// an optional copy).
SameVersionReport JudgeSameVersion(const ManifestEntry& e, const master_internal::ObjectMeta& meta,
                                   const Domain& domain, int64_t replicas_per_object_max,
                                   int64_t dynamic_cap, bool per_domain) {
  SameVersionReport out;
  if (e.size_bytes != meta.size) {
    out.refused = absl::InvalidArgumentError(
        absl::StrCat("size ", e.size_bytes, " differs from the object's ", meta.size));
    return out;
  }
  if (meta.FindOnSegment(e.segment_id) != nullptr) {
    out.refused = absl::AlreadyExistsError("the object already has a replica on this segment");
    return out;
  }
  if (static_cast<int64_t>(meta.replicas.size()) >= replicas_per_object_max) {
    out.refused = absl::ResourceExhaustedError(absl::StrCat(
        "the object has replicas_per_object_max (", replicas_per_object_max, ") replicas"));
    return out;
  }
  if (dynamic_cap <= 0) return out;
  int64_t readable = 0;
  bool has_dynamic = e.dynamic;
  bool copy_in_flight = false;
  for (size_t i = 0; i < meta.replicas.size(); ++i) {
    const master_internal::ReplicaRecord& x = meta.replicas[i];
    // Readable replicas, and dynamic copies in flight, which admission
    // counted when it started them.
    const bool in_flight = x.dynamic && x.holds_reserved();
    if (x.status != ReplicaStatus::kComplete && !in_flight) continue;
    if (per_domain && x.segment->location.domain != domain) continue;
    ++readable;
    if (x.dynamic) {
      has_dynamic = true;
      if (!in_flight) out.dynamic_to_drop = i;  // the last complete one listed
      copy_in_flight = copy_in_flight || in_flight;
    }
  }
  if (!has_dynamic || readable < dynamic_cap) {
    out.dynamic_to_drop.reset();
  } else if (!e.dynamic && !out.dynamic_to_drop.has_value()) {
    // Only a copy in flight is dynamic: completing it would put the object
    // over the cap beside this ordinary replica.
    out.revoke_copy_in_flight = copy_in_flight;
  } else if (e.dynamic) {
    out.refused = absl::ResourceExhaustedError(
        absl::StrCat("the object holds dynamic_replication_max_memory_replicas (", dynamic_cap,
                     ") readable replicas", per_domain ? " in domain " : "",
                     per_domain ? domain : "", ": the reported dynamic replica is freed"));
  }
  return out;
}

}  // namespace

void MasterService::MakeRoomForReported(const ObjectNameRef& name, ObjectMeta& meta,
                                        std::optional<size_t> dynamic_to_drop,
                                        bool revoke_copy_in_flight, Removals& removals) {
  if (dynamic_to_drop.has_value()) {
    // Ordinary data is never dropped for an optional copy: the dynamic
    // replica goes instead.
    RemoveReplicaLocked(name, meta, *dynamic_to_drop, RemovalCause::kSuperseded, removals);
  }
  if (revoke_copy_in_flight) {
    // The same for a dynamic copy still in flight (at most one task per
    // key): its target replica goes and its CopyEnd will be refused.
    HS_CHECK(meta.replication_task.valid());
    FinishTaskLocked(name, meta, meta.replication_task, RemovalCause::kCopyCancelled, removals);
    counters_.tasks_cancelled.fetch_add(1, std::memory_order_relaxed);
  }
}

void MasterService::BeginRecovery(int64_t expected_stores, DurationNs grace) {
  MutexLock lock(&recovery_mu_);
  recovery_deadline_ns_ = Now() + grace;
  recovery_expected_stores_ = expected_stores;
  reported_stores_.clear();
  recovering_.store(grace > 0, std::memory_order_release);
}

bool MasterService::Recovering() const {
  if (!recovering_.load(std::memory_order_acquire)) return false;
  MutexLock lock(&recovery_mu_);
  const bool all_reported =
      recovery_expected_stores_ > 0 &&
      static_cast<int64_t>(reported_stores_.size()) >= recovery_expected_stores_;
  if (all_reported || IsExpired(Now(), recovery_deadline_ns_)) {
    recovering_.store(false, std::memory_order_release);
  }
  return recovering_.load(std::memory_order_acquire);
}

void MasterService::SetKnownTenants(std::vector<std::string> tenants) {
  MutexLock lock(&recovery_mu_);
  known_tenants_ = absl::btree_set<std::string>(tenants.begin(), tenants.end());
}

void MasterService::RaiseVersionAbove(Version v) {
  Version next = next_version_.load(std::memory_order_relaxed);
  while (next <= v && !next_version_.compare_exchange_weak(next, v + 1)) {
  }
}

void MasterService::SetIdEpoch(uint32_t epoch) { tasks_.SetFirstId(IdBase(epoch) + 1); }

void MasterService::SetReportedDynamicReplicaCap(int64_t max_memory_replicas, bool per_domain) {
  HS_CHECK(max_memory_replicas >= 0);
  reported_dynamic_cap_ = max_memory_replicas;
  reported_dynamic_cap_per_domain_ = per_domain;
}

void MasterService::DisableManifestJournal() {
  HS_CHECK_MSG(segments_.segment_count() == 0,
               "DisableManifestJournal after a segment was mounted");
  journal_enabled_ = false;
}

void MasterService::JournalReplica(const ObjectNameRef& name, Version version,
                                   const ReplicaRecord& r) {
  if (!journal_enabled_) return;
  ManifestEntry e;
  e.name = Own(name);
  e.version = version;
  e.size_bytes = r.size;
  e.segment_id = r.segment_id();
  e.offset = r.offset;
  e.complete = r.status == ReplicaStatus::kComplete;
  e.origin = r.origin;
  e.dynamic = r.dynamic;
  e.lease_id = r.lease_id;
  journal_.Put(r.segment->location.owner, e);
}

void MasterService::JournalRemoval(const ReplicaRecord& r) {
  if (!journal_enabled_) return;
  journal_.Remove(r.segment->location.owner, r.segment_id(), r.offset);
}

void MasterService::ReleaseClaimed(const Allocation& a, TimeNs release_at) {
  if (release_at > Now() && segments_.DiscardPut(absl::MakeConstSpan(&a, 1), release_at).ok()) {
    return;
  }
  // At once, or the discarded table is full (then at once too: the range
  // was never handed to anyone by this master).
  segments_.FreeUsed(a.segment->location.id, a.offset, a.size);
}

absl::StatusOr<ReportManifestResponse> MasterService::ReportManifest(
    ClientId client, const ReportManifestRequest& req) {
  if (!client.valid()) return absl::InvalidArgumentError("client id 0 is invalid");
  if (static_cast<int64_t>(req.entries.size()) > knobs_.manifest_entries_per_report_max) {
    return absl::ResourceExhaustedError(absl::StrCat(
        req.entries.size(), " manifest entries exceed manifest_entries_per_report_max (",
        knobs_.manifest_entries_per_report_max, ")"));
  }
  if (!clients_.IsLive(client, Now())) {
    return absl::NotFoundError(
        absl::StrCat("client ", client.value, " is not registered (or missed its heartbeats)"));
  }
  absl::btree_set<std::string> tenants;
  {
    MutexLock lock(&recovery_mu_);
    tenants = known_tenants_;
  }
  const bool recovering = Recovering();
  ReportManifestResponse response;
  response.results.reserve(req.entries.size());
  Removals removals;
  for (const ManifestEntry& e : req.entries) {
    absl::Status s;
    absl::StatusOr<ObjectNameRef> name = CheckName(e.name);
    if (!name.ok()) {
      s = name.status();
    } else if (!tenants.empty() && !tenants.contains(name->tenant)) {
      s = absl::InvalidArgumentError(absl::StrCat("unknown tenant '", name->tenant, "'"));
    } else {
      s = ApplyManifestEntry(client, *name, e, recovering, removals);
    }
    if (s.ok()) {
      counters_.manifest_accepted.fetch_add(1, std::memory_order_relaxed);
    } else {
      const bool discarded = absl::IsFailedPrecondition(s) || absl::IsAborted(s);
      (discarded ? counters_.manifest_discarded : counters_.manifest_rejected)
          .fetch_add(1, std::memory_order_relaxed);
      s = absl::Status(s.code(),
                       absl::StrCat("store ", client.value, ", manifest entry '", e.name.key,
                                    "' version ", e.version, " at segment ", e.segment_id.value,
                                    " offset ", e.offset, ": ", s.message()));
    }
    response.results.push_back(std::move(s));
  }
  Notify(removals);
  if (req.last) {
    segments_.EndManifest(client);
    MutexLock lock(&recovery_mu_);
    reported_stores_.insert(client);
  }
  return response;
}

absl::Status MasterService::ApplyManifestEntry(ClientId client, const ObjectNameRef& name,
                                               const ManifestEntry& e, bool recovering,
                                               Removals& removals) {
  if (e.version == 0) return absl::InvalidArgumentError("version 0");
  if (e.size_bytes == 0) return absl::InvalidArgumentError("size 0");
  // Above every reported version, complete or not: a fence a writer or a
  // copy still holds can never match a new put.
  RaiseVersionAbove(e.version);
  const TimeNs now = Now();
  Shard& shard = shards_.For(name);
  MutexLock lock(&shard.mu);
  auto it = shard.objects.find(name);
  if (it != shard.objects.end()) {
    // The same replica reported again (a report retried): nothing to do.
    const ReplicaRecord* same = it->second.FindOnSegment(e.segment_id);
    if (same != nullptr && e.complete && same->status == ReplicaStatus::kComplete &&
        same->offset == e.offset && same->size == e.size_bytes && it->second.version == e.version) {
      return absl::OkStatus();
    }
  }
  HS_ASSIGN_OR_RETURN(const Allocation a,
                      segments_.ClaimRange(client, e.segment_id, e.offset, e.size_bytes));
  if (!e.complete) {
    // A put or a copy in flight when the old master died: its writer (or
    // copy source) may still be writing, so the bytes stay taken for the
    // release timeout, then are free. Nothing of it is readable.
    ReleaseClaimed(a, now + knobs_.put_start_release_timeout_ns());
    return absl::FailedPreconditionError("incomplete (a put or copy in flight): discarded");
  }
  ReplicaRecord r;
  r.id = NextReplicaId();
  r.segment = a.segment;
  r.offset = a.offset;
  r.size = a.size;
  r.status = ReplicaStatus::kComplete;
  // A dynamic replica comes back dynamic (optional, first to go under
  // pressure, counted under the cap like every readable replica); its lease
  // died with the old master.
  r.dynamic = e.dynamic;
  r.origin = e.dynamic ? ReplicaOrigin::kCopy : e.origin;

  if (it == shard.objects.end()) {
    if (object_count_.fetch_add(1, std::memory_order_relaxed) >= knobs_.objects_max) {
      object_count_.fetch_sub(1, std::memory_order_relaxed);
      ReleaseClaimed(a, now);
      return absl::ResourceExhaustedError(
          absl::StrCat("objects_max (", knobs_.objects_max, ") objects exist"));
    }
    ObjectMeta meta;
    meta.version = e.version;
    meta.size = e.size_bytes;
    meta.put_in_progress = false;
    meta.put_start_ns = now;
    meta.lease_expiry_ns = now;  // no lease; orders it for eviction
    meta.replicas.push_back(std::move(r));
    shard.objects.emplace(Own(name), std::move(meta));
    return absl::OkStatus();
  }
  ObjectMeta& meta = it->second;
  if (e.version > meta.version && recovering && !meta.put_in_progress &&
      !meta.replication_task.valid()) {
    // Stores disagree: the highest complete version wins and the older
    // replicas go (they are no one's any more: the leases that protected
    // them died with the old master).
    while (!meta.replicas.empty()) {
      RemoveReplicaLocked(name, meta, meta.replicas.size() - 1, RemovalCause::kSuperseded,
                          removals);
    }
    meta.version = e.version;
    meta.size = e.size_bytes;
    meta.replicas.push_back(std::move(r));
    return absl::OkStatus();
  }
  if (e.version == meta.version && !meta.put_in_progress) {
    const SameVersionReport verdict =
        JudgeSameVersion(e, meta, a.segment->location.domain, knobs_.replicas_per_object_max,
                         reported_dynamic_cap_, reported_dynamic_cap_per_domain_);
    if (!verdict.refused.ok()) {
      ReleaseClaimed(a, now);
      return verdict.refused;
    }
    MakeRoomForReported(name, meta, verdict.dynamic_to_drop, verdict.revoke_copy_in_flight,
                        removals);
    meta.replicas.push_back(std::move(r));
    return absl::OkStatus();
  }
  ReleaseClaimed(a, now);
  if (e.version < meta.version) {
    return absl::AbortedError(
        absl::StrCat("older than the master's version ", meta.version, ": freed"));
  }
  return absl::AbortedError(absl::StrCat(
      "the master's version ", meta.version,
      " wins (reported after the recovery, or the object is being put or copied): freed"));
}

}  // namespace heatsink
