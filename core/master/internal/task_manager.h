// File: core/master/internal/task_manager.h
//
// Per-client task queues (Mooncake's ClientTaskManager): a FIFO of pending
// tasks and a set of processing (fetched) tasks per client, each bounded, plus
// a bounded table of all tasks. Tasks are ordered by id (issued in creation
// order), so fetch order and timeout order never depend on hashing.
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
};

struct TaskCounts {
  int64_t pending = 0;
  int64_t processing = 0;
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
  // never beyond processing_tasks_per_client_max, and returns them.
  std::vector<Task> Fetch(ClientId client, size_t max, TimeNs now);

  std::optional<TaskRecord> Find(TaskId id) const;

  // Copy phase transitions; false (no change) when the task is gone or not in
  // `from`.
  bool MarkStarted(TaskId id, ReplicaId target_replica, TimeNs now);
  bool SetPhase(TaskId id, CopyPhase from, CopyPhase to, TimeNs now);

  // Removes the task from every queue and returns it.
  std::optional<TaskRecord> Remove(TaskId id);

  // Pending tasks waited pending_task_timeout; processing tasks ran
  // processing_task_timeout. Ascending id.
  std::vector<TaskId> TimedOut(TimeNs now) const;
  bool IsTimedOut(const TaskRecord& record, TimeNs now) const;

  TaskCounts Counts() const;
  TaskCounts CountsFor(ClientId client) const;
  // Every task, ascending id (for invariant checks and views).
  std::vector<TaskRecord> All() const;
  // OK, or INTERNAL describing the first queue/table inconsistency.
  [[nodiscard]] absl::Status CheckQueues() const;

 private:
  struct ClientQueues {
    std::deque<TaskId> pending;
    absl::btree_set<TaskId> processing;
  };

  const MasterKnobs knobs_;
  mutable Mutex mu_;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  absl::btree_map<TaskId, TaskRecord> tasks_ ABSL_GUARDED_BY(mu_);
  absl::btree_map<ClientId, ClientQueues> queues_ ABSL_GUARDED_BY(mu_);
};

}  // namespace heatsink::master_internal

#endif  // HEATSINK_CORE_MASTER_INTERNAL_TASK_MANAGER_H_
