// File: core/master/master_service.h
//
// MasterService: Mooncake Store's master, as a core component on an Env.
// Clients register and heartbeat; store clients mount MEMORY segments; writers
// put immutable objects (PutStart -> write -> PutEnd); readers get replica
// lists (granting a read lease); objects are removed explicitly or evicted
// when memory runs high; REPLICA_COPY tasks ask a store client to copy a
// replica to another segment (CopyStart -> transfer -> CopyEnd).
//
// Status codes (the runtime maps them 1:1 to gRPC):
//   INVALID_ARGUMENT    malformed request: empty or too long key/tenant/name,
//                       zero size, zero replica count, invalid id.
//   NOT_FOUND           unknown object, task, client (heartbeat: register
//                       again) or copy target segment.
//   ALREADY_EXISTS      PutStart of an existing key; a second replication task
//                       for a key; a copy target that already holds the
//                       object; mounting a mounted id with other parameters.
//   RESOURCE_EXHAUSTED  a `*_max` limit reached, or no room for a placement
//                       (after one eviction attempt).
//   FAILED_PRECONDITION Remove of a read-leased object; a copy call out of
//                       lifecycle order; a lease-less copy call on a leased
//                       task or the reverse; a non-allocatable target.
//   UNAVAILABLE         the object is still being written (GetReplicaList,
//                       Remove, CreateCopyTask); a segment is being unmounted;
//                       "master_recovering": after a restart, a key not
//                       reported yet, a PutStart or a copy task (Recovering()).
//   ABORTED             Remove while a replication task for the key runs; a
//                       stale version or lease id (fence) in PutEnd/PutRevoke
//                       or a copy call; the copy source vanished.
//   PERMISSION_DENIED   the caller does not own the put, task or segment.
//
// Concurrency: every public method is thread-safe. Object metadata lives in
// `metadata_shards` shards, each under its own absl::Mutex (through
// heatsink::Mutex, which ThreadSanitizer can see); the segment
// table, task manager and client registry each have their own mutex.
// Lock order: object shards (several only in ascending index) before any of
// the segment table, task manager and client registry; those three never
// nest with each other and never call out while locked. Observers are called
// with no master lock held.
//
// Determinism: driven from one thread, the same calls produce the same
// results, ids, offsets and observer calls in every process. Candidate orders
// (allocation, eviction, sweeps, unmount, task fetch) come from ordered
// containers or sorts with explicit tie-breaks; `random` allocation draws from
// an Rng forked from the Env's under the name "master.allocation".
//
// Background work: the constructor schedules a periodic sweep on the Env
// executor every `sweep_interval_ms` (dead clients, stuck puts, discarded-put
// release, task timeouts, eviction above the watermark). Allocation failures
// evict synchronously once; crossing the watermark posts an eviction pass.
// REQUIRES: the Env outlives the service, and the executor runs no master
// work concurrently with or after destruction (the destructor cancels the
// timers it owns).
#ifndef HEATSINK_CORE_MASTER_MASTER_SERVICE_H_
#define HEATSINK_CORE_MASTER_MASTER_SERVICE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/base/mutex.h"
#include "core/env/env.h"
#include "core/master/internal/client_registry.h"
#include "core/master/internal/manifest_journal.h"
#include "core/master/internal/object_table.h"
#include "core/master/internal/segment_table.h"
#include "core/master/internal/task_manager.h"
#include "core/master/master_knobs.h"
#include "core/master/master_observers.h"
#include "core/master/master_types.h"

namespace heatsink {

class MasterService {
 public:
  // REQUIRES: knobs.Validate().ok() (checked); env and its parts non-null.
  MasterService(Env* env, const MasterKnobs& knobs);
  // Validates the knobs first: INVALID_ARGUMENT instead of a failed check.
  static absl::StatusOr<std::unique_ptr<MasterService>> Create(Env* env, const MasterKnobs& knobs);
  ~MasterService();
  MasterService(const MasterService&) = delete;
  MasterService& operator=(const MasterService&) = delete;

