// MasterService: read-only views, statistics and CheckInvariants.
#include <algorithm>
#include <map>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "core/master/master_service.h"

namespace heatsink {

using master_internal::CopyPhase;
using master_internal::SegmentAccounting;

std::vector<SegmentView> MasterService::ListSegments() const { return segments_.List(); }

std::optional<SegmentView> MasterService::GetSegment(SegmentId id) const {
  return segments_.Get(id);
}

std::optional<SegmentLoadView> MasterService::GetSegmentLoad(SegmentId id) const {
  std::shared_ptr<master_internal::SegmentHandle> handle = segments_.FindMounted(id);
  if (handle == nullptr) return std::nullopt;
  return handle->Load();
}

absl::StatusOr<ObjectView> MasterService::GetObjectView(const ObjectName& object) const {
  HS_ASSIGN_OR_RETURN(const ObjectNameRef name, CheckName(object));
  Shard& shard = shards_.For(name);
  MutexLock lock(&shard.mu);
  auto it = shard.objects.find(name);
  if (it == shard.objects.end()) {
    return absl::NotFoundError(absl::StrCat("object '", name.key, "' not found"));
  }
  const ObjectMeta& meta = it->second;
  ObjectView view;
  view.name = it->first;
  view.version = meta.version;
  view.size_bytes = meta.size;
  view.replicas.reserve(meta.replicas.size());
  for (const ReplicaRecord& r : meta.replicas) view.replicas.push_back(r.Describe(meta.version));
  view.lease_expiry_ns = meta.lease_expiry_ns;
  view.replication_task = meta.replication_task;
  view.put_in_progress = meta.put_in_progress;
  view.put_client = meta.put_client;
  return view;
}

std::optional<Task> MasterService::GetTask(TaskId id) const {
  std::optional<TaskRecord> record = tasks_.Find(id);
  if (!record.has_value()) return std::nullopt;
  return record->task;
}

MasterStats MasterService::Stats() const {
  MasterStats s;
  s.objects = object_count_.load(std::memory_order_relaxed);
  s.segments = segments_.segment_count();
  s.clients = clients_.size();
  const master_internal::TaskCounts tasks = tasks_.Counts();
  s.tasks_pending = tasks.pending;
  s.tasks_processing = tasks.processing;
  const master_internal::CopyPacingCounts pacing = tasks_.PacingCounts();
  s.copy_bytes_in_flight = pacing.copy_bytes_in_flight;
  s.copy_fetches_deferred_total = pacing.copy_fetches_deferred_total;
  const master_internal::UsageTotals totals = segments_.Totals();
  s.capacity_bytes = totals.capacity_bytes;
  s.used_bytes = totals.used_bytes;
  s.reserved_bytes = totals.reserved_bytes;
  s.discarded_puts = segments_.discarded_put_count();
  auto load = [](const auto& a) { return a.load(std::memory_order_relaxed); };
  s.puts_completed_total = load(counters_.puts_completed);
  s.puts_revoked_total = load(counters_.puts_revoked);
  s.puts_discarded_total = load(counters_.puts_discarded);
  s.eviction_passes_total = load(counters_.eviction_passes);
  s.evicted_objects_total = load(counters_.evicted_objects);
  s.evicted_dynamic_replicas_total = load(counters_.evicted_dynamic_replicas);
  s.released_dynamic_replicas_total = load(counters_.released_dynamic_replicas);
  s.evictions_with_optional_left_total = load(counters_.evictions_with_optional_left);
  s.evicted_bytes_total = load(counters_.evicted_bytes);
  s.copy_tasks_created_total = load(counters_.copy_tasks_created);
  s.copies_completed_total = load(counters_.copies_completed);
  s.copies_revoked_total = load(counters_.copies_revoked);
  s.tasks_succeeded_total = load(counters_.tasks_succeeded);
  s.tasks_failed_total = load(counters_.tasks_failed);
  s.tasks_timed_out_total = load(counters_.tasks_timed_out);
  s.tasks_cancelled_total = load(counters_.tasks_cancelled);
  s.clients_reaped_total = load(counters_.clients_reaped);
  s.recovering = Recovering();
  s.manifest_entries_accepted_total = load(counters_.manifest_accepted);
  s.manifest_entries_discarded_total = load(counters_.manifest_discarded);
  s.manifest_entries_rejected_total = load(counters_.manifest_rejected);
  s.manifest_changes_pending = journal_.pending();
  return s;
}

namespace {

using master_internal::ObjectMeta;
using master_internal::ObjectNameRef;
using master_internal::ReplicaRecord;
using master_internal::TaskRecord;

absl::Status Violation(const std::string& what) {
  return absl::InternalError(absl::StrCat("master invariant violated: ", what));
}

// What the object table says each segment should hold.
struct Expected {
  uint64_t used = 0;
  uint64_t reserved = 0;
  int64_t replicas = 0;
  int64_t copy_tasks_as_source = 0;
  int64_t copies_as_source = 0;
  int64_t copies_as_target = 0;
};

// CheckInvariants' tables, one check per table: every object against the
// tasks and the mounted segments, every task against its object, then every
// segment's accounting against what the objects and tasks said it holds.
class InvariantChecker {
 public:
  InvariantChecker(std::vector<SegmentAccounting> accounting, std::vector<TaskRecord> all_tasks)
      : accounting_(std::move(accounting)), expected_(accounting_.size()) {
    for (TaskRecord& r : all_tasks) tasks_.emplace(r.task.id, std::move(r));
    index_of_.reserve(accounting_.size());
    for (size_t i = 0; i < accounting_.size(); ++i) index_of_.emplace(accounting_[i].id, i);
  }

