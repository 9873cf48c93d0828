// MasterService: construction, observers, clients, segments, puts, reads and
// Remove. Copy tasks are in master_copy.cc, eviction and the sweep in
// master_sweep.cc, views and invariants in master_views.cc.
#include "core/master/master_service.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/base/status_macros.h"

namespace heatsink {

using master_internal::Allocation;
using master_internal::LocationOf;

MasterService::MasterService(Env* env, const MasterKnobs& knobs)
    : env_(env),
      knobs_(knobs),
      shards_(knobs.metadata_shards),
      segments_(knobs, env->rng->Fork("master.allocation")),
      tasks_(knobs),
      clients_(knobs) {
  HS_CHECK(env != nullptr && env->clock != nullptr && env->executor != nullptr &&
           env->rng != nullptr);
  HS_CHECK_OK(knobs.Validate());
  if (knobs.restart_grace_ms > 0) {
    BeginRecovery(knobs.restart_expected_stores, knobs.restart_grace_ns());
  }
  ScheduleSweep();
}

absl::StatusOr<std::unique_ptr<MasterService>> MasterService::Create(Env* env,
                                                                     const MasterKnobs& knobs) {
  HS_RETURN_IF_ERROR(knobs.Validate());
  return std::make_unique<MasterService>(env, knobs);
}

MasterService::~MasterService() {
  MutexLock lock(&timer_mu_);
  stopping_ = true;
  if (sweep_timer_ != kNoTimer) env_->executor->Cancel(sweep_timer_);
  if (eviction_timer_ != kNoTimer) env_->executor->Cancel(eviction_timer_);
}

void MasterService::SetReadObserver(ReadObserver* observer) {
  read_observer_.store(observer, std::memory_order_release);
}

void MasterService::SetReplicaRemovalObserver(ReplicaRemovalObserver* observer) {
  removal_observer_.store(observer, std::memory_order_release);
}

void MasterService::SetOptionalReplicaRanker(OptionalReplicaRanker* ranker) {
  optional_ranker_.store(ranker, std::memory_order_release);
}

void MasterService::Notify(const Removals& removals) const {
  if (removals.empty()) return;
  ReplicaRemovalObserver* observer = removal_observer_.load(std::memory_order_acquire);
  if (observer == nullptr) return;
  for (const ReplicaRemoval& r : removals) observer->OnReplicaRemoved(r);
}

absl::StatusOr<master_internal::ObjectNameRef> MasterService::CheckName(
    const ObjectName& name) const {
  if (name.key.empty()) return absl::InvalidArgumentError("empty key");
  if (static_cast<int64_t>(name.key.size()) > knobs_.key_bytes_max) {
    return absl::InvalidArgumentError(absl::StrCat("key of ", name.key.size(),
                                                   " bytes exceeds key_bytes_max (",
                                                   knobs_.key_bytes_max, ")"));
  }
  if (static_cast<int64_t>(name.tenant.size()) > knobs_.tenant_bytes_max) {
    return absl::InvalidArgumentError(absl::StrCat("tenant of ", name.tenant.size(),
                                                   " bytes exceeds tenant_bytes_max (",
                                                   knobs_.tenant_bytes_max, ")"));
  }
  return ObjectNameRef{name.tenant.empty() ? kDefaultTenant : absl::string_view(name.tenant),
                       name.key};
}

ObjectName MasterService::Own(const ObjectNameRef& ref) {
  return ObjectName{std::string(ref.tenant), std::string(ref.key)};
}

// ---------------------------------------------------------------------------
// Clients and segments
// ---------------------------------------------------------------------------

absl::Status MasterService::RegisterClient(const RegisterClientRequest& req) {
  if (!req.client_id.valid()) return absl::InvalidArgumentError("client id 0 is invalid");
  if (static_cast<int64_t>(req.host.size()) > knobs_.name_bytes_max ||
      static_cast<int64_t>(req.domain.size()) > knobs_.name_bytes_max) {
    return absl::InvalidArgumentError(
        absl::StrCat("host or domain longer than name_bytes_max (", knobs_.name_bytes_max, ")"));
  }
  return clients_.Register(req, Now());
}

absl::Status MasterService::Heartbeat(ClientId client) {
  if (!client.valid()) return absl::InvalidArgumentError("client id 0 is invalid");
  return clients_.Heartbeat(client, Now());
}

absl::Status MasterService::MountSegment(ClientId client, const MountSegmentRequest& req) {
  if (!client.valid()) return absl::InvalidArgumentError("client id 0 is invalid");
  if (!req.segment_id.valid()) return absl::InvalidArgumentError("segment id 0 is invalid");
  if (req.capacity_bytes == 0) return absl::InvalidArgumentError("segment capacity is 0");
  for (const std::string* s : {&req.name, &req.host, &req.domain, &req.transport_endpoint,
                               &req.data_service_endpoint}) {
    if (static_cast<int64_t>(s->size()) > knobs_.name_bytes_max) {
      return absl::InvalidArgumentError(absl::StrCat("segment name, host, domain or endpoint '",
                                                     *s, "' longer than name_bytes_max (",
                                                     knobs_.name_bytes_max, ")"));
    }
  }
  if (!clients_.IsLive(client, Now())) {
    return absl::NotFoundError(
        absl::StrCat("client ", client.value, " is not registered (or missed its heartbeats)"));
  }
  HS_ASSIGN_OR_RETURN(const bool mounted, segments_.Mount(client, req));
  (void)mounted;  // idempotent: both outcomes are success
  return absl::OkStatus();
}

absl::Status MasterService::UnmountSegment(ClientId client, SegmentId segment) {
  if (!client.valid()) return absl::InvalidArgumentError("client id 0 is invalid");
  HS_ASSIGN_OR_RETURN(std::shared_ptr<master_internal::SegmentHandle> handle,
                      segments_.BeginUnmount(client, segment));
  if (handle == nullptr) return absl::OkStatus();  // already gone: idempotent
  UnmountInternal(handle, RemovalCause::kUnmount);
  return absl::OkStatus();
}

absl::Status MasterService::SetSegmentAllocatable(ClientId client, SegmentId segment,
                                                  bool allocatable) {
  if (!segment.valid()) return absl::InvalidArgumentError("segment id 0 is invalid");
  return segments_.SetAllocatable(client, segment, allocatable);
}

// ---------------------------------------------------------------------------
// Replica and object removal (shared by every path)
// ---------------------------------------------------------------------------

void MasterService::RemoveReplicaLocked(const ObjectNameRef& name, ObjectMeta& meta, size_t index,
                                        RemovalCause cause, Removals& out) {
  HS_CHECK(index < meta.replicas.size());
  ReplicaRecord r = std::move(meta.replicas[index]);
  meta.replicas.erase(meta.replicas.begin() + static_cast<std::ptrdiff_t>(index));
  JournalRemoval(r);
  if (r.holds_reserved()) {
    segments_.FreeReserved(r.segment_id(), r.offset, r.size);
  } else {
    segments_.FreeUsed(r.segment_id(), r.offset, r.size);
  }
  ReplicaRemoval removal;
  removal.t_ns = Now();
  removal.name = Own(name);
  removal.replica = r.Describe(meta.version);
  removal.cause = cause;
  removal.object_deleted = meta.replicas.empty();
  out.push_back(std::move(removal));
}

void MasterService::DeleteObjectLocked(Shard& shard, const ObjectNameRef& name, RemovalCause cause,
                                       Removals& out) {
  auto it = shard.objects.find(name);
  HS_CHECK(it != shard.objects.end());
  HS_CHECK_MSG(!it->second.replication_task.valid(), "deleting an object with a copy task");
  while (!it->second.replicas.empty()) RemoveReplicaLocked(name, it->second, 0, cause, out);
  shard.objects.erase(it);
  object_count_.fetch_sub(1, std::memory_order_relaxed);
}

bool MasterService::DiscardPutLocked(Shard& shard, const ObjectNameRef& name, Removals& out) {
  auto it = shard.objects.find(name);
  HS_CHECK(it != shard.objects.end() && it->second.put_in_progress);
  ObjectMeta& meta = it->second;
  std::vector<Allocation> ranges;
  ranges.reserve(meta.replicas.size());
  for (const ReplicaRecord& r : meta.replicas) ranges.push_back({r.segment, r.offset, r.size});
  // The writer may still be writing: the bytes stay allocated (as used) until
  // the release timeout, counted from the put's start.
  const TimeNs release_at = meta.put_start_ns + knobs_.put_start_release_timeout_ns();
  if (!segments_.DiscardPut(ranges, release_at).ok()) return false;
  for (const ReplicaRecord& r : meta.replicas) JournalRemoval(r);
  const TimeNs now = Now();
  for (size_t i = 0; i < meta.replicas.size(); ++i) {
    ReplicaRemoval removal;
    removal.t_ns = now;
    removal.name = Own(name);
    removal.replica = meta.replicas[i].Describe(meta.version);
    removal.cause = RemovalCause::kPutDiscarded;
    removal.object_deleted = i + 1 == meta.replicas.size();
    out.push_back(std::move(removal));
  }
  shard.objects.erase(it);
  object_count_.fetch_sub(1, std::memory_order_relaxed);
  counters_.puts_discarded.fetch_add(1, std::memory_order_relaxed);
  return true;
}

// ---------------------------------------------------------------------------
// Puts
// ---------------------------------------------------------------------------

absl::StatusOr<PutStartResponse> MasterService::PutStart(ClientId client,
                                                         const PutStartRequest& req) {
  HS_ASSIGN_OR_RETURN(const ObjectNameRef name, CheckName(req.name));
  if (!client.valid()) return absl::InvalidArgumentError("client id 0 is invalid");
  if (req.size_bytes == 0) return absl::InvalidArgumentError("object size is 0");
  if (req.replica_num == 0) return absl::InvalidArgumentError("replica_num is 0");
  if (Recovering()) {
    return absl::UnavailableError(
        "master_recovering: the master restarted and is rebuilding its metadata from the "
        "stores' manifests; retry");
  }
  if (static_cast<int64_t>(req.replica_num) > knobs_.replicas_per_object_max) {
    return absl::ResourceExhaustedError(absl::StrCat("replica_num ", req.replica_num,
                                                     " exceeds replicas_per_object_max (",
                                                     knobs_.replicas_per_object_max, ")"));
  }
  if (static_cast<int64_t>(req.preferred_segments.size()) > knobs_.preferred_segments_max) {
    return absl::ResourceExhaustedError(absl::StrCat(
        req.preferred_segments.size(), " preferred segments exceed preferred_segments_max (",
        knobs_.preferred_segments_max, ")"));
  }

  Removals removals;
  absl::Status failure;
  std::optional<PutStartResponse> response;
  // Two attempts: the second follows one synchronous eviction pass when the
  // first failed for lack of room.
  for (int attempt = 0; attempt < 2 && !response.has_value(); ++attempt) {
    bool eviction_may_help = false;
    {
      Shard& shard = shards_.For(name);
      MutexLock lock(&shard.mu);
      failure = PutStartLocked(shard, name, client, req, removals, &eviction_may_help, &response);
    }
    if (failure.ok() || !absl::IsResourceExhausted(failure) || !eviction_may_help) break;
    if (attempt == 0) Evict(req.size_bytes * req.replica_num);
  }
  Notify(removals);
  if (!failure.ok()) return failure;
  MaybeScheduleEviction();
  return *std::move(response);
}

absl::Status MasterService::PutStartLocked(Shard& shard, const ObjectNameRef& name,
                                           ClientId client, const PutStartRequest& req,
                                           Removals& removals, bool* eviction_may_help,
                                           std::optional<PutStartResponse>* response) {
  const TimeNs now = Now();
  auto it = shard.objects.find(name);
  if (it != shard.objects.end()) {
    const ObjectMeta& meta = it->second;
    if (!meta.put_in_progress) {
      return absl::AlreadyExistsError(
          absl::StrCat("object '", name.key, "' in tenant '", name.tenant, "' already exists"));
    }
    if (!IsExpired(now, meta.put_start_ns + knobs_.put_start_discard_timeout_ns())) {
      return absl::AlreadyExistsError(
          absl::StrCat("object '", name.key, "' is being put (version ", meta.version, ")"));
    }
    if (!DiscardPutLocked(shard, name, removals)) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "a stuck put of '", name.key, "' cannot be discarded: discarded_puts_max reached"));
    }
  }
  if (object_count_.fetch_add(1, std::memory_order_relaxed) >= knobs_.objects_max) {
    object_count_.fetch_sub(1, std::memory_order_relaxed);
    return absl::ResourceExhaustedError(
        absl::StrCat("objects_max (", knobs_.objects_max, ") objects exist"));
  }
  absl::StatusOr<std::vector<Allocation>> allocations = segments_.AllocateForPut(
      req.size_bytes, req.replica_num, req.preferred_segments, eviction_may_help);
  if (!allocations.ok()) {
    object_count_.fetch_sub(1, std::memory_order_relaxed);
    return allocations.status();
  }
  ObjectMeta meta;
  meta.version = next_version_.fetch_add(1, std::memory_order_relaxed);
  meta.size = req.size_bytes;
  meta.put_client = client;
  meta.put_start_ns = now;
  meta.put_in_progress = true;
  PutStartResponse out;
  out.version = meta.version;
  out.replicas.reserve(allocations->size());
  for (Allocation& a : *allocations) {
    ReplicaRecord r;
    r.id = NextReplicaId();
    r.segment = std::move(a.segment);
    r.offset = a.offset;
    r.size = a.size;
    r.status = ReplicaStatus::kProcessing;
    r.origin = ReplicaOrigin::kPut;
    out.replicas.push_back(r.Describe(meta.version));
    JournalReplica(name, meta.version, r);
    meta.replicas.push_back(std::move(r));
  }
  shard.objects.emplace(Own(name), std::move(meta));
  shard.oldest_put_start_ns = std::min(shard.oldest_put_start_ns, now);
  *response = std::move(out);
  return absl::OkStatus();
}

