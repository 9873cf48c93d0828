// File: core/master/master_types.h
//
// Plain request/response structs of MasterService (the runtime maps them 1:1
// to protobuf messages), the task and payload types, and the read-only views
// that other core components (replication, the simulator) use to look at
// segments and objects without reaching into the master's tables.
//
// Names follow Mooncake Store: a segment is a MEMORY region mounted by a store
// client; an object has one or more replicas, each in one segment; a
// REPLICA_COPY task asks the client owning the source replica to copy it to a
// target segment.
#ifndef HEATSINK_CORE_MASTER_MASTER_TYPES_H_
#define HEATSINK_CORE_MASTER_MASTER_TYPES_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/env/data_mover.h"
#include "core/env/time.h"
#include "core/model/ids.h"

namespace heatsink {

// ---------------------------------------------------------------------------
// Enumerations
// ---------------------------------------------------------------------------

// Only MEMORY replicas exist in this model (Mooncake also has DISK).
enum class ReplicaKind { kMemory };

// PROCESSING: bytes are being written (by a put or a copy); never readable.
// COMPLETE: readable.
enum class ReplicaStatus : uint8_t { kProcessing, kComplete };

// Who created the replica: PutStart or a REPLICA_COPY task's CopyStart.
enum class ReplicaOrigin : uint8_t { kPut, kCopy };

enum class TaskType { kReplicaCopy };

// PENDING: queued for its client. PROCESSING: fetched by the client.
enum class TaskStatus { kPending, kProcessing };

// Why a replica left the master. Observers (dynamic replication's recreate
// cooldown) decide which causes matter to them.
enum class RemovalCause {
  kEviction,       // high-watermark or allocation-failure eviction
  kUnmount,        // its segment was unmounted by the owner
  kClientDead,     // its segment's owner missed heartbeats for client_live_ttl_sec
  kRemove,         // an explicit Remove of the object
  kPutRevoked,     // PutRevoke of an unfinished put
  kPutDiscarded,   // an unfinished put passed put_start_discard_timeout_sec
  kCopyRevoked,    // CopyRevoke, or a failed MarkTaskComplete, of a started copy
  kCopyTimedOut,   // a started copy's task passed processing_task_timeout_sec
  kCopyCancelled,  // a started copy's task was cancelled (CancelCopyTask, source gone)
  kReleased,       // a cold dynamic replica released by ReleaseDynamicReplica
  kSuperseded,     // a store reported a newer complete version while recovering
};

absl::string_view ReplicaStatusName(ReplicaStatus s);
absl::string_view ReplicaOriginName(ReplicaOrigin o);
absl::string_view TaskTypeName(TaskType t);
absl::string_view TaskStatusName(TaskStatus s);
absl::string_view RemovalCauseName(RemovalCause c);

// ---------------------------------------------------------------------------
// Segments and replica descriptors
// ---------------------------------------------------------------------------

// Identity of a mounted segment. Immutable while mounted and shared (not
// copied) by every replica on it and every descriptor handed out, so the read
// path copies no strings.
struct SegmentLocation {
  SegmentId id;
  std::string name;
  ClientId owner;
  HostId host;
  Domain domain;  // normalised: never empty
  std::string transport_endpoint;
  // Where the segment's store also serves its bytes over the gRPC store
  // service (runtime `data_path = grpc`); empty when it does not.
  std::string data_service_endpoint;
};

// What a reader or writer needs to reach one replica's bytes.
struct ReplicaDescriptor {
  ReplicaId replica_id;
  ReplicaKind kind = ReplicaKind::kMemory;
  ReplicaStatus status = ReplicaStatus::kProcessing;
  ReplicaOrigin origin = ReplicaOrigin::kPut;
  SegmentId segment_id;
  uint64_t offset = 0;  // byte offset inside the segment
  uint64_t size_bytes = 0;
  Version version = 0;  // the object version these bytes belong to
  // Reserved for dynamic replication: a replica created by a leased copy.
  bool dynamic = false;
  LeaseId lease_id;
  // Host, domain, transport endpoint. Never null in master output.
  std::shared_ptr<const SegmentLocation> location;
};

// ---------------------------------------------------------------------------
// Requests and responses
// ---------------------------------------------------------------------------

struct RegisterClientRequest {
  ClientId client_id;  // chosen by the client; must be valid (non-zero)
  HostId host;
  Domain domain;  // empty = default
};

struct MountSegmentRequest {
  SegmentId segment_id;  // chosen by the client; must be valid (non-zero)
  std::string name;
  HostId host;
  Domain domain;  // empty = default
  uint64_t capacity_bytes = 0;
  std::string transport_endpoint;
  // False: existing replicas stay readable but nothing new is placed here.
  bool allocatable = true;
  std::string data_service_endpoint;  // see SegmentLocation
  // The store will report a manifest of what this segment holds
  // (ReportManifest): nothing is placed on the segment until the store's
  // last report, so no new put or copy lands on bytes not yet reported.
  bool manifest_pending = false;
};

struct PutStartRequest {
  ObjectName name;  // empty tenant = default
  uint64_t size_bytes = 0;
  uint32_t replica_num = 1;  // distinct segments, all or nothing
  // Tried first, in order; any not usable (unknown, full, not allocatable)
  // falls back to the allocation strategy.
  std::vector<SegmentId> preferred_segments;
};

struct PutStartResponse {
  Version version = 0;
  // PROCESSING replicas the writer fills before PutEnd, in allocation order.
  std::vector<ReplicaDescriptor> replicas;
};

// PutEnd and PutRevoke present the version PutStart returned, so a writer
// whose put was discarded cannot finish a later put of the same key.
struct PutEndRequest {
  ObjectName name;
  Version version = 0;
};
struct PutRevokeRequest {
  ObjectName name;
  Version version = 0;
};

// Mooncake's BatchPutStart / BatchPutEnd / BatchPutRevoke: the blocks one
// writer puts together (an inference request's new KV blocks) in one call.
// Each key is started, ended or revoked exactly as by the single-key call;
// results are per key, in request order.
struct BatchPutStartRequest {
  std::vector<ObjectName> names;
  std::vector<uint64_t> sizes_bytes;  // one per name
  uint32_t replica_num = 1;
  std::vector<SegmentId> preferred_segments;  // for every key, as in PutStart
};

struct BatchPutStartResponse {
  std::vector<absl::StatusOr<PutStartResponse>> results;
};

struct BatchPutEndRequest {
  std::vector<PutEndRequest> puts;
};
struct BatchPutRevokeRequest {
  std::vector<PutRevokeRequest> puts;
};

// One status per put of a BatchPutEnd or BatchPutRevoke, same order.
struct BatchPutResponse {
  std::vector<absl::Status> results;
};

struct GetReplicaListRequest {
  ObjectName name;
  // Who reads and from where; the heat window keys on these (stage 2: domain).
  ClientId requester;
  Domain requester_domain;  // empty = default
};

struct GetReplicaListResponse {
  Version version = 0;
  uint64_t size_bytes = 0;
  // COMPLETE replicas in master order (put replicas first, then copies).
  std::vector<ReplicaDescriptor> replicas;
  // The read lease this call granted or extended: the object is neither
  // evicted nor removed before this time.
  TimeNs lease_expiry_ns = 0;
};

struct BatchGetReplicaListRequest {
  std::vector<ObjectName> names;
  ClientId requester;
  Domain requester_domain;
};

struct BatchGetReplicaListResponse {
  // One result per requested name, same order.
  std::vector<absl::StatusOr<GetReplicaListResponse>> results;
};

struct RemoveRequest {
  ObjectName name;
};

// What a REPLICA_COPY task asks its client to do.
struct ReplicaCopyPayload {
  ObjectName name;
  Version version = 0;  // the object version the copy belongs to (fence)
  ReplicaId source_replica;
  SegmentId source_segment;
  uint64_t source_offset = 0;
  SegmentId target_segment;
  uint64_t size_bytes = 0;
  // Invalid (0) for ordinary copies. Reserved for dynamic replication: the
  // lease that authorised the copy; such tasks go through the Leased* (later
  // Dynamic*) copy calls, never the ordinary ones.
  LeaseId lease_id;

