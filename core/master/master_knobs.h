// File: core/master/master_knobs.h
//
// The master's knobs: one documented struct, defaults in the field
// initializers (Mooncake Store's names and defaults where Mooncake has the
// knob), a Validate() with clear messages, a name registry for scenario JSON,
// `--set name=value` and runtime flags, and two presets.
//
// Every table, queue and batch the master keeps has a `*_max` knob here; the
// master rejects at the limit with RESOURCE_EXHAUSTED instead of growing.
//
// Example:
//   MasterKnobs knobs = MasterKnobs::Production();
//   HS_RETURN_IF_ERROR(MasterKnobs::Registry().Set(knobs, "eviction_ratio", "0.1"));
//   HS_RETURN_IF_ERROR(knobs.Validate());
#ifndef HEATSINK_CORE_MASTER_MASTER_KNOBS_H_
#define HEATSINK_CORE_MASTER_MASTER_KNOBS_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/base/knobs.h"
#include "core/env/time.h"

namespace heatsink {

// How PutStart picks segments for replicas beyond the preferred ones.
enum class AllocationStrategy {
  // Uniformly at random among segments with room, from the master's seeded
  // Rng (Mooncake's default).
  kRandom,
  // Highest free/capacity ratio first; ties by lower segment id.
  kFreeRatioFirst,
};

absl::string_view AllocationStrategyName(AllocationStrategy s);
std::optional<AllocationStrategy> ParseAllocationStrategy(absl::string_view word);

struct MasterKnobs {
  // --- Liveness -----------------------------------------------------------
  // A client that has not heartbeated for this long is dead; its segments are
  // unmounted by the sweep.
  int64_t client_live_ttl_sec = 10;

  // --- Puts ---------------------------------------------------------------
  // A put started this long ago and not ended is discarded: the key becomes
  // free again and PutEnd for it fails, but its bytes stay allocated (the
  // writer may still be writing into them) until the release timeout.
  int64_t put_start_discard_timeout_sec = 30;
  // A discarded put's bytes are freed this long after its PutStart.
  int64_t put_start_release_timeout_sec = 600;

  // --- Reads --------------------------------------------------------------
  // Read lease granted by GetReplicaList; a leased object is never evicted or
  // removed. Registered as `default_kv_lease_ttl_ms` and, for Mooncake's
  // flag name, `default_kv_lease_ttl` (also milliseconds there).
  int64_t default_kv_lease_ttl_ms = 10'000;

  // --- Eviction -----------------------------------------------------------
  // Eviction starts when (used + reserved) / capacity over all mounted
  // segments exceeds this ratio, or when an allocation fails.
  double eviction_high_watermark_ratio = 0.90;
  // One eviction pass frees about this fraction of the used bytes.
  double eviction_ratio = 0.05;

  // --- Allocation ---------------------------------------------------------
  AllocationStrategy allocation_strategy = AllocationStrategy::kRandom;

  // --- Tasks (Mooncake's task manager names for the timeouts) -------------
  // A task not fetched within this time is dropped.
  int64_t pending_task_timeout_sec = 300;
  // A fetched task not completed within this time is reaped; a copy started by
  // it is revoked. Also registered as `copy_task_timeout_sec`.
  int64_t processing_task_timeout_sec = 300;

  // --- Copy pacing (background bytes in flight; FetchTasks enforces) ------
  // A REPLICA_COPY task counts its object's bytes (payload size_bytes) from
  // the FetchTasks that hands it out until its CopyEnd, CopyRevoke or removal
  // (MarkTaskComplete, timeout, cancel, unmount, client expiry). A pending
  // task is handed out only while its bytes fit both budgets below, or when
  // nothing is in flight on the budget it would exceed: an object larger
  // than a budget goes through alone, never waits forever. Every copy task
  // is background traffic (ordinary, dynamic and warmup copies alike).
  //
  // Bytes in flight whose source is one host: the source segment's host,
  // or the source segment itself when its store gave no host.
  int64_t copy_budget_per_source_bytes = int64_t{1} << 40;  // 1 TiB: unpaced
  // Bytes in flight from one domain to another (the ordered pair source
  // segment's domain -> target segment's domain, one direction of the
  // trunks between them; the master does not know the route). Copies within
  // a domain do not count.
  int64_t copy_budget_per_trunk_bytes = int64_t{1} << 40;  // 1 TiB: unpaced

