// File: core/replication/cooldown.h
//
// Cooldown tables of dynamic replication (DESIGN decision 3). Two instances,
// one type:
//   * admission cooldown: keyed by heat key (tenant + key, + requester domain
//     when domain-aware), started by an accepted admission
//     (dynamic_replication_admission_cooldown_ms);
//   * recreate cooldown: keyed by object + domain of the removed dynamic
//     replica (empty domain in stage 1, so it covers the whole object),
//     started when a dynamic replica is removed by eviction, revoke or
//     reaping (dynamic_replication_recreate_cooldown_ms). Evicting in domain
//     B therefore blocks recreation in B only.
//
// A cooldown is active while now < deadline (core/env/time.h CooldownActive).
// The table is bounded: entries live in a deadline-ordered index, every call
// reclaims at most `reclaim_per_call` expired entries from its front, and
// Start() at the limit first reclaims an expired entry if one exists, then
// rejects with RESOURCE_EXHAUSTED. No call scans the table.
//
// Thread safety: every method is thread-safe.
//
// Example:
//   CooldownTable recreate("recreate", knobs.dynamic_replication_cooldown_entries_max);
//   HS_RETURN_IF_ERROR(recreate.Start(now, {tenant, key, domain}, knobs.recreate_cooldown_ns()));
//   if (recreate.Active(now, {tenant, key, domain})) reject(kRecreateCooldown);
#ifndef HEATSINK_CORE_REPLICATION_COOLDOWN_H_
#define HEATSINK_CORE_REPLICATION_COOLDOWN_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/base/mutex.h"
#include "core/env/time.h"
#include "core/replication/heat_key.h"

namespace heatsink {

struct CooldownStats {
  int64_t started = 0;    // Start() that created an entry
  int64_t extended = 0;   // Start() that moved an existing deadline later
  int64_t hits = 0;       // Active() that returned true
  int64_t rejected = 0;   // Start() rejected at the limit
  int64_t reclaimed = 0;  // expired entries removed
  int64_t size = 0;
};

class CooldownTable {
 public:
  // `name` appears in error messages ("admission", "recreate").
  // REQUIRES: max_entries >= 1, reclaim_per_call >= 1.
  CooldownTable(absl::string_view name, size_t max_entries, size_t reclaim_per_call = 4);
  CooldownTable(const CooldownTable&) = delete;
  CooldownTable& operator=(const CooldownTable&) = delete;

  // Cools `key` down until now + duration; an existing later deadline is
  // kept (a cooldown is never shortened). duration <= 0 (knob 0: disabled)
  // does nothing. RESOURCE_EXHAUSTED when the table is full of live entries.
  [[nodiscard]] absl::Status Start(TimeNs now, HeatKeyView key, DurationNs duration);

  // True while now < the key's deadline. Counts a hit when true.
  bool Active(TimeNs now, HeatKeyView key);

  // The key's deadline if its cooldown is active at `now`.
  std::optional<TimeNs> Deadline(TimeNs now, HeatKeyView key);

  // Ends the key's cooldown early (for example when its object is removed).
  void Erase(HeatKeyView key);

  // Removes up to `max_count` expired entries; returns how many.
  size_t ReclaimExpired(TimeNs now, size_t max_count);

  size_t size() const;
  size_t max_entries() const { return max_entries_; }
  CooldownStats stats() const;

 private:
  size_t ReclaimLocked(TimeNs now, size_t max_count) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string name_;
  const size_t max_entries_;
  const size_t reclaim_per_call_;
  mutable Mutex mu_;
  std::map<HeatKey, TimeNs> deadlines_ ABSL_GUARDED_BY(mu_);
  // (deadline, key): expired entries are always a prefix.
  std::set<std::pair<TimeNs, HeatKey>> by_deadline_ ABSL_GUARDED_BY(mu_);
  CooldownStats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace heatsink

#endif  // HEATSINK_CORE_REPLICATION_COOLDOWN_H_
