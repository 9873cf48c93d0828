// File: core/replication/replication_knobs.h
//
// Knobs of dynamic hot replication (RFC stage 1 and stage 2) and of the
// reader-side replica selection policy: one documented struct, defaults in the
// field initializers (the RFC's names and Mooncake's defaults where they
// exist), Validate() with clear messages, a name registry for scenario JSON,
// `--set name=value` and runtime flags, and two presets.
//
// Everything beyond the RFC that changes its semantics is off by default:
// domain-aware placement, warmup, and the `spread` selection policy.
//
// Example:
//   ReplicationKnobs knobs;
//   HS_RETURN_IF_ERROR(ReplicationKnobs::Registry().Set(
//       knobs, "dynamic_replication_mode", "observe"));
//   HS_RETURN_IF_ERROR(knobs.Validate());
//   const int64_t hits = knobs.AdmissionHitCount();  // 8 with the defaults
#ifndef HEATSINK_CORE_REPLICATION_REPLICATION_KNOBS_H_
#define HEATSINK_CORE_REPLICATION_REPLICATION_KNOBS_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/base/knobs.h"
#include "core/env/time.h"

namespace heatsink {

// off: the read path records nothing and nothing is admitted.
// observe: heat is recorded and the complete admission decision runs
//   (placement included); "would propose" is counted and logged, nothing is
//   created.
// enforce: accepted admissions grant a lease and create a REPLICA_COPY task.
enum class DynamicReplicationMode { kOff, kObserve, kEnforce };

absl::string_view DynamicReplicationModeName(DynamicReplicationMode m);
std::optional<DynamicReplicationMode> ParseDynamicReplicationMode(absl::string_view word);

// Reader-side choice among an object's replicas (core/replication/replica_selection.h).
// first: Mooncake's behaviour (local MEMORY replica, else master order).
// spread: local first, then same domain, then load spreading across
//   equal-cost replicas.
enum class ReplicaSelectionPolicy { kFirst, kSpread };

absl::string_view ReplicaSelectionPolicyName(ReplicaSelectionPolicy p);
std::optional<ReplicaSelectionPolicy> ParseReplicaSelectionPolicy(absl::string_view word);

// Heat-window counters are 16-bit per sub-bucket, so the admission hit count
// is limited to this (0.8 QPS x 10 s = 8 by default).
inline constexpr int64_t kAdmissionHitCountMax = 65'535;
// Upper bound for dynamic_replication_heat_window_entries_max: slot numbers
// inside one heat-window shard are 24-bit.
inline constexpr int64_t kHeatWindowEntriesMaxLimit = 16'777'215;
// Upper bound for dynamic_replication_heat_window_sub_buckets: with 2-byte
// counters this keeps the per-key memory within its 64-byte budget.
inline constexpr int64_t kHeatWindowSubBucketsMax = 12;

struct ReplicationKnobs {
  // --- Mode (RFC) ---------------------------------------------------------
  DynamicReplicationMode dynamic_replication_mode = DynamicReplicationMode::kOff;

  // --- Heat window and admission threshold (RFC) --------------------------
  // Length of the sliding heat window.
  int64_t dynamic_replication_heat_window_seconds = 10;
  // Reads per second over the window that make a key hot. The hit count is
  // AdmissionHitCount().
  double dynamic_replication_admission_qps_threshold = 0.8;
  // Cap on readable MEMORY replicas of an object, originals included; with
  // domain-aware placement it caps those in the target domain (DESIGN 2).
  int64_t dynamic_replication_max_memory_replicas = 2;

