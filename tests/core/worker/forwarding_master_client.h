// File: tests/core/worker/forwarding_master_client.h
//
// A MasterClient that forwards every call to another one: the base of test
// decorators that watch or re-route a few calls (override those, call the
// base to forward). The call set is written here once.
#ifndef HEATSINK_TESTS_CORE_WORKER_FORWARDING_MASTER_CLIENT_H_
#define HEATSINK_TESTS_CORE_WORKER_FORWARDING_MASTER_CLIENT_H_

#include <cstddef>
#include <cstdint>
#include <utility>

#include "core/worker/master_client.h"

namespace heatsink::testing {

class ForwardingMasterClient : public MasterClient {
 public:
  explicit ForwardingMasterClient(MasterClient* inner = nullptr) : inner_(inner) {}

  void RegisterClient(const RegisterClientRequest& r, StatusCallback d) override {
    inner_->RegisterClient(r, std::move(d));
  }
  void Heartbeat(ClientId c, StatusCallback d) override { inner_->Heartbeat(c, std::move(d)); }
  void MountSegment(ClientId c, const MountSegmentRequest& r, StatusCallback d) override {
    inner_->MountSegment(c, r, std::move(d));
  }
  void UnmountSegment(ClientId c, SegmentId s, StatusCallback d) override {
    inner_->UnmountSegment(c, s, std::move(d));
  }
  void ReportManifest(ClientId c, const ReportManifestRequest& r,
                      Callback<ReportManifestResponse> d) override {
    inner_->ReportManifest(c, r, std::move(d));
  }
  void PutStart(ClientId c, const PutStartRequest& r, Callback<PutStartResponse> d) override {
    inner_->PutStart(c, r, std::move(d));
  }
  void PutEnd(ClientId c, const PutEndRequest& r, StatusCallback d) override {
    inner_->PutEnd(c, r, std::move(d));
  }
  void PutRevoke(ClientId c, const PutRevokeRequest& r, StatusCallback d) override {
    inner_->PutRevoke(c, r, std::move(d));
  }
  void BatchPutStart(ClientId c, const BatchPutStartRequest& r,
                     Callback<BatchPutStartResponse> d) override {
    inner_->BatchPutStart(c, r, std::move(d));
  }
  void BatchPutEnd(ClientId c, const BatchPutEndRequest& r, Callback<BatchPutResponse> d) override {
    inner_->BatchPutEnd(c, r, std::move(d));
  }
  void BatchPutRevoke(ClientId c, const BatchPutRevokeRequest& r,
                      Callback<BatchPutResponse> d) override {
    inner_->BatchPutRevoke(c, r, std::move(d));
  }
  void GetReplicaList(const GetReplicaListRequest& r, Callback<GetReplicaListResponse> d) override {
    inner_->GetReplicaList(r, std::move(d));
  }
  void BatchGetReplicaList(const BatchGetReplicaListRequest& r,
                           Callback<BatchGetReplicaListResponse> d) override {
    inner_->BatchGetReplicaList(r, std::move(d));
  }
  void Remove(const RemoveRequest& r, StatusCallback d) override {
    inner_->Remove(r, std::move(d));
  }
  void FetchTasks(ClientId c, size_t n, uint64_t ack, Callback<FetchTasksResponse> d) override {
    inner_->FetchTasks(c, n, ack, std::move(d));
  }
  void MarkTaskComplete(ClientId c, const MarkTaskCompleteRequest& r, StatusCallback d) override {
    inner_->MarkTaskComplete(c, r, std::move(d));
  }
  void CopyStart(ClientId c, const CopyStartRequest& r, Callback<CopyStartResponse> d) override {
    inner_->CopyStart(c, r, std::move(d));
  }
  void CopyEnd(ClientId c, const CopyEndRequest& r, StatusCallback d) override {
    inner_->CopyEnd(c, r, std::move(d));
  }
  void CopyRevoke(ClientId c, const CopyRevokeRequest& r, StatusCallback d) override {
    inner_->CopyRevoke(c, r, std::move(d));
  }
  void DynamicReplicaCopyStart(ClientId c, const CopyStartRequest& r,
                               Callback<CopyStartResponse> d) override {
    inner_->DynamicReplicaCopyStart(c, r, std::move(d));
  }
  void DynamicReplicaCopyEnd(ClientId c, const CopyEndRequest& r, StatusCallback d) override {
    inner_->DynamicReplicaCopyEnd(c, r, std::move(d));
  }
  void DynamicReplicaCopyRevoke(ClientId c, const CopyRevokeRequest& r, StatusCallback d) override {
    inner_->DynamicReplicaCopyRevoke(c, r, std::move(d));
  }

 protected:
  // Where calls go from now on.
  void set_inner(MasterClient* inner) { inner_ = inner; }
  MasterClient* inner() const { return inner_; }

 private:
  MasterClient* inner_;
};

}  // namespace heatsink::testing

#endif  // HEATSINK_TESTS_CORE_WORKER_FORWARDING_MASTER_CLIENT_H_