  const std::map<TaskId, TaskRecord>& tasks() const { return tasks_; }

  // One object: its versions, sizes, replicas and the task it holds.
  // `oldest_put_start_ns`: its shard's bound; `version_bound`: the next
  // version the master hands out.
  absl::Status CheckObject(const ObjectName& name, const ObjectMeta& meta,
                           TimeNs oldest_put_start_ns, Version version_bound,
                           int64_t replicas_per_object_max) {
    // Messages are built only for a violation: this runs for every object.
    const auto where = [&name] { return absl::StrCat("object ", name.tenant, "/", name.key); };
    if (meta.replicas.empty()) return Violation(where() + " has no replica");
    if (meta.put_in_progress && meta.put_start_ns < oldest_put_start_ns) {
      return Violation(absl::StrCat(where(), " put started at ", meta.put_start_ns,
                                    " ns, before its shard's oldest put bound ",
                                    oldest_put_start_ns));
    }
    if (meta.version == 0 || meta.version >= version_bound) {
      return Violation(absl::StrCat(where(), " has version ", meta.version, " out of range"));
    }
    if (static_cast<int64_t>(meta.replicas.size()) > replicas_per_object_max) {
      return Violation(where() + " has more than replicas_per_object_max replicas");
    }
    absl::InlinedVector<SegmentId, 4> seen;
    for (const ReplicaRecord& r : meta.replicas) {
      HS_RETURN_IF_ERROR(CheckReplica(where, meta, r, seen));
    }
    if (meta.replication_task.valid() && !tasks_.contains(meta.replication_task)) {
      return Violation(absl::StrCat(where(), " holds missing task ", meta.replication_task.value));
    }
    return absl::OkStatus();
  }

