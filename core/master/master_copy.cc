// MasterService: REPLICA_COPY tasks and the copy lifecycle.
//
// A task holds its key's one replication slot (ObjectMeta::replication_task)
// from creation until it finishes (MarkTaskComplete, timeout, cancel). While
// it holds the slot the object is neither evicted nor removed, so the copy
// source stays in place. Every task transition happens under the object's
// shard lock; entry points that start from a task id peek at the task to
// learn its object, lock that shard, and re-read the task.
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/base/status_macros.h"
#include "core/env/rng.h"
#include "core/master/master_service.h"

namespace heatsink {

using master_internal::Allocation;
using master_internal::CopyPhase;
using master_internal::SegmentHandle;

absl::StatusOr<CopyTaskResponse> MasterService::CreateCopyTask(const CopyTaskRequest& req) {
  return CreateCopyTaskInternal(req.name, nullptr, req.target_segment, req.source_segment);
}

absl::StatusOr<CopyTaskResponse> MasterService::CreateCopyTaskForPlan(const CopyPlan& plan) {
  if (!plan.source_replica.valid()) return absl::InvalidArgumentError("plan has no source replica");
  return CreateCopyTaskInternal(plan.name, &plan, plan.target_segment, SegmentId());
}

absl::StatusOr<CopyTaskResponse> MasterService::CreateCopyTaskInternal(const ObjectName& object,
                                                                       const CopyPlan* plan,
                                                                       SegmentId target_segment,
                                                                       SegmentId source_segment) {
  HS_ASSIGN_OR_RETURN(const ObjectNameRef name, CheckName(object));
  if (!target_segment.valid()) return absl::InvalidArgumentError("target segment 0 is invalid");
  // While recovering, an object may still be replaced by a newer version a
  // store has not reported yet: no copy of it starts before that is settled.
  if (Recovering()) {
    return absl::UnavailableError("master_recovering: no copy task until the stores reported");
  }
  Shard& shard = shards_.For(name);
  MutexLock lock(&shard.mu);
  auto it = shard.objects.find(name);
  if (it == shard.objects.end()) {
    return absl::NotFoundError(absl::StrCat("object '", name.key, "' not found"));
  }
  ObjectMeta& meta = it->second;
  if (meta.put_in_progress) {
    return absl::UnavailableError(absl::StrCat("object '", name.key, "' is still being put"));
  }
  if (plan != nullptr && plan->version != meta.version) {
    return absl::AbortedError(absl::StrCat("plan version ", plan->version, " of '", name.key,
                                           "' is stale (current ", meta.version, ")"));
  }
  if (meta.replication_task.valid()) {
    return absl::AlreadyExistsError(absl::StrCat("object '", name.key, "' already has task ",
                                                 meta.replication_task.value));
  }
  if (static_cast<int64_t>(meta.replicas.size()) >= knobs_.replicas_per_object_max) {
    return absl::ResourceExhaustedError(absl::StrCat("object '", name.key, "' has ",
                                                     "replicas_per_object_max (",
                                                     knobs_.replicas_per_object_max,
                                                     ") replicas"));
  }
  if (meta.FindOnSegment(target_segment) != nullptr) {
    return absl::AlreadyExistsError(absl::StrCat("target segment ", target_segment.value,
                                                 " already holds '", name.key, "'"));
  }

  // The source: the plan's replica, the requested segment's, or the master's
  // stable choice (hash of key and segment id, never "first in the list").
  const ReplicaRecord* source = nullptr;
  if (plan != nullptr) {
    source = meta.FindReplica(plan->source_replica);
    if (source == nullptr || source->status != ReplicaStatus::kComplete) {
      return absl::AbortedError(absl::StrCat("plan source replica ", plan->source_replica.value,
                                             " of '", name.key, "' is gone or not COMPLETE"));
    }
  } else if (source_segment.valid()) {
    source = meta.FindOnSegment(source_segment);
    if (source == nullptr || source->status != ReplicaStatus::kComplete) {
      return absl::NotFoundError(absl::StrCat("no COMPLETE replica of '", name.key,
                                              "' on segment ", source_segment.value));
    }
  } else {
    const uint64_t key_hash = StableHashCombine(StableHash(name.tenant), StableHash(name.key));
    uint64_t best = 0;
    for (const ReplicaRecord& r : meta.replicas) {
      if (r.status != ReplicaStatus::kComplete) continue;
      if (segments_.FindMounted(r.segment_id()) == nullptr) continue;
      const uint64_t score = Mix64(StableHashCombine(key_hash, r.segment_id().value));
      if (source == nullptr || score < best ||
          (score == best && r.segment_id() < source->segment_id())) {
        source = &r;
        best = score;
      }
    }
    if (source == nullptr) {
      return absl::AbortedError(
          absl::StrCat("object '", name.key, "' has no COMPLETE replica on a mounted segment"));
    }
  }
  if (segments_.FindMounted(source->segment_id()) == nullptr) {
    return absl::AbortedError(absl::StrCat("source segment ", source->segment_id().value,
                                           " is being unmounted"));
  }
  // Checked now, reserved only at CopyStart.
  HS_ASSIGN_OR_RETURN(std::shared_ptr<SegmentHandle> target,
                      segments_.CheckCopyTarget(target_segment, meta.size));

  ReplicaCopyPayload payload;
  payload.name = Own(name);
  payload.version = meta.version;
  payload.source_replica = source->id;
  payload.source_segment = source->segment_id();
  payload.source_offset = source->offset;
  payload.target_segment = target_segment;
  payload.size_bytes = meta.size;
  payload.lease_id = plan != nullptr ? plan->lease_id : LeaseId();
  const ClientId owner = source->segment->location.owner;
  HS_ASSIGN_OR_RETURN(const TaskId id,
                      tasks_.Submit(owner, payload, source->segment, std::move(target), Now()));
  meta.replication_task = id;
  source->segment->copy_tasks_as_source.fetch_add(1, std::memory_order_relaxed);
  counters_.copy_tasks_created.fetch_add(1, std::memory_order_relaxed);
  return CopyTaskResponse{id, owner, std::move(payload)};
}

absl::StatusOr<FetchTasksResponse> MasterService::FetchTasks(ClientId client, size_t batch_max) {
  return FetchTasks(client, batch_max, 0);
}

absl::StatusOr<FetchTasksResponse> MasterService::FetchTasks(ClientId client, size_t batch_max,
                                                             uint64_t manifest_ack_seq) {
  if (!client.valid()) return absl::InvalidArgumentError("client id 0 is invalid");
  if (batch_max == 0) return absl::InvalidArgumentError("batch_max is 0");
  if (static_cast<int64_t>(batch_max) > knobs_.fetch_tasks_batch_max) {
    return absl::ResourceExhaustedError(absl::StrCat("batch_max ", batch_max,
                                                     " exceeds fetch_tasks_batch_max (",
                                                     knobs_.fetch_tasks_batch_max, ")"));
  }
  FetchTasksResponse response;
  response.tasks = tasks_.Fetch(client, batch_max, Now());
  response.manifest_changes = journal_.Fetch(
      client, manifest_ack_seq, static_cast<size_t>(knobs_.manifest_changes_per_fetch_max));
  return response;
}

void MasterService::FinishTaskLocked(const ObjectNameRef& name, ObjectMeta& meta, TaskId id,
                                     RemovalCause cause, Removals& out) {
  std::optional<TaskRecord> record = tasks_.Remove(id);
  if (!record.has_value()) return;
  if (record->phase == CopyPhase::kStarted) {
    for (size_t i = 0; i < meta.replicas.size(); ++i) {
      if (meta.replicas[i].id != record->target_replica) continue;
      HS_CHECK(meta.replicas[i].holds_reserved());
      RemoveReplicaLocked(name, meta, i, cause, out);
      break;
    }
    record->source->copies_in_flight_as_source.fetch_sub(1, std::memory_order_relaxed);
    record->target->copies_in_flight_as_target.fetch_sub(1, std::memory_order_relaxed);
    counters_.copies_revoked.fetch_add(1, std::memory_order_relaxed);
  }
  if (meta.replication_task == id) meta.replication_task = TaskId();
  record->source->copy_tasks_as_source.fetch_sub(1, std::memory_order_relaxed);
}

absl::Status MasterService::MarkTaskComplete(ClientId client, const MarkTaskCompleteRequest& req) {
  std::optional<TaskRecord> peek = PeekTask(req.task_id);
  if (!peek.has_value()) return absl::NotFoundError(absl::StrCat("task ", req.task_id.value, " not found"));
  const ObjectName object = peek->task.copy.name;
  const ObjectNameRef name{object.tenant, object.key};
  Removals removals;
  {
    Shard& shard = shards_.For(name);
    MutexLock lock(&shard.mu);
    std::optional<TaskRecord> record = tasks_.Find(req.task_id);
    if (!record.has_value()) {
      return absl::NotFoundError(absl::StrCat("task ", req.task_id.value, " not found"));
    }
    if (record->task.assigned_client != client) {
      return absl::PermissionDeniedError(absl::StrCat("client ", client.value, " does not own task ",
                                                      req.task_id.value));
    }
    if (record->task.status != TaskStatus::kProcessing) {
      return absl::FailedPreconditionError(
          absl::StrCat("task ", req.task_id.value, " was not fetched"));
    }
    if (req.succeeded && record->phase != CopyPhase::kEnded) {
      return absl::FailedPreconditionError(
          absl::StrCat("task ", req.task_id.value, " reported success before CopyEnd"));
    }
    auto it = shard.objects.find(name);
    HS_CHECK_MSG(it != shard.objects.end(), "a task outlived its object");
    FinishTaskLocked(name, it->second, req.task_id, RemovalCause::kCopyRevoked, removals);
    (req.succeeded ? counters_.tasks_succeeded : counters_.tasks_failed)
        .fetch_add(1, std::memory_order_relaxed);
  }
  Notify(removals);
  return absl::OkStatus();
}

absl::Status MasterService::CancelCopyTask(TaskId task, RemovalCause cause) {
  std::optional<TaskRecord> peek = PeekTask(task);
  if (!peek.has_value()) return absl::NotFoundError(absl::StrCat("task ", task.value, " not found"));
  const ObjectName object = peek->task.copy.name;
  const ObjectNameRef name{object.tenant, object.key};
  Removals removals;
  {
    Shard& shard = shards_.For(name);
    MutexLock lock(&shard.mu);
    if (!tasks_.Find(task).has_value()) {
      return absl::NotFoundError(absl::StrCat("task ", task.value, " not found"));
    }
    auto it = shard.objects.find(name);
    HS_CHECK_MSG(it != shard.objects.end(), "a task outlived its object");
    FinishTaskLocked(name, it->second, task, cause, removals);
    counters_.tasks_cancelled.fetch_add(1, std::memory_order_relaxed);
  }
  Notify(removals);
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Copy lifecycle
// ---------------------------------------------------------------------------

absl::StatusOr<master_internal::TaskRecord> MasterService::CheckCopyCall(
    ClientId client, const CopyTaskFence& fence, CopyKind kind) const {
  std::optional<TaskRecord> record = tasks_.Find(fence.task_id);
  if (!record.has_value()) {
    return absl::NotFoundError(absl::StrCat("task ", fence.task_id.value, " not found"));
  }
  const Task& task = record->task;
  if (task.assigned_client != client) {
    return absl::PermissionDeniedError(absl::StrCat(
        "client ", client.value, " is not the source client (", task.assigned_client.value, ") of task ",
        fence.task_id.value));
  }
  if (kind == CopyKind::kOrdinary && task.copy.leased()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "task ", fence.task_id.value, " carries lease ", task.copy.lease_id.value,
        "; use the dynamic copy calls"));
  }
  if (kind == CopyKind::kLeased && !task.copy.leased()) {
    return absl::FailedPreconditionError(
        absl::StrCat("task ", fence.task_id.value, " carries no lease; use the ordinary copy calls"));
  }
  if (fence.version != task.copy.version || fence.lease_id != task.copy.lease_id) {
    return absl::AbortedError(absl::StrCat(
        "stale fence for task ", fence.task_id.value, ": version ", fence.version, " lease ",
        fence.lease_id.value, ", task has version ", task.copy.version, " lease ", task.copy.lease_id.value));
  }
  if (task.status != TaskStatus::kProcessing) {
    return absl::FailedPreconditionError(absl::StrCat("task ", fence.task_id.value, " was not fetched"));
  }
  return *std::move(record);
}

