// MasterService: eviction, unmounting, and the periodic sweep that reaps dead
// clients, stuck puts and timed-out tasks.
//
// Each of these walks the shards one at a time (ascending index), collects
// candidates from the shard's hash map, and sorts them by explicit keys before
// acting, so hash order never reaches a decision or an observer.
#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/master/master_service.h"

namespace heatsink {

using master_internal::SegmentHandle;

// ---------------------------------------------------------------------------
// Eviction
// ---------------------------------------------------------------------------

namespace {

// Whole objects only; never leased, never while a put or a replication task
// (which includes any copy reading from it) is in progress.
bool Evictable(const master_internal::ObjectMeta& meta, TimeNs now) {
  return !meta.put_in_progress && !meta.replication_task.valid() &&
         IsExpired(now, meta.lease_expiry_ns);
}

}  // namespace

uint64_t MasterService::Evict(uint64_t min_bytes) {
  counters_.eviction_passes.fetch_add(1, std::memory_order_relaxed);
  const master_internal::UsageTotals totals = segments_.Totals();
  const uint64_t ratio_bytes = static_cast<uint64_t>(
      knobs_.eviction_ratio * static_cast<double>(totals.used_bytes));
  const uint64_t target = std::max<uint64_t>({min_bytes, ratio_bytes, 1});
  const TimeNs now = Now();

  // Near-LRU: the oldest lease expiry first (PutEnd time for never-read
  // objects); ties by name.
  struct Candidate {
    TimeNs lease_expiry_ns;
    ObjectName name;
    Version version;
    size_t shard;
  };
  std::vector<Candidate> candidates;
  for (size_t i = 0; i < shards_.size(); ++i) {
    Shard& shard = shards_.at(i);
    MutexLock lock(&shard.mu);
    for (const auto& [name, meta] : shard.objects) {
      if (Evictable(meta, now)) candidates.push_back({meta.lease_expiry_ns, name, meta.version, i});
    }
  }
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return std::tie(a.lease_expiry_ns, a.name) < std::tie(b.lease_expiry_ns, b.name);
  });

  uint64_t freed = 0;
  Removals removals;
  for (const Candidate& c : candidates) {
    if (freed >= target) break;
    Shard& shard = shards_.at(c.shard);
    MutexLock lock(&shard.mu);
    const ObjectNameRef name{c.name.tenant, c.name.key};
    auto it = shard.objects.find(name);
    // Re-checked: the object may have been read, removed or re-put since.
    if (it == shard.objects.end() || it->second.version != c.version ||
        !Evictable(it->second, now)) {
      continue;
    }
    const uint64_t bytes = it->second.HeldBytes();
    DeleteObjectLocked(shard, name, RemovalCause::kEviction, removals);
    freed += bytes;
    counters_.evicted_objects.fetch_add(1, std::memory_order_relaxed);
  }
  counters_.evicted_bytes.fetch_add(freed, std::memory_order_relaxed);
  Notify(removals);
  return freed;
}

void MasterService::MaybeScheduleEviction() {
  if (!segments_.AboveRatio(knobs_.eviction_high_watermark_ratio)) return;
  MutexLock lock(&timer_mu_);
  if (stopping_ || eviction_timer_ != kNoTimer) return;
  // A posted pass, not inline: the put that crossed the watermark returns
  // first, and concurrent puts share one pass.
  eviction_timer_ = env_->executor->PostAfter(0, [this]() {
    {
      MutexLock timer_lock(&timer_mu_);
      eviction_timer_ = kNoTimer;
    }
    if (segments_.AboveRatio(knobs_.eviction_high_watermark_ratio)) Evict();
  });
}

// ---------------------------------------------------------------------------
// Unmount
// ---------------------------------------------------------------------------

void MasterService::UnmountInternal(const std::shared_ptr<SegmentHandle>& segment,
                                    RemovalCause cause) {
  // Replicas and tasks are matched by segment instance, not id: once this
  // instance is gone the id may be mounted again.
  const master_internal::SegmentHandle* const instance = segment.get();
  // The segment already takes no new allocations or copy tasks
  // (BeginUnmount), and anything placed on it before that is visible under
  // its shard's lock, so one collection pass finds every affected object.
  // Objects are then handled in name order across all shards, so observers
  // see the same sequence in every process.
  std::vector<ObjectName> names;
  for (size_t i = 0; i < shards_.size(); ++i) {
    Shard& shard = shards_.at(i);
    MutexLock lock(&shard.mu);
    for (const auto& [name, meta] : shard.objects) {
      bool uses = false;
      for (const ReplicaRecord& r : meta.replicas) uses |= r.segment.get() == instance;
      if (!uses && meta.replication_task.valid()) {
        std::optional<TaskRecord> t = tasks_.Find(meta.replication_task);
        uses = t.has_value() && t->target.get() == instance;
      }
      if (uses) names.push_back(name);
    }
  }
  std::sort(names.begin(), names.end());
  for (const ObjectName& owned : names) {
    const ObjectNameRef name{owned.tenant, owned.key};
    Removals removals;
    {
      Shard& shard = shards_.For(name);
      MutexLock lock(&shard.mu);
      auto it = shard.objects.find(name);
      if (it == shard.objects.end()) continue;  // removed meanwhile
      ObjectMeta& meta = it->second;
      // A copy reading from or writing to this segment cannot finish.
      if (meta.replication_task.valid()) {
        std::optional<TaskRecord> t = tasks_.Find(meta.replication_task);
        HS_CHECK(t.has_value());
        if (t->source.get() == instance || t->target.get() == instance) {
          FinishTaskLocked(name, meta, meta.replication_task, RemovalCause::kCopyCancelled,
                           removals);
          counters_.tasks_cancelled.fetch_add(1, std::memory_order_relaxed);
        }
      }
      for (size_t r = 0; r < meta.replicas.size(); ++r) {
        if (meta.replicas[r].segment.get() != instance) continue;
        RemoveReplicaLocked(name, meta, r, cause, removals);
        break;
      }
      if (meta.replicas.empty()) {
        HS_CHECK(!meta.replication_task.valid());
        shard.objects.erase(it);
        object_count_.fetch_sub(1, std::memory_order_relaxed);
      }
    }
    Notify(removals);
  }
  segments_.FinishUnmount(segment);
}

