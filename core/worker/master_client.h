// File: core/worker/master_client.h
//
// How store workers (and other master callers) talk to the master: the
// MasterEndpoint calls (core/master/master_endpoint.h), asynchronous. The
// runtime implements it with a gRPC stub (GrpcMasterClient); in process,
// MasterEndpointClient adapts a MasterEndpoint over a transport: the
// simulator's SimMasterClient (modelled control-message latency) and
// LocalMasterClient (tests and single-process set-ups).
//
// Contract for every call: `done` runs exactly once, later, never inside the
// call itself (so callers may hold their own state consistent across the
// call), with the master's status or a transport error (UNAVAILABLE,
// DEADLINE_EXCEEDED). Requests are taken by reference and copied if the
// implementation needs them after returning. Thread-safe.
#ifndef HEATSINK_CORE_WORKER_MASTER_CLIENT_H_
#define HEATSINK_CORE_WORKER_MASTER_CLIENT_H_

#include <cstddef>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/master/master_types.h"

namespace heatsink {

class MasterClient {
 public:
  using StatusCallback = absl::AnyInvocable<void(absl::Status) &&>;
  template <typename T>
  using Callback = absl::AnyInvocable<void(absl::StatusOr<T>) &&>;

  virtual ~MasterClient() = default;

  // Clients and segments.
  virtual void RegisterClient(const RegisterClientRequest& req, StatusCallback done) = 0;
  virtual void Heartbeat(ClientId client, StatusCallback done) = 0;
  virtual void MountSegment(ClientId client, const MountSegmentRequest& req,
                            StatusCallback done) = 0;
  virtual void UnmountSegment(ClientId client, SegmentId segment, StatusCallback done) = 0;
  // Restart: what the caller's segments hold (MasterService::ReportManifest).
  virtual void ReportManifest(ClientId client, const ReportManifestRequest& req,
                              Callback<ReportManifestResponse> done) = 0;

  // Objects.
  virtual void PutStart(ClientId client, const PutStartRequest& req,
                        Callback<PutStartResponse> done) = 0;
  virtual void PutEnd(ClientId client, const PutEndRequest& req, StatusCallback done) = 0;
  virtual void PutRevoke(ClientId client, const PutRevokeRequest& req, StatusCallback done) = 0;
  // Batch puts (Mooncake's BatchPut): one call for many keys, a result per
  // key in request order (MasterService::BatchPutStart).
  virtual void BatchPutStart(ClientId client, const BatchPutStartRequest& req,
                             Callback<BatchPutStartResponse> done) = 0;
  virtual void BatchPutEnd(ClientId client, const BatchPutEndRequest& req,
                           Callback<BatchPutResponse> done) = 0;
  virtual void BatchPutRevoke(ClientId client, const BatchPutRevokeRequest& req,
                              Callback<BatchPutResponse> done) = 0;
  virtual void GetReplicaList(const GetReplicaListRequest& req,
                              Callback<GetReplicaListResponse> done) = 0;
  virtual void BatchGetReplicaList(const BatchGetReplicaListRequest& req,
                                   Callback<BatchGetReplicaListResponse> done) = 0;
  virtual void Remove(const RemoveRequest& req, StatusCallback done) = 0;

  // Tasks and the ordinary copy lifecycle.
  // Also acknowledges the caller's manifest changes up to manifest_ack_seq.
  virtual void FetchTasks(ClientId client, size_t batch_max, uint64_t manifest_ack_seq,
                          Callback<FetchTasksResponse> done) = 0;
  virtual void MarkTaskComplete(ClientId client, const MarkTaskCompleteRequest& req,
                                StatusCallback done) = 0;
  virtual void CopyStart(ClientId client, const CopyStartRequest& req,
                         Callback<CopyStartResponse> done) = 0;
  virtual void CopyEnd(ClientId client, const CopyEndRequest& req, StatusCallback done) = 0;
  virtual void CopyRevoke(ClientId client, const CopyRevokeRequest& req, StatusCallback done) = 0;

  // The copy lifecycle of tasks whose payload carries a lease id (dynamic
  // replication). Kept apart from the ordinary calls so ordinary copy
  // compatibility is preserved.
  virtual void DynamicReplicaCopyStart(ClientId client, const CopyStartRequest& req,
                                       Callback<CopyStartResponse> done) = 0;
  virtual void DynamicReplicaCopyEnd(ClientId client, const CopyEndRequest& req,
                                     StatusCallback done) = 0;
  virtual void DynamicReplicaCopyRevoke(ClientId client, const CopyRevokeRequest& req,
                                        StatusCallback done) = 0;
};

}  // namespace heatsink

#endif  // HEATSINK_CORE_WORKER_MASTER_CLIENT_H_
