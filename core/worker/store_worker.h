// File: core/worker/store_worker.h
//
// Store-worker logic as a state machine on the Env (no I/O of its own):
//
//   kRegistering --RegisterClient ok--> kMounting --all MountSegment ok-->
//        ^           [ReportManifest, in batches, when registering again] --> kRunning
//        |                                                                   |
//        +------ Heartbeat NOT_FOUND (the master restarted or reaped us) ----+
//
// The manifest: every FetchTasks acknowledges the manifest changes applied
// so far and brings the next ones (ManifestChange), so the worker holds the
// master's view of its segments (key, tenant, version, size, offset,
// complete, dynamic). Registering again, it reports that manifest to the
// master, which rebuilds its metadata from it (MasterService::ReportManifest)
// and answers per entry; entries not taken back are dropped.
//
// While running it heartbeats every `heartbeat_interval_ms` and fetches tasks
// every `fetch_interval_ms` (at most `fetch_batch_max` per call, and never more
// than `copies_in_flight_max` copies at once). Each REPLICA_COPY task runs
//
//   CopyStart -> DataMover::StartCopy(range) -> CopyEnd -> MarkTaskComplete(ok)
//
// (when the transfer reports OK, the target also holds the source's scores of
// the copied bytes: score inheritance is the DataMover's part, see
// core/env/data_mover.h), and on a failed transfer or CopyEnd:
// CopyRevoke -> MarkTaskComplete(failed);
// on a failed CopyStart: MarkTaskComplete(failed). A task whose payload carries
// a lease id takes the Dynamic* calls at the same three points
// (StoreWorker::Core::StartCopyCall/EndCopyCall/RevokeCopyCall is the dispatch).
// Failed registration or mounting retries after `retry_interval_ms`.
//
// Lifetime: callbacks hold only a weak reference to the worker's state, so a
// destroyed worker's late callbacks do nothing. Stop() cancels the timers; a
// copy already in flight still finishes its chain.
//
// Thread safety: all methods are thread-safe; callbacks may arrive on any
// thread.
#ifndef HEATSINK_CORE_WORKER_STORE_WORKER_H_
#define HEATSINK_CORE_WORKER_STORE_WORKER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "core/env/data_mover.h"
#include "core/env/env.h"
#include "core/master/master_types.h"
#include "core/worker/master_client.h"

namespace heatsink {

struct StoreWorkerOptions {
  ClientId client_id;
  HostId host;
  Domain domain;  // empty = default
  std::vector<MountSegmentRequest> segments;  // mounted in this order
  // Mooncake's client pings every second; client_live_ttl_sec must cover a
  // few missed heartbeats.
  int64_t heartbeat_interval_ms = 1'000;
  int64_t fetch_interval_ms = 100;
  int64_t fetch_batch_max = 16;  // must not exceed the master's fetch_tasks_batch_max
  int64_t copies_in_flight_max = 16;
  int64_t retry_interval_ms = 1'000;
  // Restart (docs/runtime.md, "Master restart"): at every registration
  // (the first, or again after the master restarted or reaped it) the
  // worker mounts its segments as manifest_pending and reports what they
  // hold, at most manifest_report_entries_max entries per call (a first
  // registration reports an empty manifest). The manifest is kept from the
  // changes FetchTasks returns; without report_manifest they are only
  // acknowledged and Manifest() stays empty.
  bool report_manifest = true;
  int64_t manifest_report_entries_max = 1'024;

  [[nodiscard]] absl::Status Validate() const;
};

enum class StoreWorkerState { kStopped, kRegistering, kMounting, kRunning };

struct StoreWorkerStats {
  int64_t registrations = 0;  // successful RegisterClient calls
  int64_t heartbeats_failed = 0;
  int64_t tasks_fetched = 0;
  int64_t copies_started = 0;    // CopyStart succeeded
  int64_t copies_completed = 0;  // CopyEnd succeeded
  int64_t copies_failed = 0;     // start, transfer or end failed
  int64_t dynamic_tasks = 0;     // tasks that took the Dynamic* calls
  int64_t tasks_reported = 0;    // MarkTaskComplete answered (any status)
  int64_t manifest_reports = 0;  // registrations that reported a manifest
  int64_t manifest_entries_reported = 0;
  int64_t manifest_entries_dropped = 0;  // not taken back by the master
};

class StoreWorker {
 public:
  // REQUIRES: options.Validate().ok() (checked); env, master and mover outlive
  // every callback the worker can still receive.
  StoreWorker(Env* env, MasterClient* master, DataMover* mover, StoreWorkerOptions options);
  ~StoreWorker();
  StoreWorker(const StoreWorker&) = delete;
  StoreWorker& operator=(const StoreWorker&) = delete;

  // Registers, mounts, then heartbeats and fetches until Stop(). No-op when
  // already started.
  void Start();
  void Stop();

  StoreWorkerState state() const;
  StoreWorkerStats stats() const;
  int64_t copies_in_flight() const;
  // What this store's segments hold, as the master last told it, in
  // (segment, offset) order.
  std::vector<ManifestEntry> Manifest() const;
  // The manifest's entries (complete or not) that overlap
  // [offset, offset + size) of `segment`, in offset order, at most
  // `entries_max` of them. A store's data service maps a read to the
  // objects it covers with it.
  std::vector<ManifestEntry> ManifestOverlapping(SegmentId segment, uint64_t offset,
                                                 uint64_t size, size_t entries_max) const;
  // Calls `done` once a FetchTasks that leaves after this call has been
  // answered and its manifest changes applied (or it failed), so a caller
  // that missed an entry the master has just recorded can look again. Never
  // called while the worker does not fetch (the caller bounds its wait);
  // called at once when kFetchWaitersMax callers already wait. `done` runs
  // on the thread of the fetch's answer and must not block.
  void CallAfterNextFetch(absl::AnyInvocable<void() &&> done);

 private:
  class Core;
  std::shared_ptr<Core> core_;
};

}  // namespace heatsink

#endif  // HEATSINK_CORE_WORKER_STORE_WORKER_H_