  // --- Heat window shape and bound (beyond the RFC) -----------------------
  // Keys tracked at once; at the limit, idle entries are reclaimed and then
  // the coldest of a bounded probe is replaced (core/replication/heat_window.h).
  int64_t dynamic_replication_heat_window_entries_max = 50'000;
  // The window slides in steps of window / sub_buckets. More sub-buckets
  // track the window more closely at 2 bytes per key each.
  int64_t dynamic_replication_heat_window_sub_buckets = 10;
  // Reads reach the window through per-thread read buffers
  // (core/replication/heat_read_buffer.h) that the Executor drains at most
  // this long after the first read it has not applied yet (and sooner when a
  // buffer is half full): a read counts in the window from its drain, at most
  // one interval after it happened.
  int64_t dynamic_replication_heat_drain_interval_ms = 5;
  // Read-buffer stripe size, in reads of keys up to 48 bytes (64 bytes
  // each; a read takes 16 bytes plus its tenant, key and domain bytes, so
  // shorter keys fit more): a power of two. One stripe per reading thread
  // (at most 16), allocated by its first read: 1 MiB each with the
  // default. A read that finds its stripe full is dropped and counted
  // (dynamic_replication_heat_reads_dropped_total), never waited for. At
  // 3 million reads per second on one thread, 16,384 records are about 7 ms
  // of reads; the drain is asked for once a stripe holds 2,048 of them (128
  // KiB: HeatReadBuffer::high_water_units), as it was with the smaller
  // stripe, so the larger stripe changes no admission. (4,096, the default
  // until 2026-12-08, dropped thousands of reads a run in the read-path
  // bench's 2-thread cells, where the drain shares two cores with both
  // readers: docs/performance.md.)
  int64_t dynamic_replication_heat_read_buffer_records = 16'384;

  // --- Cooldowns (DESIGN 3) -----------------------------------------------
  // From an accepted admission, per key (per key and requester domain when
  // domain-aware). 0 disables.
  int64_t dynamic_replication_admission_cooldown_ms = 30'000;
  // From the removal of a dynamic replica by eviction, revoke or reaping,
  // per object (per object and domain when domain-aware). 0 disables.
  int64_t dynamic_replication_recreate_cooldown_ms = 60'000;

  // --- Sustained heat (DESIGN 1, beyond the RFC's crossing trigger) -------
  // A key still at or above the hit count is evaluated again, off the read
  // path, when its admission (or recreate) cooldown ends, when the pending
  // copy that blocked it ends or fails, and this long after a transient
  // rejection (no_target, no_target_in_domain, utilization_cap, no_source,
  // resource_exhausted, task_create_failed, not_complete, object_not_found,
  // replica_limit, or a pending ordinary copy task). > 0.
  int64_t dynamic_replication_admission_retry_ms = 5'000;

  // --- Cold release of dynamic replicas (beyond the RFC; off by default) ---
  // When enabled, a dynamic replica is cold at a check when its key (in the
  // replica's domain when domain-aware) held fewer than release_below_count
  // reads in the release span and was not read at its replica cap in the
  // span either (such reads record no heat, DESIGN 2, but they are reads of
  // the replica's key). One cold at every check for release_after_ms, whose
  // object was not read-leased, is dropped (and its recreate cooldown starts).
  bool dynamic_replication_release_enabled = false;
  int64_t dynamic_replication_release_after_ms = 60'000;  // > 0 when enabled
  int64_t dynamic_replication_release_below_count = 1;
  // The release span: 0 is the whole heat window; else the newest heat
  // sub-buckets covering this many ms (rounded up to whole sub-buckets), at
  // most the window. A span shorter than the window lets a long window find
  // reuse spread over minutes while an idle replica goes soon.
  int64_t dynamic_replication_release_span_ms = 0;

  // --- Placement ----------------------------------------------------------
  // A target segment must stay at or below this utilisation after the copy:
  // (used + reserved + object size) / capacity <= cap.
  double dynamic_replication_target_utilization_cap = 0.85;
  // Among valid targets, prefer the segment whose dynamic replicas were
  // admitted with less heat before the less utilised one (beyond the RFC's
  // "prefer lower utilization"; off by default).
  bool dynamic_replication_target_heat_aware = false;
  // Placement is domain-aware (RFC stage 2). Off: stage-1 behaviour exactly,
  // and domain hints in proposals are rejected.
  bool dynamic_replication_domain_aware = false;