  const MasterKnobs& knobs() const { return knobs_; }

  // --- Observers (extension points; see master_observers.h) ----------------
  // Set before serving or at any time; nullptr removes. Not owned; must
  // outlive the service or be removed first.
  void SetReadObserver(ReadObserver* observer);
  void SetReplicaRemovalObserver(ReplicaRemovalObserver* observer);
  // Without a ranker every optional replica has heat 0 (oldest lease first).
  void SetOptionalReplicaRanker(OptionalReplicaRanker* ranker);

  // --- Clients ------------------------------------------------------------
  // Registers or refreshes a client (idempotent).
  [[nodiscard]] absl::Status RegisterClient(const RegisterClientRequest& req);
  // NOT_FOUND when the master no longer knows the client (reaped): the client
  // must register again and remount its segments.
  [[nodiscard]] absl::Status Heartbeat(ClientId client);

  // --- Restart: manifests (docs/runtime.md, "Master restart") -------------
  // A store that (re)registers with a master that does not know it reports
  // what its segments hold, in calls of at most
  // manifest_entries_per_report_max entries, after mounting them with
  // manifest_pending; the last call (req.last) makes its segments
  // allocatable and counts the store as reported. Each entry is applied on
  // its own (results: one status per entry, the rest of the report is
  // applied whatever one entry's fate):
  //   OK                   the replica is the master's again (COMPLETE; a
  //                        dynamic one stays dynamic, without a lease).
  //   INVALID_ARGUMENT     bad name, version 0, size 0, an unknown tenant
  //                        (SetKnownTenants), or a size other than the
  //                        object's at the same version.
  //   NOT_FOUND / PERMISSION_DENIED  the segment is not mounted / not the
  //                        store's.
  //   OUT_OF_RANGE         the range exceeds the segment.
  //   ALREADY_EXISTS       the range overlaps another object's range, or the
  //                        object already has a replica on the segment.
  //   RESOURCE_EXHAUSTED   objects_max or replicas_per_object_max reached:
  //                        the entry's bytes are freed.
  //   FAILED_PRECONDITION  incomplete (a put or a copy in flight): discarded,
  //                        its bytes freed after put_start_release_timeout
  //                        (a writer may still be writing into them).
  //   ABORTED              an older version than the master's (the highest
  //                        complete version wins while recovering; after the
  //                        recovery the master's object wins): freed at once.
  // Every message names the store. The version counter moves above every
  // reported version, complete or not. NOT_FOUND for an unregistered client,
  // RESOURCE_EXHAUSTED for too many entries (nothing applied then).
  [[nodiscard]] absl::StatusOr<ReportManifestResponse> ReportManifest(
      ClientId client, const ReportManifestRequest& req);
  // Enters recovery: until `expected_stores` stores have sent their last
  // manifest report (0: never early) or `grace` has passed, unknown keys and
  // puts are UNAVAILABLE. The constructor calls it when restart_grace_ms > 0.
  void BeginRecovery(int64_t expected_stores, DurationNs grace);
  // Whether the recovery window is still open (ends it when it has passed).
  bool Recovering() const;
  // Tenants a manifest entry may name; empty (the default) accepts any.
  void SetKnownTenants(std::vector<std::string> tenants);
  // Stops keeping the stores' manifests: FetchTasks then carries no
  // manifest changes, so a restarted master could not rebuild from them.
  // For drivers whose master never restarts (the simulator, which models no
  // master crash): the journal is about a tenth of a trace replay's work.
  // REQUIRES: called before any segment is mounted.
  void DisableManifestJournal();
  // Copy task ids start at IdBase(epoch) + 1, so the tasks of one master
  // incarnation never carry the ids of an earlier one's: a copy that
  // outlived a crash cannot end a new task of the same key. The driver
  // gives each incarnation its own epoch (the runtime: the etcd leader's
  // epoch or the start time; the simulator: the number of restarts); epoch
  // 0, the default, keeps ids from 1. REQUIRES: no task created yet.
  void SetIdEpoch(uint32_t epoch);
  // The dynamic replica cap a manifest report respects
  // (dynamic_replication_max_memory_replicas, counted per domain when
  // `per_domain`; ReplicatedMaster sets it). A reported complete replica of
  // an object that already holds `max_memory_replicas` readable replicas
  // (in the replica's domain): a dynamic one is refused and freed; an
  // ordinary one is taken and a dynamic replica of the object (in that
  // domain) goes instead, so unique data never loses to an optional copy.
  // 0, the default: no cap (a master without dynamic replication).
  void SetReportedDynamicReplicaCap(int64_t max_memory_replicas, bool per_domain);
  static constexpr int kIdEpochShift = 40;
  static uint64_t IdBase(uint32_t epoch) {
    return (uint64_t{epoch} & ((uint64_t{1} << (64 - kIdEpochShift)) - 1)) << kIdEpochShift;
  }

