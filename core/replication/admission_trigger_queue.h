// File: core/replication/admission_trigger_queue.h
//
// The hand-off between the read path and the background admission worker:
// a bounded, deduplicated FIFO of heat keys whose window crossed the hit
// count. A key is queued at most once until the worker takes it; a second
// crossing while it waits is absorbed (counted as a duplicate). At the limit,
// Enqueue rejects with RESOURCE_EXHAUSTED and counts the overflow; nothing
// already queued is dropped.
//
// The queue never touches the Executor: the caller posts the worker when
// Enqueue reports that the queue was empty (one wake-up per batch).
//
// Thread safety: every method is thread-safe (the read path enqueues from
// many threads; the worker takes).
//
// Example:
//   if (record.crossed) {
//     absl::StatusOr<TriggerEnqueue> r = triggers.Enqueue(now, key_view);
//     if (r.ok() && r->queue_was_empty) env->executor->Post(...worker...);
//   }
#ifndef HEATSINK_CORE_REPLICATION_ADMISSION_TRIGGER_QUEUE_H_
#define HEATSINK_CORE_REPLICATION_ADMISSION_TRIGGER_QUEUE_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "core/base/mutex.h"
#include "core/env/time.h"
#include "core/replication/heat_key.h"

namespace heatsink {

struct AdmissionTrigger {
  HeatKey key;
  TimeNs enqueued_ns = 0;  // when the crossing read happened
};

struct TriggerEnqueue {
  bool queued = false;           // false: the key was already waiting
  bool queue_was_empty = false;  // true: the caller should wake the worker
};

struct AdmissionTriggerQueueStats {
  int64_t enqueued = 0;
  int64_t duplicates = 0;  // Enqueue of a key already waiting
  int64_t overflows = 0;   // Enqueue rejected at the limit
  int64_t taken = 0;
  int64_t size = 0;
};

class AdmissionTriggerQueue {
 public:
  // REQUIRES: max_size >= 1 (dynamic_replication_trigger_queue_max).
  explicit AdmissionTriggerQueue(size_t max_size);
  AdmissionTriggerQueue(const AdmissionTriggerQueue&) = delete;
  AdmissionTriggerQueue& operator=(const AdmissionTriggerQueue&) = delete;

  // Queues `key` unless it is already waiting. RESOURCE_EXHAUSTED when the
  // queue holds max_size keys and `key` is not among them.
  [[nodiscard]] absl::StatusOr<TriggerEnqueue> Enqueue(TimeNs now, HeatKeyView key);

  // The oldest waiting trigger, removed from the queue; nullopt when empty.
  // Once taken, the key may be queued again.
  std::optional<AdmissionTrigger> Take();
  // Up to `max_count` triggers, oldest first.
  std::vector<AdmissionTrigger> TakeUpTo(size_t max_count);

  bool Contains(HeatKeyView key) const;
  size_t size() const;
  size_t max_size() const { return max_size_; }
  AdmissionTriggerQueueStats stats() const;

 private:
  const size_t max_size_;
  mutable Mutex mu_;
  std::deque<AdmissionTrigger> fifo_ ABSL_GUARDED_BY(mu_);
  // Keys in fifo_, for deduplication. Only looked up, never iterated.
  absl::flat_hash_set<HeatKey> waiting_ ABSL_GUARDED_BY(mu_);
  AdmissionTriggerQueueStats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace heatsink

#endif  // HEATSINK_CORE_REPLICATION_ADMISSION_TRIGGER_QUEUE_H_