  // --- Leases -------------------------------------------------------------
  // Upper bound of a ReplicaActionLease's lifetime; a proposal's own
  // deadline may shorten it.
  int64_t dynamic_replication_lease_ttl_ms = 30'000;

  // --- Limits (RESOURCE_EXHAUSTED at the limit) ---------------------------
  int64_t dynamic_replication_trigger_queue_max = 4'096;
  int64_t dynamic_replication_pending_actions_max = 4'096;
  int64_t dynamic_replication_proposals_max = 4'096;
  // Each cooldown table (admission, recreate) holds at most this many keys.
  int64_t dynamic_replication_cooldown_entries_max = 100'000;

  // --- Reader-side replica selection (beyond the RFC) ---------------------
  ReplicaSelectionPolicy replica_selection_policy = ReplicaSelectionPolicy::kFirst;

  // --- Cross-domain warmup (RFC Target Scenario 3; off by default) --------
  bool dynamic_replication_warmup_enabled = false;
  int64_t dynamic_replication_warmup_copies_in_flight_max = 4;
  int64_t dynamic_replication_warmup_bytes_per_second_max = 256LL * 1024 * 1024;
  // Objects one warmup of a domain considers at most.
  int64_t dynamic_replication_warmup_objects_max = 1'000;
  // How often the master looks for domains whose first segment appeared
  // (each such domain is warmed up once). Only while warmup is enabled.
  int64_t dynamic_replication_warmup_domain_poll_ms = 1'000;

  // Reads inside the window that make a key hot:
  //   max(1, ceil(qps_threshold * window_seconds)).
  // The product is computed in double; a result within a relative 1e-9 of an
  // integer is taken as that integer, so 0.07 x 100 (7.000000000000001 in
  // IEEE arithmetic) gives 7 rather than 8. Valid knobs only.
  int64_t AdmissionHitCount() const;

  DurationNs heat_window_ns() const { return SecToNs(dynamic_replication_heat_window_seconds); }
  DurationNs heat_drain_interval_ns() const {
    return MsToNs(dynamic_replication_heat_drain_interval_ms);
  }
  DurationNs admission_cooldown_ns() const {
    return MsToNs(dynamic_replication_admission_cooldown_ms);
  }
  DurationNs recreate_cooldown_ns() const {
    return MsToNs(dynamic_replication_recreate_cooldown_ms);
  }
  DurationNs lease_ttl_ns() const { return MsToNs(dynamic_replication_lease_ttl_ms); }
  DurationNs admission_retry_ns() const { return MsToNs(dynamic_replication_admission_retry_ms); }
  DurationNs release_after_ns() const { return MsToNs(dynamic_replication_release_after_ms); }
  // The release span in heat sub-buckets, in [1, sub_buckets].
  int32_t release_span_sub_buckets() const;
  // The utilisation cap in parts per million, for exact integer comparisons.
  int64_t target_utilization_cap_ppm() const;

  // OK, or INVALID_ARGUMENT naming the first offending knob and its range.
  [[nodiscard]] absl::Status Validate() const;

  static const KnobRegistry<ReplicationKnobs>& Registry();

  // The defaults above.
  static ReplicationKnobs Production();
  // Mode enforce, a 1 s window with hit count 2, tiny tables and short
  // cooldowns so tests reach every limit.
  static ReplicationKnobs TestMin();
};

// The hit-count arithmetic on its own, for callers that hold the two values
// rather than a knob struct. REQUIRES: qps_threshold finite and > 0,
// window_seconds >= 1. Saturates at INT64_MAX.
int64_t AdmissionHitCountFor(double qps_threshold, int64_t window_seconds);

}  // namespace heatsink

#endif  // HEATSINK_CORE_REPLICATION_REPLICATION_KNOBS_H_