  // --- Segments -----------------------------------------------------------
  // Mounts a segment owned by `client` (which must be registered: NOT_FOUND
  // otherwise). Idempotent for identical parameters.
  [[nodiscard]] absl::Status MountSegment(ClientId client, const MountSegmentRequest& req);
  // Unmounts: drops every replica on the segment (cancelling copy tasks that
  // use it) and deletes objects left with none. Idempotent: OK for an unknown
  // segment. PERMISSION_DENIED when `client` does not own it.
  [[nodiscard]] absl::Status UnmountSegment(ClientId client, SegmentId segment);
  // Drains (allocatable = false) or undrains a segment: while drained its
  // replicas stay readable, but it receives no new put or copy target and its
  // owner is not chosen as a dynamic copy source (a store being drained is
  // about to leave). An invalid `client` is the operator (any segment);
  // otherwise PERMISSION_DENIED when `client` does not own it. NOT_FOUND for
  // an unknown segment.
  [[nodiscard]] absl::Status SetSegmentAllocatable(ClientId client, SegmentId segment,
                                                   bool allocatable);

  // --- Puts ---------------------------------------------------------------
  // Allocates PROCESSING replicas and assigns a new version (a master-wide
  // counter, so a key's version increases across remove and re-put). A put
  // older than put_start_discard_timeout on the same key is discarded first.
  [[nodiscard]] absl::StatusOr<PutStartResponse> PutStart(ClientId client,
                                                          const PutStartRequest& req);
  // Makes every replica COMPLETE. Idempotent for the same version.
  [[nodiscard]] absl::Status PutEnd(ClientId client, const PutEndRequest& req);
  // Drops an unfinished put and frees its bytes.
  [[nodiscard]] absl::Status PutRevoke(ClientId client, const PutRevokeRequest& req);

  // Batches of the three calls above, one result per key in order (the
  // writer's view of Mooncake's BatchPut). INVALID_ARGUMENT, naming the
  // limit, for more than batch_keys_max keys (a request the master never
  // serves, not a transient shortage) and when BatchPutStart's names and
  // sizes differ in length; nothing is changed then.
  [[nodiscard]] absl::StatusOr<BatchPutStartResponse> BatchPutStart(
      ClientId client, const BatchPutStartRequest& req);
  [[nodiscard]] absl::StatusOr<BatchPutResponse> BatchPutEnd(ClientId client,
                                                             const BatchPutEndRequest& req);
  [[nodiscard]] absl::StatusOr<BatchPutResponse> BatchPutRevoke(ClientId client,
                                                                const BatchPutRevokeRequest& req);

  // --- Reads --------------------------------------------------------------
  // COMPLETE replicas with descriptors; grants (extends) the read lease to
  // now + default_kv_lease_ttl. Calls the ReadObserver once for the key.
  [[nodiscard]] absl::StatusOr<GetReplicaListResponse> GetReplicaList(
      const GetReplicaListRequest& req);
  // Per-key results, in order. INVALID_ARGUMENT, naming the limit, for more
  // than batch_keys_max names (nothing is read then).
  [[nodiscard]] absl::StatusOr<BatchGetReplicaListResponse> BatchGetReplicaList(
      const BatchGetReplicaListRequest& req);