  bool leased() const { return lease_id.valid(); }
};

struct Task {
  TaskId id;
  TaskType type = TaskType::kReplicaCopy;
  TaskStatus status = TaskStatus::kPending;
  ClientId assigned_client;  // owner of the source segment
  ReplicaCopyPayload copy;
  TimeNs created_ns = 0;
  TimeNs updated_ns = 0;  // when it last changed status
};

// An ordinary copy request (Mooncake's Copy): copy `name` to
// `target_segment`, from `source_segment` when given, else from the COMPLETE
// replica the master picks with a stable tie-break.
struct CopyTaskRequest {
  ObjectName name;
  SegmentId target_segment;
  SegmentId source_segment;  // optional (0: master picks)
};

// A copy decided elsewhere (dynamic replication's placement): every field is
// checked against the master's state when the task is created.
struct CopyPlan {
  ObjectName name;
  Version version = 0;
  ReplicaId source_replica;
  SegmentId target_segment;
  LeaseId lease_id;  // valid: the task carries a dynamic (leased) payload
};

struct CopyTaskResponse {
  TaskId task_id;
  ClientId source_client;
  ReplicaCopyPayload payload;
};

// Presented by the task's client at CopyStart, CopyEnd and CopyRevoke: the
// task id plus the version and lease id recorded in the task, so a stale task
// can neither start, complete nor revoke a newer copy.
struct CopyTaskFence {
  TaskId task_id;
  Version version = 0;
  LeaseId lease_id;  // 0 for ordinary copies
};
using CopyStartRequest = CopyTaskFence;
using CopyEndRequest = CopyTaskFence;
using CopyRevokeRequest = CopyTaskFence;

struct CopyStartResponse {
  ReplicaId target_replica;
  // The bytes to move: source replica to the reserved target range.
  CopyRange range;
};

// CheckCopyLease (MasterEndpoint): the store serving `segment` asks
// whether `reader` may read [offset, offset + size) of it under the copy
// lease `lease_id` (docs/runtime.md, "Who may read a range").
struct CopyLeaseQuery {
  LeaseId lease_id;
  ClientId reader;
  SegmentId segment;
  uint64_t offset = 0;
  uint64_t size = 0;
};

// The answer to a CopyLeaseQuery that allows the read: how long the lease
// still lives (the asking store may reuse the answer that long).
struct CopyLeaseGrant {
  DurationNs remaining_ns = 0;
};

// One replica as its store knows it: the unit of a store's manifest, which
// a store reports when it (re)registers with a master that does not know it
// (ReportManifest), and which the master keeps current in the store through
// ManifestChanges. Keyed by (segment_id, offset) at the store.
struct ManifestEntry {
  ObjectName name;  // empty tenant = default
  Version version = 0;
  uint64_t size_bytes = 0;
  SegmentId segment_id;
  uint64_t offset = 0;
  // False: a put not yet ended or a copy not yet ended (bytes may be
  // partial). Such entries are discarded by a rebuilding master.
  bool complete = false;
  ReplicaOrigin origin = ReplicaOrigin::kPut;
  bool dynamic = false;
  // The lease and version fence of a dynamic copy in flight (informational:
  // leases never outlive the master that granted them).
  LeaseId lease_id;
};

// A change of one (segment, offset) in a store's manifest, in the master's
// order (seq ascending, master-wide). present = false removes the entry at
// (entry.segment_id, entry.offset); only those two fields are set then.
struct ManifestChange {
  uint64_t seq = 0;
  bool present = false;
  ManifestEntry entry;
};

struct ReportManifestRequest {
  std::vector<ManifestEntry> entries;
  // The store's last report: its segments become allocatable and it counts
  // as having reported (recovery ends when every expected store did).
  bool last = false;
};

struct ReportManifestResponse {
  // One per entry, same order. OK: the replica is the master's again; any
  // other status: the store drops the entry (rejected or discarded; the
  // message says why and names the store).
  std::vector<absl::Status> results;
};

struct FetchTasksResponse {
  std::vector<Task> tasks;  // oldest first
  // Changes of the caller's manifest after the acknowledged sequence number
  // (FetchTasks' manifest_ack_seq), at most manifest_changes_per_fetch_max.
  std::vector<ManifestChange> manifest_changes;
};

struct MarkTaskCompleteRequest {
  TaskId task_id;
  bool succeeded = false;
  std::string message;  // why it failed (for logs)
};

// ---------------------------------------------------------------------------
// Read-only views
// ---------------------------------------------------------------------------

// Load of one segment as the master knows it. Reads themselves go from reader
// to store directly, so the master counts the replica lists it handed out
// that named the segment, not bytes read.
struct SegmentLoadView {
  int64_t copy_tasks_as_source = 0;        // copy tasks created, not finished
  int64_t copies_in_flight_as_source = 0;  // copies started, not ended/revoked
  int64_t copies_in_flight_as_target = 0;
  int64_t replica_lists_served_total = 0;  // monotonic; difference it over time
};

struct SegmentView {
  SegmentLocation location;
  uint64_t capacity_bytes = 0;
  uint64_t used_bytes = 0;      // COMPLETE + put PROCESSING + discarded-put bytes
  uint64_t reserved_bytes = 0;  // copy targets between CopyStart and CopyEnd
  uint64_t free_bytes = 0;      // capacity - used - reserved
  bool allocatable = true;
  bool unmounting = false;
  int64_t replica_count = 0;
  SegmentLoadView load;
};

struct ObjectView {
  ObjectName name;
  Version version = 0;
  uint64_t size_bytes = 0;
  std::vector<ReplicaDescriptor> replicas;  // every replica, any status
  TimeNs lease_expiry_ns = 0;
  TaskId replication_task;  // the key's one replication task, if any
  bool put_in_progress = false;
  ClientId put_client;
};

// Aggregate state and counters for reports and tests.
struct MasterStats {
  int64_t objects = 0;
  int64_t segments = 0;
  int64_t clients = 0;
  int64_t tasks_pending = 0;
  int64_t tasks_processing = 0;
  // Bytes of fetched copies not yet ended or revoked (copy pacing,
  // copy_budget_per_*_bytes).
  int64_t copy_bytes_in_flight = 0;
  uint64_t capacity_bytes = 0;
  uint64_t used_bytes = 0;
  uint64_t reserved_bytes = 0;
  int64_t discarded_puts = 0;
  // Monotonic counters.
  int64_t puts_completed_total = 0;
  int64_t puts_revoked_total = 0;
  int64_t puts_discarded_total = 0;
  int64_t eviction_passes_total = 0;
  int64_t evicted_objects_total = 0;
  // Dynamic (optional) replicas dropped by eviction before any object
  // (DESIGN 12); their bytes are part of evicted_bytes_total.
  int64_t evicted_dynamic_replicas_total = 0;
  int64_t released_dynamic_replicas_total = 0;
  // Object-eviction passes that began while a dynamic replica of an unleased
  // object could still have been dropped instead (DESIGN 12: stays 0 unless
  // dynamic replicas appear concurrently with the pass).
  int64_t evictions_with_optional_left_total = 0;
  uint64_t evicted_bytes_total = 0;
  int64_t copy_tasks_created_total = 0;
  int64_t copies_completed_total = 0;
  int64_t copies_revoked_total = 0;
  int64_t tasks_succeeded_total = 0;
  int64_t tasks_failed_total = 0;
  int64_t tasks_timed_out_total = 0;
  int64_t tasks_cancelled_total = 0;
  // Pending copy tasks a FetchTasks held back for the copy budgets.
  int64_t copy_fetches_deferred_total = 0;
  int64_t clients_reaped_total = 0;
  // Restart: manifests rebuilt from (ReportManifest).
  bool recovering = false;
  int64_t manifest_entries_accepted_total = 0;
  int64_t manifest_entries_discarded_total = 0;  // incomplete or an older version
  int64_t manifest_entries_rejected_total = 0;   // invalid, overlapping, out of range
  int64_t manifest_changes_pending = 0;          // not yet acknowledged by stores
};

}  // namespace heatsink

#endif  // HEATSINK_CORE_MASTER_MASTER_TYPES_H_