absl::Status MasterService::PutEnd(ClientId client, const PutEndRequest& req) {
  HS_ASSIGN_OR_RETURN(const ObjectNameRef name, CheckName(req.name));
  Shard& shard = shards_.For(name);
  MutexLock lock(&shard.mu);
  auto it = shard.objects.find(name);
  if (it == shard.objects.end()) {
    return absl::NotFoundError(absl::StrCat("object '", name.key, "' not found"));
  }
  ObjectMeta& meta = it->second;
  if (meta.version != req.version) {
    return absl::AbortedError(absl::StrCat("put of '", name.key, "' version ", req.version,
                                           " is stale (current version ", meta.version, ")"));
  }
  if (meta.put_client != client) {
    return absl::PermissionDeniedError(
        absl::StrCat("client ", client.value, " did not start this put of '", name.key, "'"));
  }
  if (!meta.put_in_progress) return absl::OkStatus();  // repeated PutEnd
  for (ReplicaRecord& r : meta.replicas) {
    r.status = ReplicaStatus::kComplete;
    JournalReplica(name, meta.version, r);
  }
  meta.put_in_progress = false;
  // Not a lease (already expired), but it orders unread objects by age for
  // eviction.
  meta.lease_expiry_ns = Now();
  counters_.puts_completed.fetch_add(1, std::memory_order_relaxed);
  return absl::OkStatus();
}

