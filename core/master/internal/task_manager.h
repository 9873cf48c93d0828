// File: core/master/internal/task_manager.h
//
// Per-client task queues (Mooncake's ClientTaskManager): a FIFO of pending
// tasks and a set of processing (fetched) tasks per client, each bounded, plus
// a bounded table of all tasks. Tasks are ordered by id (issued in creation
// order), so fetch order and timeout order never depend on hashing.
//
// Copy pacing: Fetch hands a pending task out only while its object's bytes
// fit copy_budget_per_source_bytes (per source host) and
// copy_budget_per_trunk_bytes (per ordered pair of different domains), or
// when nothing is in flight on the budget it would exceed (an object larger
// than a budget goes alone). A task's bytes count from its fetch until its
// copy ends or is revoked (SetPhase) or the task is removed (Remove), exactly
// once. Tasks that do not fit stay pending in their place; within one
// client's queue a deferred task also holds back the later tasks of its
// source and trunk, so a large object is not overtaken forever by smaller
// ones of the same store. A fetch that holds a task back restarts its
// pending timeout (its client is alive and asking), so a held-back task
// expires only when its client stops fetching. The budgets are looked up by
// key (ordered maps), never iterated on the way to a decision.
//
// The task manager knows nothing about objects; MasterService keeps the
// per-key "one replication task" rule and the copy lifecycle, and calls in
// here with the object's shard lock held (shard before task manager; the task
// manager never nests with the segment table or client registry).
//
// Thread safety: every method locks the manager's own mutex.
#ifndef HEATSINK_CORE_MASTER_INTERNAL_TASK_MANAGER_H_
#define HEATSINK_CORE_MASTER_INTERNAL_TASK_MANAGER_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_map.h"
#include "absl/container/btree_set.h"
#include "absl/status/statusor.h"
#include "core/base/mutex.h"
#include "core/env/time.h"
#include "core/master/internal/segment_table.h"
#include "core/master/master_knobs.h"
#include "core/master/master_types.h"

namespace heatsink::master_internal {

// Where a REPLICA_COPY task's copy stands.
enum class CopyPhase {
  kNotStarted,  // no CopyStart yet
  kStarted,     // target reserved, target replica PROCESSING
  kEnded,       // CopyEnd: target replica COMPLETE
  kRevoked,     // CopyRevoke: target replica and reservation gone
};

struct TaskRecord {
  Task task;
  CopyPhase phase = CopyPhase::kNotStarted;
  ReplicaId target_replica;  // set by CopyStart
  TimeNs fetched_ns = 0;     // when FetchTasks handed it out
  // The segment instances the task was created for (a segment unmounted and
  // mounted again under the same id is a different instance).
  std::shared_ptr<SegmentHandle> source;
  std::shared_ptr<SegmentHandle> target;
  // The task's bytes count against the copy budgets (fetched; copy neither
  // ended nor revoked).
  bool holds_copy_budget = false;
  // The last fetch that held the task back for the copy budgets (0: none).
  // That fetch proves its client alive, so the pending timeout counts from
  // it rather than from the task's creation.
  TimeNs held_back_ns = 0;
};

struct TaskCounts {
  int64_t pending = 0;
  int64_t processing = 0;
};

struct CopyPacingCounts {
  int64_t copy_bytes_in_flight = 0;  // all sources together
  // Pending tasks a Fetch passed over because of the budgets (a task
  // passed over by several fetches counts each time).
  int64_t copy_fetches_deferred_total = 0;
};

class TaskManager {
 public:
  explicit TaskManager(const MasterKnobs& knobs);
  TaskManager(const TaskManager&) = delete;
  TaskManager& operator=(const TaskManager&) = delete;

  // Task ids start at `first` (MasterService::SetIdEpoch).
  // REQUIRES: no task submitted yet (HS_CHECK), first > 0.
  void SetFirstId(uint64_t first);

