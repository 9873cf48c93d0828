// File: core/replication/heat_recheck.h
//
// Sustained heat (DESIGN decision 1): the heat keys that dynamic replication
// must look at again, off the read path. The read path fires one trigger when
// a key's window count rises through the hit count; a key that then STAYS hot
// never crosses again, so the admission worker schedules its next look here
// from the event that ends what held it back:
//   * at a time: the end of its admission or recreate cooldown, or a retry
//     delay after a transient rejection (Schedule);
//   * at an event: the end of the pending dynamic copy that blocked it
//     (Park on that copy's (object, domain), ReleaseParked when it ends or
//     fails).
// When a look is due the caller re-reads the key's window count and queues an
// ordinary admission trigger only if the key is still at or above the hit
// count; a key that cooled is dropped (it crosses again if it heats up).
//
// A key is scheduled at most once: Schedule keeps the earlier of two times,
// and a parked key scheduled again moves to the schedule. Bounded: at most
// `max_entries` keys, scheduled and parked together; at the limit Schedule
// and Park return RESOURCE_EXHAUSTED (the caller counts it; the key is then
// looked at again only if it crosses again).
//
// Determinism: ordered containers only; due keys come out by (due time, key).
// Thread safety: every method is thread-safe (a leaf lock).
//
// Example:
//   (void)rechecks.Schedule(now + cooldown, key);          // accepted
//   for (const HeatKey& k : rechecks.TakeDue(now, 64)) {
//     if (window.CountInWindow(now, k.view()) >= hit_count) triggers.Enqueue(now, k.view());
//   }
#ifndef HEATSINK_CORE_REPLICATION_HEAT_RECHECK_H_
#define HEATSINK_CORE_REPLICATION_HEAT_RECHECK_H_

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <variant>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "core/base/mutex.h"
#include "core/env/time.h"
#include "core/replication/heat_key.h"

namespace heatsink {

class HeatRecheckQueue {
 public:
  // REQUIRES: max_entries >= 1.
  explicit HeatRecheckQueue(size_t max_entries);
  HeatRecheckQueue(const HeatRecheckQueue&) = delete;
  HeatRecheckQueue& operator=(const HeatRecheckQueue&) = delete;

  // Looks at `key` again at `due_ns`. A key already scheduled keeps the
  // earlier time; a parked key moves to the schedule.
  [[nodiscard]] absl::Status Schedule(TimeNs due_ns, HeatKeyView key);

  // Looks at `key` again when ReleaseParked(`blocker`) is called (the
  // blocker names a pending copy: object tenant, key and target domain). A
  // key already scheduled stays scheduled.
  [[nodiscard]] absl::Status Park(const HeatKey& blocker, HeatKeyView key);

  // Moves every key parked on `blocker` to the schedule at `now`; returns
  // how many.
  size_t ReleaseParked(const HeatKey& blocker, TimeNs now);

  // Removes and returns up to `max_count` keys due at `now` (due <= now),
  // by (due time, key).
  std::vector<HeatKey> TakeDue(TimeNs now, size_t max_count);

  // The earliest scheduled time, if any key is scheduled.
  std::optional<TimeNs> NextDue() const;

  void Clear();
  size_t scheduled() const;
  size_t parked() const;
  size_t max_entries() const { return max_entries_; }

 private:
  // Where a key waits: a time, or the blocker it is parked on.
  using Wait = std::variant<TimeNs, HeatKey>;

  void EraseLocked(const HeatKey& key, const Wait& wait) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status RoomLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const size_t max_entries_;
  mutable Mutex mu_;
  std::map<HeatKey, Wait> waits_ ABSL_GUARDED_BY(mu_);
  std::set<std::pair<TimeNs, HeatKey>> by_due_ ABSL_GUARDED_BY(mu_);
  std::map<HeatKey, std::set<HeatKey>> by_blocker_ ABSL_GUARDED_BY(mu_);
};

}  // namespace heatsink

#endif  // HEATSINK_CORE_REPLICATION_HEAT_RECHECK_H_
