// File: runtime/client/heatsink_client.h
//
// The C++ client library: Put, Get, BatchGet and Remove of one tenant's
// objects against a Heatsink cluster. Control calls go to the master through
// a MasterClient (GrpcMasterClient in production); bytes move directly
// between this process and the stores through an ObjectDataPath: the stores'
// framed TCP data endpoints (the default) or their gRPC store service
// (runtime/rpc/grpc_store_client.h, `data_path = grpc`).
//
//   Put:    PutStart -> write the bytes to every PROCESSING replica -> PutEnd
//           (PutRevoke when a write fails, so no partial object is readable).
//   BatchPut: the same for many keys in three master calls (Mooncake's
//           BatchPut): BatchPutStart -> the bytes of every started key ->
//           BatchPutEnd of the keys whose bytes all landed and BatchPutRevoke
//           of the others; a status per key.
//   Get:    GetReplicaList (concurrent Gets of one client coalesced into
//           BatchGetReplicaList calls, lookup_coalescer.h) -> pick one replica with the core's
//           replica selection policy (`first` or `spread`, the same code the simulator runs) ->
//           read it from its store. Each read reports the reader's client id and domain, which the
//           master's heat window keys on.
//   Remove: Remove.
//
// Tenancy: every name this client sends carries its tenant. A master that
// binds tenants to client ids (runtime/rpc/tenant_bindings.h) refuses names
// of any other tenant with PERMISSION_DENIED.
//
// Calls block the calling thread until the master and the stores answered
// (each step bounded by its own deadline). Thread-safe.
#ifndef HEATSINK_RUNTIME_CLIENT_HEATSINK_CLIENT_H_
#define HEATSINK_RUNTIME_CLIENT_HEATSINK_CLIENT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/replication/replication_knobs.h"
#include "core/worker/master_client.h"
#include "runtime/client/lookup_coalescer.h"
#include "runtime/client/object_data_path.h"
#include "runtime/transport/tcp_knobs.h"

namespace heatsink::runtime {

struct HeatsinkClientOptions {
  ClientId client_id;  // the reader/writer identity the master sees (non-zero)
  HostId host = "localhost";
  Domain domain;       // the reader's domain (empty = default)
  std::string tenant;  // empty = default tenant
  uint32_t replica_num = 1;
  // Segments Put asks for first (PutStartRequest::preferred_segments).
  std::vector<SegmentId> preferred_segments;
  ReplicaSelectionPolicy replica_selection_policy = ReplicaSelectionPolicy::kFirst;
  uint64_t replica_selection_seed = 1;
  // Data-plane limits and timeouts for reads and writes over the default
  // (TCP) data path.
  TcpTransportKnobs tcp;
  // Largest object Put accepts and Get reads.
  uint64_t object_bytes_max = uint64_t{1} << 30;
  // Lookup coalescing (lookup_coalescer.h): concurrent Get/Lookup calls of
  // this client share BatchGetReplicaList calls, with at most this many
  // master calls out at once. A lone caller's lookup still goes out at once
  // as one GetReplicaList; a lookup waits at most for the call ahead of it.
  // 0 turns coalescing off: every lookup is its own GetReplicaList.
  size_t lookup_batches_in_flight_max = 1;
  // Names in one coalesced batch (1 .. the master's batch_keys_max).
  size_t lookup_batch_keys_max = 128;

  [[nodiscard]] absl::Status Validate() const;
};

// What a Get read and from where (for tests and the load generator).
struct GetResult {
  std::string bytes;        // empty for GetInto
  uint64_t size_bytes = 0;  // the object's size
  Version version = 0;
  SegmentId segment;         // the replica that was read
  size_t replica_count = 0;  // readable replicas the master listed
};

class HeatsinkClient {
 public:
  // Moves bytes over the stores' TCP data endpoints (options.tcp).
  // REQUIRES: options.Validate().ok() (checked); `master` outlives the client.
  HeatsinkClient(MasterClient* master, HeatsinkClientOptions options);
  // Moves bytes through `data_path`. REQUIRES: as above; `data_path` (not
  // null) outlives the client.
  HeatsinkClient(MasterClient* master, ObjectDataPath* data_path, HeatsinkClientOptions options);
  HeatsinkClient(const HeatsinkClient&) = delete;
  HeatsinkClient& operator=(const HeatsinkClient&) = delete;

