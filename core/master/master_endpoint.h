// File: core/master/master_endpoint.h
//
// MasterEndpoint: every call a store, a writer or a reader makes to the
// master, synchronous, declared once. core/replication's ReplicatedMaster is
// its one implementation (the master with dynamic replication's lease checks
// on the Dynamic* calls). The drivers adapt it and declare nothing of their
// own: the gRPC server (runtime/rpc/master_server.h) serves it, and the
// asynchronous MasterClient of the simulator (modelled control latency) and
// of single-process set-ups (LocalMasterClient) are one adapter over it
// (core/worker/master_endpoint_client.h).
//
// Adding a master call: declare it here and implement it in
// ReplicatedMaster; callers in process then reach it. Callers that use the
// asynchronous MasterClient get one line in MasterEndpointClient beside its
// declaration in master_client.h; a call served over gRPC also needs its
// proto message and the two ends in runtime/rpc.
//
// Status codes and semantics are MasterService's (core/master/
// master_service.h) for the plain calls and DynamicReplication's
// (core/replication/dynamic_replication.h) for the Dynamic* calls and
// CheckCopyLease. `client` is the caller, as established by the transport.
//
// Thread safety: every call is thread-safe.
#ifndef HEATSINK_CORE_MASTER_MASTER_ENDPOINT_H_
#define HEATSINK_CORE_MASTER_MASTER_ENDPOINT_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/master/master_types.h"
#include "core/model/ids.h"

namespace heatsink {

class MasterEndpoint {
 public:
  virtual ~MasterEndpoint() = default;

  // --- Clients and segments ------------------------------------------------
  [[nodiscard]] virtual absl::Status RegisterClient(const RegisterClientRequest& req) = 0;
  [[nodiscard]] virtual absl::Status Heartbeat(ClientId client) = 0;
  [[nodiscard]] virtual absl::Status MountSegment(ClientId client,
                                                  const MountSegmentRequest& req) = 0;
  [[nodiscard]] virtual absl::Status UnmountSegment(ClientId client, SegmentId segment) = 0;
  // Restart: what the caller's segments hold.
  [[nodiscard]] virtual absl::StatusOr<ReportManifestResponse> ReportManifest(
      ClientId client, const ReportManifestRequest& req) = 0;
  // Every mounted segment, ascending id.
  virtual std::vector<SegmentView> ListSegments() const = 0;

  // --- Objects -------------------------------------------------------------
  [[nodiscard]] virtual absl::StatusOr<PutStartResponse> PutStart(ClientId client,
                                                                  const PutStartRequest& req) = 0;
  [[nodiscard]] virtual absl::Status PutEnd(ClientId client, const PutEndRequest& req) = 0;
  [[nodiscard]] virtual absl::Status PutRevoke(ClientId client, const PutRevokeRequest& req) = 0;
  // Mooncake's BatchPut: one call for many keys, a result per key in order.
  [[nodiscard]] virtual absl::StatusOr<BatchPutStartResponse> BatchPutStart(
      ClientId client, const BatchPutStartRequest& req) = 0;
  [[nodiscard]] virtual absl::StatusOr<BatchPutResponse> BatchPutEnd(
      ClientId client, const BatchPutEndRequest& req) = 0;
  [[nodiscard]] virtual absl::StatusOr<BatchPutResponse> BatchPutRevoke(
      ClientId client, const BatchPutRevokeRequest& req) = 0;
  // Reads record heat (dynamic replication observes them).
  [[nodiscard]] virtual absl::StatusOr<GetReplicaListResponse> GetReplicaList(
      const GetReplicaListRequest& req) = 0;
  [[nodiscard]] virtual absl::StatusOr<BatchGetReplicaListResponse> BatchGetReplicaList(
      const BatchGetReplicaListRequest& req) = 0;
  [[nodiscard]] virtual absl::Status Remove(const RemoveRequest& req) = 0;

  // --- Tasks and the ordinary copy lifecycle --------------------------------
  // Also acknowledges the caller's manifest changes up to manifest_ack_seq.
  [[nodiscard]] virtual absl::StatusOr<FetchTasksResponse> FetchTasks(
      ClientId client, size_t batch_max, uint64_t manifest_ack_seq) = 0;
  [[nodiscard]] virtual absl::Status MarkTaskComplete(ClientId client,
                                                      const MarkTaskCompleteRequest& req) = 0;
  [[nodiscard]] virtual absl::StatusOr<CopyStartResponse> CopyStart(
      ClientId client, const CopyStartRequest& req) = 0;
  [[nodiscard]] virtual absl::Status CopyEnd(ClientId client, const CopyEndRequest& req) = 0;
  [[nodiscard]] virtual absl::Status CopyRevoke(ClientId client, const CopyRevokeRequest& req) = 0;

  // --- The dynamic copy lifecycle (tasks whose payload carries a lease id) --
  // Kept apart from the ordinary calls so ordinary copy compatibility is
  // preserved; each checks the lease and the version fence.
  [[nodiscard]] virtual absl::StatusOr<CopyStartResponse> DynamicReplicaCopyStart(
      ClientId client, const CopyStartRequest& req) = 0;
  [[nodiscard]] virtual absl::Status DynamicReplicaCopyEnd(ClientId client,
                                                           const CopyEndRequest& req) = 0;
  [[nodiscard]] virtual absl::Status DynamicReplicaCopyRevoke(ClientId client,
                                                              const CopyRevokeRequest& req) = 0;
  // Whether the copy lease of `query` lets `query.reader` read the range of
  // the lease's source segment: OK (with the lease's remaining time) when
  // the lease is live (granted or in flight, not expired), `asker` is the
  // lease's source client (the store that serves the source segment), the
  // reader is the source client or the owner of the lease's target segment,
  // and the range lies within the source replica. Otherwise NOT_FOUND (no
  // live lease of that id), PERMISSION_DENIED (another asker or reader),
  // OUT_OF_RANGE (another segment or range). Changes nothing.
  [[nodiscard]] virtual absl::StatusOr<CopyLeaseGrant> CheckCopyLease(
      ClientId asker, const CopyLeaseQuery& query) = 0;
};

}  // namespace heatsink

#endif  // HEATSINK_CORE_MASTER_MASTER_ENDPOINT_H_