  // Queues a task for `client`. RESOURCE_EXHAUSTED at tasks_max or
  // pending_tasks_per_client_max. Ids increase in submission order.
  [[nodiscard]] absl::StatusOr<TaskId> Submit(ClientId client, const ReplicaCopyPayload& payload,
                                              std::shared_ptr<SegmentHandle> source,
                                              std::shared_ptr<SegmentHandle> target, TimeNs now);

  // Moves up to `max` pending tasks of `client` (oldest first) to processing,
  // never beyond processing_tasks_per_client_max, and returns them. Tasks
  // the copy budgets hold back stay pending, in order (see the file comment).
  std::vector<Task> Fetch(ClientId client, size_t max, TimeNs now);

  std::optional<TaskRecord> Find(TaskId id) const;

  // Copy phase transitions; false (no change) when the task is gone or not in
  // `from`. Moving to kEnded or kRevoked releases the task's copy budget.
  bool MarkStarted(TaskId id, ReplicaId target_replica, TimeNs now);
  bool SetPhase(TaskId id, CopyPhase from, CopyPhase to, TimeNs now);

  // Removes the task from every queue, releasing its copy budget if it still
  // holds it, and returns it.
  std::optional<TaskRecord> Remove(TaskId id);

  // Pending tasks waited pending_task_timeout (since their creation or the
  // last fetch that held them back for the copy budgets); processing tasks
  // ran processing_task_timeout. Ascending id.
  std::vector<TaskId> TimedOut(TimeNs now) const;
  bool IsTimedOut(const TaskRecord& record, TimeNs now) const;

  TaskCounts Counts() const;
  CopyPacingCounts PacingCounts() const;
  TaskCounts CountsFor(ClientId client) const;
  // Every task, ascending id (for invariant checks and views).
  std::vector<TaskRecord> All() const;
  // OK, or INTERNAL describing the first queue/table inconsistency
  // (including copy budget totals that differ from the tasks holding them).
  [[nodiscard]] absl::Status CheckQueues() const;

 private:
  struct ClientQueues {
    std::deque<TaskId> pending;
    absl::btree_set<TaskId> processing;
  };

  // What a copy budget counts against: a source (host, or segment id when
  // the host is empty) and a trunk (source domain, target domain).
  using SourceKey = std::pair<HostId, uint64_t>;
  using TrunkKey = std::pair<Domain, Domain>;
  static SourceKey SourceOf(const TaskRecord& r);
  // nullopt for a copy within one domain.
  static std::optional<TrunkKey> TrunkOf(const TaskRecord& r);

  // Whether `r`'s bytes fit its source's / trunk's budget next to the bytes
  // in flight (always true for a copy within a domain's trunk check).
  bool FitsSourceBudgetLocked(const TaskRecord& r) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool FitsTrunkBudgetLocked(const TaskRecord& r) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ChargeCopyBudgetsLocked(TaskRecord& r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // No-op when `r` holds no budget; clears holds_copy_budget.
  void ReleaseCopyBudgetsLocked(TaskRecord& r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CheckCopyBudgetsLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const MasterKnobs knobs_;
  mutable Mutex mu_;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  absl::btree_map<TaskId, TaskRecord> tasks_ ABSL_GUARDED_BY(mu_);
  absl::btree_map<ClientId, ClientQueues> queues_ ABSL_GUARDED_BY(mu_);
  // Copy bytes in flight; keys with nothing in flight are erased.
  absl::btree_map<SourceKey, int64_t> source_bytes_in_flight_ ABSL_GUARDED_BY(mu_);
  absl::btree_map<TrunkKey, int64_t> trunk_bytes_in_flight_ ABSL_GUARDED_BY(mu_);
  int64_t copy_bytes_in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t copy_fetches_deferred_total_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace heatsink::master_internal

#endif  // HEATSINK_CORE_MASTER_INTERNAL_TASK_MANAGER_H_