// ---------------------------------------------------------------------------
// Sweep
// ---------------------------------------------------------------------------

void MasterService::ReapDeadClients(TimeNs now) {
  const std::vector<ClientId> dead = clients_.ReapDead(now);
  counters_.clients_reaped.fetch_add(static_cast<int64_t>(dead.size()), std::memory_order_relaxed);
  // Every segment whose owner is not live goes, including segments of clients
  // reaped earlier whose mount raced with the reaping.
  for (const auto& [segment, owner] : segments_.Owners()) {
    if (clients_.IsLive(owner, now)) continue;
    absl::StatusOr<std::shared_ptr<SegmentHandle>> handle =
        segments_.BeginUnmount(ClientId(), segment);
    HS_CHECK_OK(handle.status());  // the master's own authority is never denied
    if (*handle != nullptr) UnmountInternal(*handle, RemovalCause::kClientDead);
  }
}

void MasterService::ReapTimedOutTasks(TimeNs now) {
  for (const TaskId id : tasks_.TimedOut(now)) {
    std::optional<TaskRecord> peek = tasks_.Find(id);
    if (!peek.has_value()) continue;
    const ObjectName object = peek->task.copy.name;
    const ObjectNameRef name{object.tenant, object.key};
    Removals removals;
    {
      Shard& shard = shards_.For(name);
      MutexLock lock(&shard.mu);
      std::optional<TaskRecord> record = tasks_.Find(id);
      // Re-checked under the lock: it may have finished, or been fetched
      // (which restarts its clock) since.
      if (!record.has_value() || !tasks_.IsTimedOut(*record, now)) continue;
      auto it = shard.objects.find(name);
      HS_CHECK_MSG(it != shard.objects.end(), "a task outlived its object");
      FinishTaskLocked(name, it->second, id, RemovalCause::kCopyTimedOut, removals);
      counters_.tasks_timed_out.fetch_add(1, std::memory_order_relaxed);
    }
    Notify(removals);
  }
}

void MasterService::ReapStuckPuts(TimeNs now) {
  // Collected from every shard, then discarded oldest put first (ties by
  // name), so which puts fit in the discarded table never depends on hashing.
  struct Stuck {
    TimeNs put_start_ns;
    ObjectName name;
    Version version;
  };
  std::vector<Stuck> stuck;
  const DurationNs timeout = knobs_.put_start_discard_timeout_ns();
  for (size_t i = 0; i < shards_.size(); ++i) {
    Shard& shard = shards_.at(i);
    MutexLock lock(&shard.mu);
    // No put of this shard started early enough to be stuck: skip the scan.
    if (shard.oldest_put_start_ns == Shard::kNoPutInProgress ||
        !IsExpired(now, shard.oldest_put_start_ns + timeout)) {
      continue;
    }
    TimeNs oldest = Shard::kNoPutInProgress;
    const size_t first_stuck = stuck.size();
    for (const auto& [name, meta] : shard.objects) {
      if (!meta.put_in_progress) continue;
      if (IsExpired(now, meta.put_start_ns + timeout)) {
        stuck.push_back({meta.put_start_ns, name, meta.version});
      } else {
        oldest = std::min(oldest, meta.put_start_ns);
      }
    }
    // The stuck ones are discarded below, or (discarded table full) kept
    // for a later sweep: they stay in the bound until a scan finds them gone.
    for (size_t k = first_stuck; k < stuck.size(); ++k) {
      oldest = std::min(oldest, stuck[k].put_start_ns);
    }
    shard.oldest_put_start_ns = oldest;
  }
  std::sort(stuck.begin(), stuck.end(), [](const Stuck& a, const Stuck& b) {
    return std::tie(a.put_start_ns, a.name) < std::tie(b.put_start_ns, b.name);
  });
  for (const Stuck& s : stuck) {
    const ObjectNameRef name{s.name.tenant, s.name.key};
    Removals removals;
    bool table_full = false;
    {
      Shard& shard = shards_.For(name);
      MutexLock lock(&shard.mu);
      auto it = shard.objects.find(name);
      if (it == shard.objects.end() || it->second.version != s.version ||
          !it->second.put_in_progress) {
        continue;  // ended, revoked or replaced meanwhile
      }
      // False: the discarded table is full; later sweeps retry.
      table_full = !DiscardPutLocked(shard, name, removals);
    }
    Notify(removals);
    if (table_full) break;
  }
  segments_.ReleaseDiscarded(now);
}

void MasterService::Sweep() {
  const TimeNs now = Now();
  ReapDeadClients(now);
  ReapTimedOutTasks(now);
  ReapStuckPuts(now);
  if (segments_.AboveRatio(knobs_.eviction_high_watermark_ratio)) Evict();
}

void MasterService::ScheduleSweep() {
  MutexLock lock(&timer_mu_);
  if (stopping_) return;
  sweep_timer_ = env_->executor->PostAfter(knobs_.sweep_interval_ns(), [this]() {
    Sweep();
    ScheduleSweep();
  });
}

}  // namespace heatsink
