// File: runtime/rpc/master_handler.h
//
// What the gRPC master service calls: the master's operations, synchronous,
// with the caller's identity already established by the server. There is one
// implementation, MasterServiceHandler, which forwards to a MasterService and
// sends the Dynamic* copy calls and CheckCopyLease to a DynamicCopyCalls when
// given one. heatsink-master gives it ReplicatedMaster's master() and the
// ReplicatedMaster itself: reads feed the heat window because dynamic
// replication is that MasterService's read observer (not because of the
// handler), and the Dynamic* calls go through its lease checks.
//
// Thread safety: implementations are called from many server threads at once.
#ifndef HEATSINK_RUNTIME_RPC_MASTER_HANDLER_H_
#define HEATSINK_RUNTIME_RPC_MASTER_HANDLER_H_

#include <cstddef>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/master/dynamic_copy_calls.h"
#include "core/master/master_service.h"
#include "core/master/master_types.h"

namespace heatsink::runtime {

class MasterHandler {
 public:
  virtual ~MasterHandler() = default;

  [[nodiscard]] virtual absl::Status RegisterClient(const RegisterClientRequest& req) = 0;
  [[nodiscard]] virtual absl::Status Heartbeat(ClientId client) = 0;
  [[nodiscard]] virtual absl::Status MountSegment(ClientId client,
                                                  const MountSegmentRequest& req) = 0;
  [[nodiscard]] virtual absl::Status UnmountSegment(ClientId client, SegmentId segment) = 0;
  [[nodiscard]] virtual absl::StatusOr<ReportManifestResponse> ReportManifest(
      ClientId client, const ReportManifestRequest& req) = 0;
  virtual std::vector<SegmentView> ListSegments() const = 0;

  [[nodiscard]] virtual absl::StatusOr<PutStartResponse> PutStart(ClientId client,
                                                                  const PutStartRequest& req) = 0;
  [[nodiscard]] virtual absl::Status PutEnd(ClientId client, const PutEndRequest& req) = 0;
  [[nodiscard]] virtual absl::Status PutRevoke(ClientId client, const PutRevokeRequest& req) = 0;
  [[nodiscard]] virtual absl::StatusOr<BatchPutStartResponse> BatchPutStart(
      ClientId client, const BatchPutStartRequest& req) = 0;
  [[nodiscard]] virtual absl::StatusOr<BatchPutResponse> BatchPutEnd(
      ClientId client, const BatchPutEndRequest& req) = 0;
  [[nodiscard]] virtual absl::StatusOr<BatchPutResponse> BatchPutRevoke(
      ClientId client, const BatchPutRevokeRequest& req) = 0;
  [[nodiscard]] virtual absl::StatusOr<GetReplicaListResponse> GetReplicaList(
      const GetReplicaListRequest& req) = 0;
  [[nodiscard]] virtual absl::StatusOr<BatchGetReplicaListResponse> BatchGetReplicaList(
      const BatchGetReplicaListRequest& req) = 0;
  [[nodiscard]] virtual absl::Status Remove(const RemoveRequest& req) = 0;

  [[nodiscard]] virtual absl::StatusOr<FetchTasksResponse> FetchTasks(
      ClientId client, size_t batch_max, uint64_t manifest_ack_seq) = 0;
  [[nodiscard]] virtual absl::Status MarkTaskComplete(ClientId client,
                                                      const MarkTaskCompleteRequest& req) = 0;
  [[nodiscard]] virtual absl::StatusOr<CopyStartResponse> CopyStart(
      ClientId client, const CopyStartRequest& req) = 0;
  [[nodiscard]] virtual absl::Status CopyEnd(ClientId client, const CopyEndRequest& req) = 0;
  [[nodiscard]] virtual absl::Status CopyRevoke(ClientId client, const CopyRevokeRequest& req) = 0;
  [[nodiscard]] virtual absl::StatusOr<CopyStartResponse> DynamicReplicaCopyStart(
      ClientId client, const CopyStartRequest& req) = 0;
  [[nodiscard]] virtual absl::Status DynamicReplicaCopyEnd(ClientId client,
                                                           const CopyEndRequest& req) = 0;
  [[nodiscard]] virtual absl::Status DynamicReplicaCopyRevoke(ClientId client,
                                                              const CopyRevokeRequest& req) = 0;
  // DynamicCopyCalls::CheckCopyLease; `asker` is the calling store.
  [[nodiscard]] virtual absl::StatusOr<CopyLeaseGrant> CheckCopyLease(
      ClientId asker, const CopyLeaseQuery& query) = 0;
};

// Serves a MasterService. The Dynamic* calls go to `dynamic` (dynamic
// replication's lease checks: ReplicatedMaster) when given; without it they
// take the master's leased copy lifecycle (fence checks only), as
// LocalMasterClient does. Both must outlive the handler.
class MasterServiceHandler final : public MasterHandler {
 public:
  explicit MasterServiceHandler(MasterService* master, DynamicCopyCalls* dynamic = nullptr)
      : master_(master), dynamic_(dynamic) {}