absl::Status MasterService::PutRevoke(ClientId client, const PutRevokeRequest& req) {
  HS_ASSIGN_OR_RETURN(const ObjectNameRef name, CheckName(req.name));
  Removals removals;
  {
    Shard& shard = shards_.For(name);
    MutexLock lock(&shard.mu);
    auto it = shard.objects.find(name);
    if (it == shard.objects.end()) {
      return absl::NotFoundError(absl::StrCat("object '", name.key, "' not found"));
    }
    const ObjectMeta& meta = it->second;
    if (meta.version != req.version) {
      return absl::AbortedError(absl::StrCat("put of '", name.key, "' version ", req.version,
                                             " is stale (current version ", meta.version, ")"));
    }
    if (meta.put_client != client) {
      return absl::PermissionDeniedError(
          absl::StrCat("client ", client.value, " did not start this put of '", name.key, "'"));
    }
    if (!meta.put_in_progress) {
      return absl::FailedPreconditionError(
          absl::StrCat("put of '", name.key, "' already ended; use Remove"));
    }
    DeleteObjectLocked(shard, name, RemovalCause::kPutRevoked, removals);
    counters_.puts_revoked.fetch_add(1, std::memory_order_relaxed);
  }
  Notify(removals);
  return absl::OkStatus();
}