absl::StatusOr<CopyStartResponse> MasterService::CopyStartInternal(ClientId client,
                                                                   const CopyTaskFence& fence,
                                                                   CopyKind kind) {
  std::optional<TaskRecord> peek = PeekTask(fence.task_id);
  if (!peek.has_value()) {
    return absl::NotFoundError(absl::StrCat("task ", fence.task_id.value, " not found"));
  }
  const ObjectName object = peek->task.copy.name;
  const ObjectNameRef name{object.tenant, object.key};
  // Ordinary copies: two attempts, the second after one synchronous eviction
  // pass when the target had no room.
  for (int attempt = 0;; ++attempt) {
    absl::Status reserve_failure;
    {
      Shard& shard = shards_.For(name);
      MutexLock lock(&shard.mu);
      HS_ASSIGN_OR_RETURN(TaskRecord record, CheckCopyCall(client, fence, kind));
      if (record.phase != CopyPhase::kNotStarted) {
        return absl::FailedPreconditionError(
            absl::StrCat("copy of task ", fence.task_id.value, " already started"));
      }
      auto it = shard.objects.find(name);
      HS_CHECK_MSG(it != shard.objects.end(), "a task outlived its object");
      ObjectMeta& meta = it->second;
      const ReplicaCopyPayload& p = record.task.copy;
      const ReplicaRecord* source = meta.FindReplica(p.source_replica);
      HS_CHECK_MSG(source != nullptr && source->status == ReplicaStatus::kComplete,
                   "a task's source replica vanished while the task lived");
      if (static_cast<int64_t>(meta.replicas.size()) >= knobs_.replicas_per_object_max) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "object '", name.key, "' has replicas_per_object_max (",
            knobs_.replicas_per_object_max, ") replicas"));
      }
      if (meta.FindOnSegment(p.target_segment) != nullptr) {
        return absl::AlreadyExistsError(absl::StrCat("target segment ", p.target_segment.value,
                                                     " already holds '", name.key, "'"));
      }
      absl::StatusOr<Allocation> reserved = segments_.ReserveCopyTarget(p.target_segment,
                                                                        p.size_bytes);
      if (reserved.ok() && reserved->segment != record.target) {
        // Unreachable while unmount cancels the tasks of the instances it
        // drops; kept so a remounted id can never receive a stale copy.
        segments_.FreeReserved(p.target_segment, reserved->offset, reserved->size);
        return absl::AbortedError(absl::StrCat("target segment ", p.target_segment.value,
                                               " was remounted since the task was created"));
      }
      if (reserved.ok()) {
        ReplicaRecord r;
        r.id = NextReplicaId();
        r.segment = reserved->segment;
        r.offset = reserved->offset;
        r.size = reserved->size;
        r.status = ReplicaStatus::kProcessing;
        r.origin = ReplicaOrigin::kCopy;
        r.dynamic = p.leased();
        r.lease_id = p.lease_id;
        CopyStartResponse response;
        response.target_replica = r.id;
        response.range = CopyRange(p.source_segment, source->offset, p.target_segment, r.offset,
                                   p.size_bytes, object);
        HS_CHECK(tasks_.MarkStarted(fence.task_id, r.id, Now()));
        record.source->copies_in_flight_as_source.fetch_add(1, std::memory_order_relaxed);
        reserved->segment->copies_in_flight_as_target.fetch_add(1, std::memory_order_relaxed);
        JournalReplica(name, meta.version, r);
        meta.replicas.push_back(std::move(r));
        return response;
      }
      reserve_failure = reserved.status();
    }
    // A leased (dynamic) copy is optional: it never evicts anything to make
    // room (DESIGN 12); its caller clears the pending state instead.
    if (attempt > 0 || kind == CopyKind::kLeased || !absl::IsResourceExhausted(reserve_failure)) {
      return reserve_failure;
    }
    Evict(peek->task.copy.size_bytes);
  }
}