  // Removes a COMPLETE object. FAILED_PRECONDITION while read-leased, ABORTED
  // while a replication task for the key exists, UNAVAILABLE while its put is
  // in progress.
  [[nodiscard]] absl::Status Remove(const RemoveRequest& req);

  // --- Tasks --------------------------------------------------------------
  // Creates an ordinary REPLICA_COPY task for the source replica's owner.
  [[nodiscard]] absl::StatusOr<CopyTaskResponse> CreateCopyTask(const CopyTaskRequest& req);
  // Extension for dynamic replication: creates a REPLICA_COPY task for a plan
  // chosen elsewhere; the payload carries plan.lease_id and plan.version.
  // Atomic: on any error nothing changed in the master, so the caller rolls
  // back its own pending state. ABORTED when plan.version is stale or the
  // source replica is gone or not COMPLETE.
  [[nodiscard]] absl::StatusOr<CopyTaskResponse> CreateCopyTaskForPlan(const CopyPlan& plan);
  // Retires a task (for example at its lease's expiry): a started copy is
  // revoked (observers see `cause`), the key's task slot is freed. NOT_FOUND
  // when the task is already gone.
  [[nodiscard]] absl::Status CancelCopyTask(TaskId task,
                                            RemovalCause cause = RemovalCause::kCopyCancelled);

  // Up to `batch_max` of the client's pending tasks, oldest first; they become
  // PROCESSING. Copy pacing: a task whose object's bytes do not fit
  // copy_budget_per_source_bytes or copy_budget_per_trunk_bytes next to the
  // copies already in flight stays pending for a later fetch, unless
  // nothing is in flight on that source or trunk (master_knobs.h).
  // RESOURCE_EXHAUSTED when batch_max > fetch_tasks_batch_max,
  // INVALID_ARGUMENT when batch_max is 0.
  [[nodiscard]] absl::StatusOr<FetchTasksResponse> FetchTasks(ClientId client, size_t batch_max);
  // The same, also acknowledging the caller's manifest changes up to
  // `manifest_ack_seq` and returning the next ones (manifest_changes).
  [[nodiscard]] absl::StatusOr<FetchTasksResponse> FetchTasks(ClientId client, size_t batch_max,
                                                              uint64_t manifest_ack_seq);
  // Finishes a fetched task. Success requires a completed CopyEnd; failure
  // revokes a started copy. PERMISSION_DENIED for a client that does not own
  // the task.
  [[nodiscard]] absl::Status MarkTaskComplete(ClientId client, const MarkTaskCompleteRequest& req);

  // --- Ordinary copy lifecycle (tasks without a lease id) -----------------
  // Validates the caller (the source segment's owner) and the fence, reserves
  // target quota and adds the PROCESSING target replica.
  [[nodiscard]] absl::StatusOr<CopyStartResponse> CopyStart(ClientId client,
                                                            const CopyStartRequest& req);
  // Target replica becomes COMPLETE and readable.
  [[nodiscard]] absl::Status CopyEnd(ClientId client, const CopyEndRequest& req);
  // Drops the target replica and frees its reservation.
  [[nodiscard]] absl::Status CopyRevoke(ClientId client, const CopyRevokeRequest& req);

  // --- Leased copy lifecycle (extension) ------------------------------------
  // The same lifecycle for tasks whose payload carries a lease id; the fence
  // must present that lease id. Dynamic replication wraps these with its lease
  // checks (DynamicReplicaCopyStart/End/Revoke).
  [[nodiscard]] absl::StatusOr<CopyStartResponse> LeasedCopyStart(ClientId client,
                                                                  const CopyStartRequest& req);
  [[nodiscard]] absl::Status LeasedCopyEnd(ClientId client, const CopyEndRequest& req);
  [[nodiscard]] absl::Status LeasedCopyRevoke(ClientId client, const CopyRevokeRequest& req);

