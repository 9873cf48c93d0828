// File: core/worker/master_endpoint_client.h
//
// MasterEndpointClient: the asynchronous MasterClient over the synchronous
// MasterEndpoint (core/master/master_endpoint.h), written once. A Transport
// says how a call travels: LocalMasterClient posts it to an Executor; the
// simulator's SimMasterClient sends it as modelled control messages, with
// faults and master crashes. Each call is forwarded as a `run` that calls
// the endpoint and a `done` that takes its result, so adding a master call
// here is one line.
//
// A Transport provides
//   template <typename Result, typename Run, typename Done>
//   void Call(Run run, Done done);
// where `run(MasterEndpoint&)` returns `Result` (absl::Status or
// absl::StatusOr<T>) and `done(Result)` must run exactly once, later, never
// inside Call itself (MasterClient's contract).
//
// Thread safety: as the Transport.
#ifndef HEATSINK_CORE_WORKER_MASTER_ENDPOINT_CLIENT_H_
#define HEATSINK_CORE_WORKER_MASTER_ENDPOINT_CLIENT_H_

#include <cstddef>
#include <cstdint>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/master/master_endpoint.h"
#include "core/worker/master_client.h"

namespace heatsink {

template <typename Transport>
class MasterEndpointClient : public MasterClient {
 public:
  template <typename... Args>
  explicit MasterEndpointClient(Args&&... transport_args)
      : transport_(std::forward<Args>(transport_args)...) {}
  MasterEndpointClient(const MasterEndpointClient&) = delete;
  MasterEndpointClient& operator=(const MasterEndpointClient&) = delete;

