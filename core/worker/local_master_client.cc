#include "core/worker/local_master_client.h"

namespace heatsink {

void LocalMasterClient::RegisterClient(const RegisterClientRequest& req, StatusCallback done) {
  Run([m = master_, req] { return m->RegisterClient(req); }, std::move(done));
}

void LocalMasterClient::Heartbeat(ClientId client, StatusCallback done) {
  Run([m = master_, client] { return m->Heartbeat(client); }, std::move(done));
}

void LocalMasterClient::MountSegment(ClientId client, const MountSegmentRequest& req,
                                     StatusCallback done) {
  Run([m = master_, client, req] { return m->MountSegment(client, req); }, std::move(done));
}

void LocalMasterClient::UnmountSegment(ClientId client, SegmentId segment, StatusCallback done) {
  Run([m = master_, client, segment] { return m->UnmountSegment(client, segment); },
      std::move(done));
}

void LocalMasterClient::PutStart(ClientId client, const PutStartRequest& req,
                                 Callback<PutStartResponse> done) {
  Run([m = master_, client, req] { return m->PutStart(client, req); }, std::move(done));
}

void LocalMasterClient::PutEnd(ClientId client, const PutEndRequest& req, StatusCallback done) {
  Run([m = master_, client, req] { return m->PutEnd(client, req); }, std::move(done));
}

void LocalMasterClient::PutRevoke(ClientId client, const PutRevokeRequest& req,
                                  StatusCallback done) {
  Run([m = master_, client, req] { return m->PutRevoke(client, req); }, std::move(done));
}

void LocalMasterClient::BatchPutStart(ClientId client, const BatchPutStartRequest& req,
                                      Callback<BatchPutStartResponse> done) {
  Run([m = master_, client, req] { return m->BatchPutStart(client, req); }, std::move(done));
}

void LocalMasterClient::BatchPutEnd(ClientId client, const BatchPutEndRequest& req,
                                    Callback<BatchPutResponse> done) {
  Run([m = master_, client, req] { return m->BatchPutEnd(client, req); }, std::move(done));
}

void LocalMasterClient::BatchPutRevoke(ClientId client, const BatchPutRevokeRequest& req,
                                       Callback<BatchPutResponse> done) {
  Run([m = master_, client, req] { return m->BatchPutRevoke(client, req); }, std::move(done));
}

void LocalMasterClient::GetReplicaList(const GetReplicaListRequest& req,
                                       Callback<GetReplicaListResponse> done) {
  Run([m = master_, req] { return m->GetReplicaList(req); }, std::move(done));
}

void LocalMasterClient::BatchGetReplicaList(const BatchGetReplicaListRequest& req,
                                            Callback<BatchGetReplicaListResponse> done) {
  Run([m = master_, req] { return m->BatchGetReplicaList(req); }, std::move(done));
}

void LocalMasterClient::Remove(const RemoveRequest& req, StatusCallback done) {
  Run([m = master_, req] { return m->Remove(req); }, std::move(done));
}

void LocalMasterClient::ReportManifest(ClientId client, const ReportManifestRequest& req,
                                       Callback<ReportManifestResponse> done) {
  Run([m = master_, client, req] { return m->ReportManifest(client, req); }, std::move(done));
}

void LocalMasterClient::FetchTasks(ClientId client, size_t batch_max, uint64_t manifest_ack_seq,
                                   Callback<FetchTasksResponse> done) {
  Run([m = master_, client, batch_max, manifest_ack_seq] {
        return m->FetchTasks(client, batch_max, manifest_ack_seq);
      },
      std::move(done));
}

void LocalMasterClient::MarkTaskComplete(ClientId client, const MarkTaskCompleteRequest& req,
                                         StatusCallback done) {
  Run([m = master_, client, req] { return m->MarkTaskComplete(client, req); }, std::move(done));
}

void LocalMasterClient::CopyStart(ClientId client, const CopyStartRequest& req,
                                  Callback<CopyStartResponse> done) {
  Run([m = master_, client, req] { return m->CopyStart(client, req); }, std::move(done));
}

void LocalMasterClient::CopyEnd(ClientId client, const CopyEndRequest& req, StatusCallback done) {
  Run([m = master_, client, req] { return m->CopyEnd(client, req); }, std::move(done));
}

void LocalMasterClient::CopyRevoke(ClientId client, const CopyRevokeRequest& req,
                                   StatusCallback done) {
  Run([m = master_, client, req] { return m->CopyRevoke(client, req); }, std::move(done));
}

void LocalMasterClient::DynamicReplicaCopyStart(ClientId client, const CopyStartRequest& req,
                                                Callback<CopyStartResponse> done) {
  if (dynamic_ != nullptr) {
    Run([d = dynamic_, client, req] { return d->DynamicReplicaCopyStart(client, req); },
        std::move(done));
    return;
  }
  Run([m = master_, client, req] { return m->LeasedCopyStart(client, req); }, std::move(done));
}

void LocalMasterClient::DynamicReplicaCopyEnd(ClientId client, const CopyEndRequest& req,
                                              StatusCallback done) {
  if (dynamic_ != nullptr) {
    Run([d = dynamic_, client, req] { return d->DynamicReplicaCopyEnd(client, req); },
        std::move(done));
    return;
  }
  Run([m = master_, client, req] { return m->LeasedCopyEnd(client, req); }, std::move(done));
}

void LocalMasterClient::DynamicReplicaCopyRevoke(ClientId client, const CopyRevokeRequest& req,
                                                 StatusCallback done) {
  if (dynamic_ != nullptr) {
    Run([d = dynamic_, client, req] { return d->DynamicReplicaCopyRevoke(client, req); },
        std::move(done));
    return;
  }
  Run([m = master_, client, req] { return m->LeasedCopyRevoke(client, req); }, std::move(done));
}

}  // namespace heatsink