absl::Status MasterService::CheckBatchSize(size_t keys) const {
  if (static_cast<int64_t>(keys) > knobs_.batch_keys_max) {
    return absl::InvalidArgumentError(absl::StrCat("a batch of ", keys,
                                                   " keys is above the master's batch_keys_max=",
                                                   knobs_.batch_keys_max));
  }
  return absl::OkStatus();
}

absl::StatusOr<BatchPutStartResponse> MasterService::BatchPutStart(
    ClientId client, const BatchPutStartRequest& req) {
  HS_RETURN_IF_ERROR(CheckBatchSize(req.names.size()));
  if (req.sizes_bytes.size() != req.names.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(req.names.size(), " names but ", req.sizes_bytes.size(), " sizes"));
  }
  BatchPutStartResponse response;
  response.results.reserve(req.names.size());
  PutStartRequest one;
  one.replica_num = req.replica_num;
  one.preferred_segments = req.preferred_segments;
  for (size_t i = 0; i < req.names.size(); ++i) {
    one.name = req.names[i];
    one.size_bytes = req.sizes_bytes[i];
    response.results.push_back(PutStart(client, one));
  }
  return response;
}

namespace {

// `call` on every put in order, one status each (BatchPutEnd, BatchPutRevoke).
template <typename Request, typename Call>
BatchPutResponse EveryPut(const std::vector<Request>& puts, Call call) {
  BatchPutResponse response;
  response.results.reserve(puts.size());
  for (const Request& put : puts) response.results.push_back(call(put));
  return response;
}

}  // namespace