  // --- Background work ------------------------------------------------------
  // One sweep now (the periodic timer calls this too): reaps dead clients,
  // discards stuck puts, releases discarded bytes, reaps timed-out tasks, and
  // evicts when above the watermark.
  void Sweep();
  // One eviction pass freeing about eviction_ratio of the used bytes (at
  // least `min_bytes`). Returns the bytes freed (or set to be freed).
  // Optional replicas go first (DESIGN 12): COMPLETE dynamic replicas that
  // are not their object's last COMPLETE replica, of objects with no put or
  // copy task in progress, coldest first (OptionalReplicaRanker). A dropped
  // replica leaves the replica lists at once; when its object is read-leased
  // its bytes stay allocated (as discarded) until the lease ends, since a
  // reader may be fetching them, and the watermark no longer counts them.
  // Whole objects (near-LRU, unleased, no put or task in progress) are
  // evicted only when no such replica is left and the pass still needs
  // bytes; when optional replicas gave some, objects go only for what is
  // still needed (`min_bytes`, or the way back under the high watermark),
  // not for the rest of the eviction ratio.
  uint64_t Evict(uint64_t min_bytes = 0);

  // Drops the COMPLETE dynamic replica of `name` on `segment` (cold release,
  // beyond the RFC; RemovalCause::kReleased). NOT_FOUND: no such object or
  // dynamic replica; FAILED_PRECONDITION: the object is read-leased, has a
  // copy task or a put in progress, or the replica is its last COMPLETE one.
  [[nodiscard]] absl::Status ReleaseDynamicReplica(const ObjectName& name, SegmentId segment);

  // --- Views (extension points) -------------------------------------------
  std::vector<SegmentView> ListSegments() const;  // ascending id
  std::optional<SegmentView> GetSegment(SegmentId id) const;
  std::optional<SegmentLoadView> GetSegmentLoad(SegmentId id) const;
  // Every replica of the object, any status. Grants no lease, notifies no one.
  [[nodiscard]] absl::StatusOr<ObjectView> GetObjectView(const ObjectName& name) const;
  std::optional<Task> GetTask(TaskId id) const;
  MasterStats Stats() const;

  // OK, or INTERNAL naming the first violated invariant: per segment,
  // used + reserved == its allocator's allocated bytes, used == bytes of its
  // put/COMPLETE replicas + discarded puts, reserved == bytes of its PROCESSING
  // copy targets, used + reserved <= capacity; every replica's version equals
  // its object's; no two replicas of an object share a segment; replica
  // counts within limits; every task matches its object (version, slot,
  // source COMPLETE, target PROCESSING exactly while started); queues within
  // their limits. Locks everything; meant for tests and the simulator.
  [[nodiscard]] absl::Status CheckInvariants() const;

 private:
  using Shard = master_internal::Shard;
  using ObjectMeta = master_internal::ObjectMeta;
  using ObjectNameRef = master_internal::ObjectNameRef;
  using ReplicaRecord = master_internal::ReplicaRecord;
  using TaskRecord = master_internal::TaskRecord;
  using Removals = std::vector<ReplicaRemoval>;

  enum class CopyKind { kOrdinary, kLeased };

  struct Counters {
    std::atomic<int64_t> puts_completed{0};
    std::atomic<int64_t> puts_revoked{0};
    std::atomic<int64_t> puts_discarded{0};
    std::atomic<int64_t> eviction_passes{0};
    std::atomic<int64_t> evicted_objects{0};
    std::atomic<int64_t> evicted_dynamic_replicas{0};
    std::atomic<int64_t> released_dynamic_replicas{0};
    std::atomic<int64_t> evictions_with_optional_left{0};
    std::atomic<uint64_t> evicted_bytes{0};
    std::atomic<int64_t> copy_tasks_created{0};
    std::atomic<int64_t> copies_completed{0};
    std::atomic<int64_t> copies_revoked{0};
    std::atomic<int64_t> tasks_succeeded{0};
    std::atomic<int64_t> tasks_failed{0};
    std::atomic<int64_t> tasks_timed_out{0};
    std::atomic<int64_t> tasks_cancelled{0};
    std::atomic<int64_t> clients_reaped{0};
    std::atomic<int64_t> manifest_accepted{0};
    std::atomic<int64_t> manifest_discarded{0};
    std::atomic<int64_t> manifest_rejected{0};
  };