  // The master's status (ALREADY_EXISTS for an existing key, ...); a failed
  // write revokes the put and returns the write's error.
  [[nodiscard]] absl::Status Put(absl::string_view key, absl::string_view bytes);
  // One status per key, in order: the master's (ALREADY_EXISTS, no room,
  // ...), RESOURCE_EXHAUSTED for a value above object_bytes_max (never
  // started), or the write's error (that key revoked, the others unharmed).
  // INVALID_ARGUMENT for the whole batch when keys and values differ in
  // number or the batch is above the master's batch limit; the master's
  // error when a whole call fails (keys it started are then revoked).
  [[nodiscard]] absl::StatusOr<std::vector<absl::Status>> BatchPut(
      absl::Span<const std::string> keys, absl::Span<const absl::string_view> values);
  [[nodiscard]] absl::StatusOr<GetResult> Get(absl::string_view key);
  // Get into the caller's memory: the object's bytes land in
  // out[0, size_bytes) and GetResult::bytes stays empty. No allocation, so a
  // reader that reuses its buffer pays no page faults per read (Mooncake's
  // Get into a registered buffer). OUT_OF_RANGE, naming the object's size,
  // when `out` is smaller than the object (nothing is read).
  [[nodiscard]] absl::StatusOr<GetResult> GetInto(absl::string_view key, absl::Span<uint8_t> out);
  // The same into a buffer the call grows (never shrinks) to the object's
  // size first: one lookup whatever the size, and a reader that keeps its
  // buffer touches new pages only when an object is larger than any before.
  [[nodiscard]] absl::StatusOr<GetResult> GetInto(absl::string_view key,
                                                  std::vector<uint8_t>* buffer);
  // One result per key, same order; INVALID_ARGUMENT for the whole batch
  // above the master's batch limit.
  [[nodiscard]] absl::StatusOr<std::vector<absl::StatusOr<GetResult>>> BatchGet(
      absl::Span<const std::string> keys);
  [[nodiscard]] absl::Status Remove(absl::string_view key);

  // Only the replica list (one GetReplicaList, no bytes): the master's side
  // of a read, as the load generator drives it.
  [[nodiscard]] absl::StatusOr<GetReplicaListResponse> Lookup(absl::string_view key);

  const HeatsinkClientOptions& options() const { return options_; }
  // Zero when coalescing is off.
  LookupCoalescerStats lookup_stats() const;

 private:
  ObjectName Name(absl::string_view key) const;
  // Writes `bytes` to every replica of a started put.
  absl::Status WriteReplicas(const PutStartResponse& put, absl::string_view bytes);
  // Reads the replica the selection policy picks from `list` into the
  // memory `buffer_for(size)` gives for the object's size: OUT_OF_RANGE when
  // it gives less than that, the bytes in its first `size` bytes otherwise.
  absl::StatusOr<GetResult> ReadOne(const ObjectName& name, const GetReplicaListResponse& list,
                                    absl::FunctionRef<absl::Span<uint8_t>(uint64_t)> buffer_for);
  // ReadOne into GetResult::bytes.
  absl::StatusOr<GetResult> ReadOneToString(const ObjectName& name,
                                            const GetReplicaListResponse& list);

  MasterClient* const master_;
  const HeatsinkClientOptions options_;
  TcpObjectDataPath tcp_path_;
  ObjectDataPath* const data_path_;
  std::unique_ptr<LookupCoalescer> lookups_;  // null: coalescing off
};

// Writes `bytes` at [offset, +size) of `segment` on the store serving
// `endpoint` (the data plane's WRITE conversation); OK once every byte landed.
[[nodiscard]] absl::Status WriteRemote(absl::string_view endpoint, SegmentId segment,
                                       uint64_t offset, absl::string_view bytes,
                                       const TcpTransportKnobs& knobs);

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_CLIENT_HEATSINK_CLIENT_H_