absl::StatusOr<BatchPutResponse> MasterService::BatchPutEnd(ClientId client,
                                                            const BatchPutEndRequest& req) {
  HS_RETURN_IF_ERROR(CheckBatchSize(req.puts.size()));
  return EveryPut(req.puts, [&](const PutEndRequest& put) { return PutEnd(client, put); });
}

absl::StatusOr<BatchPutResponse> MasterService::BatchPutRevoke(ClientId client,
                                                               const BatchPutRevokeRequest& req) {
  HS_RETURN_IF_ERROR(CheckBatchSize(req.puts.size()));
  return EveryPut(req.puts, [&](const PutRevokeRequest& put) { return PutRevoke(client, put); });
}

// ---------------------------------------------------------------------------
// Reads and Remove
// ---------------------------------------------------------------------------

absl::StatusOr<GetReplicaListResponse> MasterService::GetReplicaList(
    const GetReplicaListRequest& req) {
  HS_ASSIGN_OR_RETURN(const ObjectNameRef name, CheckName(req.name));
  const TimeNs now = Now();
  GetReplicaListResponse response;
  {
    // One hash of the name picks the shard and probes its map.
    const size_t hash = master_internal::ObjectNameHash()(name);
    Shard& shard = shards_.ForHash(hash);
    MutexLock lock(&shard.mu);
    auto it = shard.objects.find(name, hash);
    if (it == shard.objects.end()) {
      if (Recovering()) {
        return absl::UnavailableError(absl::StrCat(
            "master_recovering: object '", name.key,
            "' is not known yet; the stores are still reporting their manifests; retry"));
      }
      return absl::NotFoundError(absl::StrCat("object '", name.key, "' not found"));
    }
    ObjectMeta& meta = it->second;
    if (meta.put_in_progress) {
      return absl::UnavailableError(absl::StrCat("object '", name.key, "' is still being put"));
    }
    response.replicas.reserve(meta.replicas.size());
    for (const ReplicaRecord& r : meta.replicas) {
      if (r.status != ReplicaStatus::kComplete) continue;
      response.replicas.push_back(r.Describe(meta.version));
      r.segment->replica_lists_served_total.fetch_add(1, std::memory_order_relaxed);
    }
    meta.lease_expiry_ns = std::max(meta.lease_expiry_ns, now + knobs_.default_kv_lease_ttl_ns());
    response.version = meta.version;
    response.size_bytes = meta.size;
    response.lease_expiry_ns = meta.lease_expiry_ns;
  }
  // Once per key read, after the lock: the heat window hangs here.
  if (ReadObserver* observer = read_observer_.load(std::memory_order_acquire);
      observer != nullptr) {
    ReadObservation read;
    read.t_ns = now;
    read.tenant = name.tenant;
    read.key = name.key;
    read.requester = req.requester;
    read.requester_domain =
        req.requester_domain.empty() ? kDefaultDomain : absl::string_view(req.requester_domain);
    read.version = response.version;
    read.size_bytes = response.size_bytes;
    read.readable_replicas = response.replicas;
    observer->OnKeyRead(read);
  }
  return response;
}