  // One task: its object (`meta`, null when gone) holds it, its source replica is COMPLETE, its
  // segment instances are mounted and its target replica matches its phase.
  absl::Status CheckTask(TaskId id, const TaskRecord& record, const ObjectMeta* meta) {
    const ReplicaCopyPayload& p = record.task.copy;
    const std::string where = absl::StrCat("task ", id.value);
    if (meta == nullptr) return Violation(where + " outlived its object");
    if (meta->replication_task != id) return Violation(where + " does not hold its key's slot");
    if (meta->version != p.version) return Violation(where + " has a stale version");
    const ReplicaRecord* source = meta->FindReplica(p.source_replica);
    if (source == nullptr || source->status != ReplicaStatus::kComplete ||
        source->segment_id() != p.source_segment) {
      return Violation(where + " lost its COMPLETE source replica");
    }
    if (record.task.assigned_client != source->segment->location.owner) {
      return Violation(where + " is not assigned to the source segment's owner");
    }
    Expected* source_expected = Mounted(p.source_segment, record.source.get());
    Expected* target_expected = Mounted(p.target_segment, record.target.get());
    if (source_expected == nullptr || target_expected == nullptr) {
      return Violation(where + " refers to a segment instance that is no longer mounted");
    }
    source_expected->copy_tasks_as_source += 1;
    const ReplicaRecord* target =
        record.target_replica.valid() ? meta->FindReplica(record.target_replica) : nullptr;
    switch (record.phase) {
      case CopyPhase::kNotStarted:
      case CopyPhase::kRevoked:
        if (target != nullptr) return Violation(where + " has a target replica it should not");
        break;
      case CopyPhase::kStarted:
        if (target == nullptr || !target->holds_reserved()) {
          return Violation(where + " started without a PROCESSING target replica");
        }
        source_expected->copies_as_source += 1;
        target_expected->copies_as_target += 1;
        break;
      case CopyPhase::kEnded:
        if (target == nullptr || target->status != ReplicaStatus::kComplete) {
          return Violation(where + " ended without a COMPLETE target replica");
        }
        break;
    }
    return absl::OkStatus();
  }

  // Every mounted segment's accounting against what the objects and tasks
  // checked so far said it holds.
  absl::Status CheckSegments() const {
    for (size_t i = 0; i < accounting_.size(); ++i) {
      const SegmentAccounting& a = accounting_[i];
      const Expected& e = expected_[i];
      const std::string where = absl::StrCat("segment ", a.id.value);
      if (a.used_bytes + a.reserved_bytes != a.allocator_allocated_bytes) {
        return Violation(absl::StrCat(where, " used ", a.used_bytes, " + reserved ",
                                      a.reserved_bytes, " != allocated ",
                                      a.allocator_allocated_bytes));
      }
      if (a.used_bytes != e.used + a.discarded_bytes) {
        return Violation(absl::StrCat(where, " used ", a.used_bytes, " != replica bytes ", e.used,
                                      " + discarded ", a.discarded_bytes));
      }
      if (a.reserved_bytes != e.reserved) {
        return Violation(absl::StrCat(where, " reserved ", a.reserved_bytes,
                                      " != copy-target bytes ", e.reserved));
      }
      if (a.used_bytes + a.reserved_bytes > a.capacity_bytes) {
        return Violation(where + " holds more than its capacity");
      }
      if (a.replica_count != e.replicas) {
        return Violation(absl::StrCat(where, " counts ", a.replica_count, " replicas, objects say ",
                                      e.replicas));
      }
      if (a.load.copy_tasks_as_source != e.copy_tasks_as_source ||
          a.load.copies_in_flight_as_source != e.copies_as_source ||
          a.load.copies_in_flight_as_target != e.copies_as_target) {
        return Violation(where + " load counters disagree with the task table");
      }
    }
    return absl::OkStatus();
  }

 private:
  // What `id` should hold, when it is mounted as `instance`; else null. The
  // hash map is only looked up (once per replica), never iterated.
  Expected* Mounted(SegmentId id, const master_internal::SegmentHandle* instance) {
    const auto it = index_of_.find(id);
    if (it == index_of_.end() || accounting_[it->second].instance != instance) return nullptr;
    return &expected_[it->second];
  }