  void RegisterClient(const RegisterClientRequest& req, StatusCallback done) override {
    Call<absl::Status>([req](MasterEndpoint& m) { return m.RegisterClient(req); }, std::move(done));
  }
  void Heartbeat(ClientId client, StatusCallback done) override {
    Call<absl::Status>([client](MasterEndpoint& m) { return m.Heartbeat(client); },
                       std::move(done));
  }
  void MountSegment(ClientId client, const MountSegmentRequest& req, StatusCallback done) override {
    Call<absl::Status>([client, req](MasterEndpoint& m) { return m.MountSegment(client, req); },
                       std::move(done));
  }
  void UnmountSegment(ClientId client, SegmentId segment, StatusCallback done) override {
    Call<absl::Status>(
        [client, segment](MasterEndpoint& m) { return m.UnmountSegment(client, segment); },
        std::move(done));
  }
  void ReportManifest(ClientId client, const ReportManifestRequest& req,
                      Callback<ReportManifestResponse> done) override {
    Call<absl::StatusOr<ReportManifestResponse>>(
        [client, req](MasterEndpoint& m) { return m.ReportManifest(client, req); },
        std::move(done));
  }
  void PutStart(ClientId client, const PutStartRequest& req,
                Callback<PutStartResponse> done) override {
    Call<absl::StatusOr<PutStartResponse>>(
        [client, req](MasterEndpoint& m) { return m.PutStart(client, req); }, std::move(done));
  }
  void PutEnd(ClientId client, const PutEndRequest& req, StatusCallback done) override {
    Call<absl::Status>([client, req](MasterEndpoint& m) { return m.PutEnd(client, req); },
                       std::move(done));
  }
  void PutRevoke(ClientId client, const PutRevokeRequest& req, StatusCallback done) override {
    Call<absl::Status>([client, req](MasterEndpoint& m) { return m.PutRevoke(client, req); },
                       std::move(done));
  }
  void BatchPutStart(ClientId client, const BatchPutStartRequest& req,
                     Callback<BatchPutStartResponse> done) override {
    Call<absl::StatusOr<BatchPutStartResponse>>(
        [client, req](MasterEndpoint& m) { return m.BatchPutStart(client, req); }, std::move(done));
  }
  void BatchPutEnd(ClientId client, const BatchPutEndRequest& req,
                   Callback<BatchPutResponse> done) override {
    Call<absl::StatusOr<BatchPutResponse>>(
        [client, req](MasterEndpoint& m) { return m.BatchPutEnd(client, req); }, std::move(done));
  }
  void BatchPutRevoke(ClientId client, const BatchPutRevokeRequest& req,
                      Callback<BatchPutResponse> done) override {
    Call<absl::StatusOr<BatchPutResponse>>(
        [client, req](MasterEndpoint& m) { return m.BatchPutRevoke(client, req); },
        std::move(done));
  }
  void GetReplicaList(const GetReplicaListRequest& req,
                      Callback<GetReplicaListResponse> done) override {
    Call<absl::StatusOr<GetReplicaListResponse>>(
        [req](MasterEndpoint& m) { return m.GetReplicaList(req); }, std::move(done));
  }
  void BatchGetReplicaList(const BatchGetReplicaListRequest& req,
                           Callback<BatchGetReplicaListResponse> done) override {
    Call<absl::StatusOr<BatchGetReplicaListResponse>>(
        [req](MasterEndpoint& m) { return m.BatchGetReplicaList(req); }, std::move(done));
  }
  void Remove(const RemoveRequest& req, StatusCallback done) override {
    Call<absl::Status>([req](MasterEndpoint& m) { return m.Remove(req); }, std::move(done));
  }
  void FetchTasks(ClientId client, size_t batch_max, uint64_t manifest_ack_seq,
                  Callback<FetchTasksResponse> done) override {
    Call<absl::StatusOr<FetchTasksResponse>>(
        [client, batch_max, manifest_ack_seq](MasterEndpoint& m) {
          return m.FetchTasks(client, batch_max, manifest_ack_seq);
        },
        std::move(done));
  }
  void MarkTaskComplete(ClientId client, const MarkTaskCompleteRequest& req,
                        StatusCallback done) override {
    Call<absl::Status>([client, req](MasterEndpoint& m) { return m.MarkTaskComplete(client, req); },
                       std::move(done));
  }
  void CopyStart(ClientId client, const CopyStartRequest& req,
                 Callback<CopyStartResponse> done) override {
    Call<absl::StatusOr<CopyStartResponse>>(
        [client, req](MasterEndpoint& m) { return m.CopyStart(client, req); }, std::move(done));
  }
  void CopyEnd(ClientId client, const CopyEndRequest& req, StatusCallback done) override {
    Call<absl::Status>([client, req](MasterEndpoint& m) { return m.CopyEnd(client, req); },
                       std::move(done));
  }
  void CopyRevoke(ClientId client, const CopyRevokeRequest& req, StatusCallback done) override {
    Call<absl::Status>([client, req](MasterEndpoint& m) { return m.CopyRevoke(client, req); },
                       std::move(done));
  }
  void DynamicReplicaCopyStart(ClientId client, const CopyStartRequest& req,
                               Callback<CopyStartResponse> done) override {
    Call<absl::StatusOr<CopyStartResponse>>(
        [client, req](MasterEndpoint& m) { return m.DynamicReplicaCopyStart(client, req); },
        std::move(done));
  }
  void DynamicReplicaCopyEnd(ClientId client, const CopyEndRequest& req,
                             StatusCallback done) override {
    Call<absl::Status>(
        [client, req](MasterEndpoint& m) { return m.DynamicReplicaCopyEnd(client, req); },
        std::move(done));
  }
  void DynamicReplicaCopyRevoke(ClientId client, const CopyRevokeRequest& req,
                                StatusCallback done) override {
    Call<absl::Status>(
        [client, req](MasterEndpoint& m) { return m.DynamicReplicaCopyRevoke(client, req); },
        std::move(done));
  }

 protected:
  Transport& transport() { return transport_; }
  const Transport& transport() const { return transport_; }

 private:
  template <typename Result, typename Run, typename Done>
  void Call(Run run, Done done) {
    transport_.template Call<Result>(std::move(run), std::move(done));
  }

  Transport transport_;
};

}  // namespace heatsink

#endif  // HEATSINK_CORE_WORKER_MASTER_ENDPOINT_CLIENT_H_