absl::StatusOr<BatchGetReplicaListResponse> MasterService::BatchGetReplicaList(
    const BatchGetReplicaListRequest& req) {
  HS_RETURN_IF_ERROR(CheckBatchSize(req.names.size()));
  BatchGetReplicaListResponse response;
  response.results.reserve(req.names.size());
  GetReplicaListRequest one;
  one.requester = req.requester;
  one.requester_domain = req.requester_domain;
  for (const ObjectName& name : req.names) {
    one.name = name;
    response.results.push_back(GetReplicaList(one));
  }
  return response;
}

absl::Status MasterService::Remove(const RemoveRequest& req) {
  HS_ASSIGN_OR_RETURN(const ObjectNameRef name, CheckName(req.name));
  Removals removals;
  {
    Shard& shard = shards_.For(name);
    MutexLock lock(&shard.mu);
    auto it = shard.objects.find(name);
    if (it == shard.objects.end()) {
      if (Recovering()) {
        return absl::UnavailableError(absl::StrCat(
            "master_recovering: object '", name.key, "' is not known yet; retry"));
      }
      return absl::NotFoundError(absl::StrCat("object '", name.key, "' not found"));
    }
    const ObjectMeta& meta = it->second;
    if (!IsExpired(Now(), meta.lease_expiry_ns)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "object '", name.key, "' has a read lease until ", meta.lease_expiry_ns, " ns"));
    }
    if (meta.replication_task.valid()) {
      return absl::AbortedError(absl::StrCat("object '", name.key, "' has replication task ",
                                             meta.replication_task.value, " running"));
    }
    if (meta.put_in_progress) {
      return absl::UnavailableError(absl::StrCat("object '", name.key, "' is still being put"));
    }
    DeleteObjectLocked(shard, name, RemovalCause::kRemove, removals);
  }
  Notify(removals);
  return absl::OkStatus();
}

}  // namespace heatsink