absl::Status MasterService::CopyEndInternal(ClientId client, const CopyTaskFence& fence,
                                            CopyKind kind) {
  std::optional<TaskRecord> peek = PeekTask(fence.task_id);
  if (!peek.has_value()) {
    return absl::NotFoundError(absl::StrCat("task ", fence.task_id.value, " not found"));
  }
  const ObjectName object = peek->task.copy.name;
  const ObjectNameRef name{object.tenant, object.key};
  Shard& shard = shards_.For(name);
  MutexLock lock(&shard.mu);
  HS_ASSIGN_OR_RETURN(TaskRecord record, CheckCopyCall(client, fence, kind));
  if (record.phase != CopyPhase::kStarted) {
    return absl::FailedPreconditionError(
        absl::StrCat("copy of task ", fence.task_id.value, " is not in progress"));
  }
  auto it = shard.objects.find(name);
  HS_CHECK_MSG(it != shard.objects.end(), "a task outlived its object");
  ReplicaRecord* target = it->second.FindReplica(record.target_replica);
  HS_CHECK_MSG(target != nullptr && target->holds_reserved(),
               "a started copy lost its target replica");
  target->status = ReplicaStatus::kComplete;
  JournalReplica(name, it->second.version, *target);
  segments_.CommitReserved(target->segment_id(), target->size);
  HS_CHECK(tasks_.SetPhase(fence.task_id, CopyPhase::kStarted, CopyPhase::kEnded, Now()));
  record.source->copies_in_flight_as_source.fetch_sub(1, std::memory_order_relaxed);
  record.target->copies_in_flight_as_target.fetch_sub(1, std::memory_order_relaxed);
  counters_.copies_completed.fetch_add(1, std::memory_order_relaxed);
  return absl::OkStatus();
}