  // --- Background sweep ---------------------------------------------------
  // Period of the sweep that reaps dead clients, stuck puts, timed-out tasks
  // and runs eviction above the watermark.
  int64_t sweep_interval_ms = 1'000;

  // --- Restart (stores rebuild a new master's metadata; docs/runtime.md) --
  // A master started with restart_grace_ms > 0 recovers: until the
  // expected stores have reported their manifests, or this long after its
  // start, a read or Remove of a key it does not know, a PutStart and a copy
  // task are UNAVAILABLE ("master_recovering"), so clients retry instead of
  // recomputing. 0: no recovery window (a first start).
  int64_t restart_grace_ms = 0;
  // Stores whose last manifest report ends the recovery early; 0 waits for
  // the whole grace period.
  int64_t restart_expected_stores = 0;
  // Manifest changes one FetchTasks returns to its store.
  int64_t manifest_changes_per_fetch_max = 4'096;
  // Entries one ReportManifest may carry.
  int64_t manifest_entries_per_report_max = 4'096;

  // --- Concurrency --------------------------------------------------------
  // Object metadata is split into this many independently locked shards.
  int64_t metadata_shards = 64;

  // --- Limits (RESOURCE_EXHAUSTED at the limit unless noted) --------------
  int64_t objects_max = 16'777'216;
  int64_t segments_max = 4'096;
  int64_t segments_per_client_max = 64;
  int64_t clients_max = 4'096;
  // Longer keys, tenants or names are INVALID_ARGUMENT, not exhaustion.
  int64_t key_bytes_max = 4'096;
  int64_t tenant_bytes_max = 256;
  int64_t name_bytes_max = 256;  // segment name, host, domain, endpoint
  int64_t batch_keys_max = 1'024;
  int64_t replicas_per_object_max = 8;
  int64_t preferred_segments_max = 16;
  int64_t tasks_max = 10'000;  // all clients together
  int64_t pending_tasks_per_client_max = 1'000;
  int64_t processing_tasks_per_client_max = 1'000;
  int64_t fetch_tasks_batch_max = 64;
  // Discarded puts whose bytes are waiting for the release timeout.
  int64_t discarded_puts_max = 65'536;

  DurationNs client_live_ttl_ns() const { return SecToNs(client_live_ttl_sec); }
  DurationNs put_start_discard_timeout_ns() const { return SecToNs(put_start_discard_timeout_sec); }
  DurationNs put_start_release_timeout_ns() const { return SecToNs(put_start_release_timeout_sec); }
  DurationNs default_kv_lease_ttl_ns() const { return MsToNs(default_kv_lease_ttl_ms); }
  DurationNs pending_task_timeout_ns() const { return SecToNs(pending_task_timeout_sec); }
  DurationNs processing_task_timeout_ns() const { return SecToNs(processing_task_timeout_sec); }
  DurationNs sweep_interval_ns() const { return MsToNs(sweep_interval_ms); }
  DurationNs restart_grace_ns() const { return MsToNs(restart_grace_ms); }

  // OK, or INVALID_ARGUMENT naming the first offending knob and its range.
  [[nodiscard]] absl::Status Validate() const;

  static const KnobRegistry<MasterKnobs>& Registry();

  // The defaults above.
  static MasterKnobs Production();
  // Tiny limits and short timeouts so tests reach every edge.
  static MasterKnobs TestMin();
};

}  // namespace heatsink

#endif  // HEATSINK_CORE_MASTER_MASTER_KNOBS_H_