  absl::Status RegisterClient(const RegisterClientRequest& req) override {
    return master_->RegisterClient(req);
  }
  absl::Status Heartbeat(ClientId client) override { return master_->Heartbeat(client); }
  absl::Status MountSegment(ClientId client, const MountSegmentRequest& req) override {
    return master_->MountSegment(client, req);
  }
  absl::Status UnmountSegment(ClientId client, SegmentId segment) override {
    return master_->UnmountSegment(client, segment);
  }
  absl::StatusOr<ReportManifestResponse> ReportManifest(
      ClientId client, const ReportManifestRequest& req) override {
    return master_->ReportManifest(client, req);
  }
  std::vector<SegmentView> ListSegments() const override { return master_->ListSegments(); }
  absl::StatusOr<PutStartResponse> PutStart(ClientId client, const PutStartRequest& req) override {
    return master_->PutStart(client, req);
  }
  absl::Status PutEnd(ClientId client, const PutEndRequest& req) override {
    return master_->PutEnd(client, req);
  }
  absl::Status PutRevoke(ClientId client, const PutRevokeRequest& req) override {
    return master_->PutRevoke(client, req);
  }
  absl::StatusOr<BatchPutStartResponse> BatchPutStart(ClientId client,
                                                      const BatchPutStartRequest& req) override {
    return master_->BatchPutStart(client, req);
  }
  absl::StatusOr<BatchPutResponse> BatchPutEnd(ClientId client,
                                               const BatchPutEndRequest& req) override {
    return master_->BatchPutEnd(client, req);
  }
  absl::StatusOr<BatchPutResponse> BatchPutRevoke(ClientId client,
                                                  const BatchPutRevokeRequest& req) override {
    return master_->BatchPutRevoke(client, req);
  }
  absl::StatusOr<GetReplicaListResponse> GetReplicaList(const GetReplicaListRequest& req) override {
    return master_->GetReplicaList(req);
  }
  absl::StatusOr<BatchGetReplicaListResponse> BatchGetReplicaList(
      const BatchGetReplicaListRequest& req) override {
    return master_->BatchGetReplicaList(req);
  }
  absl::Status Remove(const RemoveRequest& req) override { return master_->Remove(req); }
  absl::StatusOr<FetchTasksResponse> FetchTasks(ClientId client, size_t batch_max,
                                                uint64_t manifest_ack_seq) override {
    return master_->FetchTasks(client, batch_max, manifest_ack_seq);
  }
  absl::Status MarkTaskComplete(ClientId client, const MarkTaskCompleteRequest& req) override {
    return master_->MarkTaskComplete(client, req);
  }
  absl::StatusOr<CopyStartResponse> CopyStart(ClientId client,
                                              const CopyStartRequest& req) override {
    return master_->CopyStart(client, req);
  }
  absl::Status CopyEnd(ClientId client, const CopyEndRequest& req) override {
    return master_->CopyEnd(client, req);
  }
  absl::Status CopyRevoke(ClientId client, const CopyRevokeRequest& req) override {
    return master_->CopyRevoke(client, req);
  }
  absl::StatusOr<CopyStartResponse> DynamicReplicaCopyStart(ClientId client,
                                                            const CopyStartRequest& req) override {
    if (dynamic_ != nullptr) return dynamic_->DynamicReplicaCopyStart(client, req);
    return master_->LeasedCopyStart(client, req);
  }
  absl::Status DynamicReplicaCopyEnd(ClientId client, const CopyEndRequest& req) override {
    if (dynamic_ != nullptr) return dynamic_->DynamicReplicaCopyEnd(client, req);
    return master_->LeasedCopyEnd(client, req);
  }
  absl::Status DynamicReplicaCopyRevoke(ClientId client, const CopyRevokeRequest& req) override {
    if (dynamic_ != nullptr) return dynamic_->DynamicReplicaCopyRevoke(client, req);
    return master_->LeasedCopyRevoke(client, req);
  }
  absl::StatusOr<CopyLeaseGrant> CheckCopyLease(ClientId asker,
                                                const CopyLeaseQuery& query) override {
    if (dynamic_ != nullptr) return dynamic_->CheckCopyLease(asker, query);
    // Only dynamic replication grants copy leases.
    return absl::NotFoundError(absl::StrCat("copy lease ", query.lease_id.value,
                                            " is not live: this master grants no copy leases"));
  }

 private:
  MasterService* const master_;
  DynamicCopyCalls* const dynamic_;
};

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_RPC_MASTER_HANDLER_H_