absl::Status MasterService::CopyRevokeInternal(ClientId client, const CopyTaskFence& fence,
                                               CopyKind kind) {
  std::optional<TaskRecord> peek = PeekTask(fence.task_id);
  if (!peek.has_value()) {
    return absl::NotFoundError(absl::StrCat("task ", fence.task_id.value, " not found"));
  }
  const ObjectName object = peek->task.copy.name;
  const ObjectNameRef name{object.tenant, object.key};
  Removals removals;
  {
    Shard& shard = shards_.For(name);
    MutexLock lock(&shard.mu);
    HS_ASSIGN_OR_RETURN(TaskRecord record, CheckCopyCall(client, fence, kind));
    if (record.phase != CopyPhase::kStarted) {
      return absl::FailedPreconditionError(
          absl::StrCat("copy of task ", fence.task_id.value, " is not in progress"));
    }
    auto it = shard.objects.find(name);
    HS_CHECK_MSG(it != shard.objects.end(), "a task outlived its object");
    ObjectMeta& meta = it->second;
    bool removed = false;
    for (size_t i = 0; i < meta.replicas.size(); ++i) {
      if (meta.replicas[i].id != record.target_replica) continue;
      RemoveReplicaLocked(name, meta, i, RemovalCause::kCopyRevoked, removals);
      removed = true;
      break;
    }
    HS_CHECK_MSG(removed, "a started copy lost its target replica");
    HS_CHECK(tasks_.SetPhase(fence.task_id, CopyPhase::kStarted, CopyPhase::kRevoked, Now()));
    record.source->copies_in_flight_as_source.fetch_sub(1, std::memory_order_relaxed);
    record.target->copies_in_flight_as_target.fetch_sub(1, std::memory_order_relaxed);
    counters_.copies_revoked.fetch_add(1, std::memory_order_relaxed);
  }
  Notify(removals);
  return absl::OkStatus();
}

absl::StatusOr<CopyStartResponse> MasterService::CopyStart(ClientId client,
                                                           const CopyStartRequest& req) {
  return CopyStartInternal(client, req, CopyKind::kOrdinary);
}
absl::Status MasterService::CopyEnd(ClientId client, const CopyEndRequest& req) {
  return CopyEndInternal(client, req, CopyKind::kOrdinary);
}
absl::Status MasterService::CopyRevoke(ClientId client, const CopyRevokeRequest& req) {
  return CopyRevokeInternal(client, req, CopyKind::kOrdinary);
}
absl::StatusOr<CopyStartResponse> MasterService::LeasedCopyStart(ClientId client,
                                                                 const CopyStartRequest& req) {
  return CopyStartInternal(client, req, CopyKind::kLeased);
}
absl::Status MasterService::LeasedCopyEnd(ClientId client, const CopyEndRequest& req) {
  return CopyEndInternal(client, req, CopyKind::kLeased);
}
absl::Status MasterService::LeasedCopyRevoke(ClientId client, const CopyRevokeRequest& req) {
  return CopyRevokeInternal(client, req, CopyKind::kLeased);
}

}  // namespace heatsink
