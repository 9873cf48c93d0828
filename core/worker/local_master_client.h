// File: core/worker/local_master_client.h
//
// An in-process MasterClient: each call is posted to the Executor, runs
// MasterService there, and hands the result to `done` in the same posted
// work, so no caller ever re-enters itself through a callback. No latency is
// modelled (the simulator has its own client for that).
//
// The dynamic copy calls go to `dynamic` when given (dynamic replication's
// lease checks, e.g. a ReplicatedMaster), else to MasterService's leased copy
// lifecycle (fence only: lease id + version recorded in the task).
//
// Thread safety: as the Executor. REQUIRES: the master and executor outlive
// every posted call.
#ifndef HEATSINK_CORE_WORKER_LOCAL_MASTER_CLIENT_H_
#define HEATSINK_CORE_WORKER_LOCAL_MASTER_CLIENT_H_

#include "core/env/executor.h"
#include "core/master/dynamic_copy_calls.h"
#include "core/master/master_service.h"
#include "core/worker/master_client.h"

namespace heatsink {

class LocalMasterClient final : public MasterClient {
 public:
  // `dynamic` may be null; when set it must outlive every posted call.
  LocalMasterClient(MasterService* master, Executor* executor,
                    DynamicCopyCalls* dynamic = nullptr)
      : master_(master), executor_(executor), dynamic_(dynamic) {}
  LocalMasterClient(const LocalMasterClient&) = delete;
  LocalMasterClient& operator=(const LocalMasterClient&) = delete;

  void RegisterClient(const RegisterClientRequest& req, StatusCallback done) override;
  void Heartbeat(ClientId client, StatusCallback done) override;
  void MountSegment(ClientId client, const MountSegmentRequest& req, StatusCallback done) override;
  void UnmountSegment(ClientId client, SegmentId segment, StatusCallback done) override;
  void PutStart(ClientId client, const PutStartRequest& req,
                Callback<PutStartResponse> done) override;
  void PutEnd(ClientId client, const PutEndRequest& req, StatusCallback done) override;
  void PutRevoke(ClientId client, const PutRevokeRequest& req, StatusCallback done) override;
  void BatchPutStart(ClientId client, const BatchPutStartRequest& req,
                     Callback<BatchPutStartResponse> done) override;
  void BatchPutEnd(ClientId client, const BatchPutEndRequest& req,
                   Callback<BatchPutResponse> done) override;
  void BatchPutRevoke(ClientId client, const BatchPutRevokeRequest& req,
                      Callback<BatchPutResponse> done) override;
  void GetReplicaList(const GetReplicaListRequest& req,
                      Callback<GetReplicaListResponse> done) override;
  void BatchGetReplicaList(const BatchGetReplicaListRequest& req,
                           Callback<BatchGetReplicaListResponse> done) override;
  void Remove(const RemoveRequest& req, StatusCallback done) override;
  void ReportManifest(ClientId client, const ReportManifestRequest& req,
                      Callback<ReportManifestResponse> done) override;
  void FetchTasks(ClientId client, size_t batch_max, uint64_t manifest_ack_seq,
                  Callback<FetchTasksResponse> done) override;
  void MarkTaskComplete(ClientId client, const MarkTaskCompleteRequest& req,
                        StatusCallback done) override;
  void CopyStart(ClientId client, const CopyStartRequest& req,
                 Callback<CopyStartResponse> done) override;
  void CopyEnd(ClientId client, const CopyEndRequest& req, StatusCallback done) override;
  void CopyRevoke(ClientId client, const CopyRevokeRequest& req, StatusCallback done) override;
  void DynamicReplicaCopyStart(ClientId client, const CopyStartRequest& req,
                               Callback<CopyStartResponse> done) override;
  void DynamicReplicaCopyEnd(ClientId client, const CopyEndRequest& req,
                             StatusCallback done) override;
  void DynamicReplicaCopyRevoke(ClientId client, const CopyRevokeRequest& req,
                                StatusCallback done) override;

 private:
  // Posts `call` (which returns a Status or StatusOr) and hands its result to
  // `done` in the same posted work.
  template <typename Call, typename Done>
  void Run(Call call, Done done) {
    executor_->Post([call = std::move(call), done = std::move(done)]() mutable {
      std::move(done)(call());
    });
  }

  MasterService* const master_;
  Executor* const executor_;
  DynamicCopyCalls* const dynamic_;
};

}  // namespace heatsink

#endif  // HEATSINK_CORE_WORKER_LOCAL_MASTER_CLIENT_H_