  // Checks lengths; returns the name with the tenant normalised (views into
  // `name` or the default tenant constant).
  [[nodiscard]] absl::StatusOr<ObjectNameRef> CheckName(const ObjectName& name) const;
  // RESOURCE_EXHAUSTED when a batch call names more than batch_keys_max keys.
  [[nodiscard]] absl::Status CheckBatchSize(size_t keys) const;
  static ObjectName Own(const ObjectNameRef& ref);

  // Removes replica `index` of `meta`, releasing its bytes, and records the
  // removal. Does not touch tasks. REQUIRES: shard lock held.
  void RemoveReplicaLocked(const ObjectNameRef& name, ObjectMeta& meta, size_t index,
                           RemovalCause cause, Removals& out);
  // Drops replica `index` (never the object's last: REQUIRES another) with
  // `cause`: freed at once when the object's read lease has passed, else kept
  // allocated as discarded until the lease ends. False (nothing changed)
  // when the discarded table is full. REQUIRES: shard lock held.
  bool DropReplicaLocked(const ObjectNameRef& name, ObjectMeta& meta, size_t index,
                         RemovalCause cause, Removals& out);
  // Removes all replicas and erases the object. REQUIRES: shard lock held, no
  // replication task.
  void DeleteObjectLocked(Shard& shard, const ObjectNameRef& name, RemovalCause cause,
                          Removals& out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(shard.mu);
  // Ends task `id` of object `meta` (revoking a started copy with `cause`),
  // frees the key's slot and updates the load counters. REQUIRES: the
  // object's shard lock held.
  void FinishTaskLocked(const ObjectNameRef& name, ObjectMeta& meta, TaskId id,
                        RemovalCause cause, Removals& out);
  // Discards an unfinished put whose discard timeout passed. False when the
  // discarded table is full (the put stays).
  bool DiscardPutLocked(Shard& shard, const ObjectNameRef& name, Removals& out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(shard.mu);
  absl::Status PutStartLocked(Shard& shard, const ObjectNameRef& name, ClientId client,
                              const PutStartRequest& req, Removals& removals,
                              bool* eviction_may_help, std::optional<PutStartResponse>* response)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(shard.mu);

  absl::StatusOr<CopyTaskResponse> CreateCopyTaskInternal(const ObjectName& name,
                                                          const CopyPlan* plan,
                                                          SegmentId target_segment,
                                                          SegmentId source_segment);
  // Looks the task up and checks caller, kind and fence. REQUIRES: the
  // object's shard lock held (so the task cannot change underneath).
  absl::StatusOr<TaskRecord> CheckCopyCall(ClientId client, const CopyTaskFence& fence,
                                           CopyKind kind) const;
  absl::StatusOr<CopyStartResponse> CopyStartInternal(ClientId client, const CopyTaskFence& fence,
                                                      CopyKind kind);
  absl::Status CopyEndInternal(ClientId client, const CopyTaskFence& fence, CopyKind kind);
  absl::Status CopyRevokeInternal(ClientId client, const CopyTaskFence& fence, CopyKind kind);
  // Finds the object a task belongs to, locking its shard; used by entry
  // points that start from a task id.
  std::optional<TaskRecord> PeekTask(TaskId id) const { return tasks_.Find(id); }

  // Unmounts with the master's authority (dead clients).
  void UnmountInternal(const std::shared_ptr<master_internal::SegmentHandle>& segment,
                       RemovalCause cause);
  void ReapDeadClients(TimeNs now);
  void ReapTimedOutTasks(TimeNs now);
  void ReapStuckPuts(TimeNs now);
  void MaybeScheduleEviction();
  // Eviction's two phases (Evict): optional replicas, then whole objects.
  // Each frees up to `target` bytes and returns what it freed.
  uint64_t EvictOptionalReplicas(uint64_t target);
  uint64_t EvictObjects(TimeNs now, uint64_t target);
  // A dynamic replica eviction could drop at once (object unleased) exists.
  bool OptionalReplicaLeft(TimeNs now) const;
  void ScheduleSweep();

  // The store owning `r`'s segment now holds / no longer holds it.
  void JournalReplica(const ObjectNameRef& name, Version version, const ReplicaRecord& r);
  void JournalRemoval(const ReplicaRecord& r);
  // One manifest entry (ReportManifest). REQUIRES: `name` checked.
  absl::Status ApplyManifestEntry(ClientId client, const ObjectNameRef& name,
                                  const ManifestEntry& e, bool recovering, Removals& removals);
  // Makes room under the dynamic cap for a reported replica, as
  // JudgeSameVersion decided: drops a complete dynamic replica, or revokes
  // the dynamic copy in flight. REQUIRES: the object's shard lock.
  void MakeRoomForReported(const ObjectNameRef& name, ObjectMeta& meta,
                           std::optional<size_t> dynamic_to_drop, bool revoke_copy_in_flight,
                           Removals& removals);
  // Takes the entry's range and lets it go: at once (`release_at` <= now)
  // or as a discarded range freed at `release_at`.
  void ReleaseClaimed(const master_internal::Allocation& a, TimeNs release_at);
  void RaiseVersionAbove(Version v);

  void Notify(const Removals& removals) const;
  TimeNs Now() const { return env_->NowNs(); }
  ReplicaId NextReplicaId() { return ReplicaId(next_replica_id_.fetch_add(1)); }

  Env* const env_;
  const MasterKnobs knobs_;
  master_internal::ObjectShards shards_;
  master_internal::SegmentTable segments_;
  master_internal::TaskManager tasks_;
  master_internal::ClientRegistry clients_;
  master_internal::ManifestJournal journal_;
  // False after DisableManifestJournal (set before any concurrent call).
  bool journal_enabled_ = true;
  // SetReportedDynamicReplicaCap; set before serving.
  int64_t reported_dynamic_cap_ = 0;
  bool reported_dynamic_cap_per_domain_ = false;

  std::atomic<Version> next_version_{1};
  std::atomic<uint64_t> next_replica_id_{1};
  std::atomic<int64_t> object_count_{0};
  std::atomic<ReadObserver*> read_observer_{nullptr};
  std::atomic<ReplicaRemovalObserver*> removal_observer_{nullptr};
  std::atomic<OptionalReplicaRanker*> optional_ranker_{nullptr};
  mutable Counters counters_;

  // Recovery after a restart (BeginRecovery); recovering_ is the fast path.
  mutable std::atomic<bool> recovering_{false};
  mutable Mutex recovery_mu_;
  TimeNs recovery_deadline_ns_ ABSL_GUARDED_BY(recovery_mu_) = 0;
  int64_t recovery_expected_stores_ ABSL_GUARDED_BY(recovery_mu_) = 0;
  absl::btree_set<ClientId> reported_stores_ ABSL_GUARDED_BY(recovery_mu_);
  absl::btree_set<std::string> known_tenants_ ABSL_GUARDED_BY(recovery_mu_);

  Mutex timer_mu_;
  TimerId sweep_timer_ ABSL_GUARDED_BY(timer_mu_) = kNoTimer;
  TimerId eviction_timer_ ABSL_GUARDED_BY(timer_mu_) = kNoTimer;
  bool stopping_ ABSL_GUARDED_BY(timer_mu_) = false;
};

}  // namespace heatsink

#endif  // HEATSINK_CORE_MASTER_MASTER_SERVICE_H_