  // One replica of `meta`, counted into its segment's expected holdings;
  // `seen`: the segments of the object's replicas before it.
  template <typename Where>
  absl::Status CheckReplica(const Where& where, const ObjectMeta& meta, const ReplicaRecord& r,
                            absl::InlinedVector<SegmentId, 4>& seen) {
    const auto rw = [&where, &r] { return absl::StrCat(where(), " replica ", r.id.value); };
    if (r.size != meta.size) return Violation(rw() + " size differs from the object's");
    if (std::find(seen.begin(), seen.end(), r.segment_id()) != seen.end()) {
      return Violation(
          absl::StrCat(where(), " has two replicas on segment ", r.segment_id().value));
    }
    seen.push_back(r.segment_id());
    Expected* e = Mounted(r.segment_id(), r.segment.get());
    if (e == nullptr) {
      return Violation(
          absl::StrCat(rw(), " is on unknown or unmounted segment ", r.segment_id().value));
    }
    (r.holds_reserved() ? e->reserved : e->used) += r.size;
    e->replicas += 1;
    if (meta.put_in_progress &&
        (r.origin != ReplicaOrigin::kPut || r.status != ReplicaStatus::kProcessing)) {
      return Violation(rw() + " is not a PROCESSING put replica during the put");
    }
    if (!meta.put_in_progress && r.origin == ReplicaOrigin::kPut &&
        r.status != ReplicaStatus::kComplete) {
      return Violation(rw() + " is a PROCESSING put replica after PutEnd");
    }
    if (r.holds_reserved()) {
      auto t = tasks_.find(meta.replication_task);
      if (t == tasks_.end() || t->second.phase != CopyPhase::kStarted ||
          t->second.target_replica != r.id) {
        return Violation(rw() + " is a PROCESSING copy target without a started task");
      }
    }
    return absl::OkStatus();
  }

  const std::vector<SegmentAccounting> accounting_;
  std::vector<Expected> expected_;  // per mounted segment, in accounting order
  absl::flat_hash_map<SegmentId, size_t> index_of_;
  std::map<TaskId, TaskRecord> tasks_;
};

}  // namespace

absl::Status MasterService::CheckInvariants() const ABSL_NO_THREAD_SAFETY_ANALYSIS {
  // Every shard, in lock order, then the segment table and the task manager
  // (each snapshot taken under its own lock while all shards are held, so
  // nothing that changes objects can run in between).
  for (size_t i = 0; i < shards_.size(); ++i) shards_.at(i).mu.Lock();
  // The lambda is analysed on its own; it runs with every shard held.
  absl::Status status = [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS -> absl::Status {
    std::vector<SegmentAccounting> accounting = segments_.Accounting();
    HS_RETURN_IF_ERROR(tasks_.CheckQueues());
    InvariantChecker check(std::move(accounting), tasks_.All());
    int64_t objects = 0;
    const Version version_bound = next_version_.load(std::memory_order_relaxed);
    for (size_t i = 0; i < shards_.size(); ++i) {
      const Shard& shard = shards_.at(i);
      for (const auto& [name, meta] : shard.objects) {
        ++objects;
        HS_RETURN_IF_ERROR(check.CheckObject(name, meta, shard.oldest_put_start_ns, version_bound,
                                             knobs_.replicas_per_object_max));
      }
    }
    if (objects != object_count_.load(std::memory_order_relaxed)) {
      return Violation(absl::StrCat(objects, " objects but the count says ",
                                    object_count_.load(std::memory_order_relaxed)));
    }
    for (const auto& [id, record] : check.tasks()) {
      const ReplicaCopyPayload& p = record.task.copy;
      const ObjectNameRef name{p.name.tenant, p.name.key};
      const auto& objects_of_shard = shards_.For(name).objects;
      const auto it = objects_of_shard.find(name);
      HS_RETURN_IF_ERROR(
          check.CheckTask(id, record, it == objects_of_shard.end() ? nullptr : &it->second));
    }
    return check.CheckSegments();
  }();
  for (size_t i = shards_.size(); i > 0; --i) shards_.at(i - 1).mu.Unlock();
  return status;
}

}  // namespace heatsink
