#include "sim/sim_master_client.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "core/base/check.h"

namespace heatsink::sim {
namespace {

constexpr uint64_t kPpm = 1'000'000;

}  // namespace

SimMasterClient::SimMasterClient(Engine* engine, Network* network, MasterService* master,
                                 DynamicCopyCalls* dynamic, int caller_host, int master_host,
                                 const ControlFaults& faults, Rng* faults_rng, ControlStats* stats)
    : engine_(engine),
      network_(network),
      master_(master),
      dynamic_(dynamic),
      caller_host_(caller_host),
      master_host_(master_host),
      faults_(faults),
      faults_rng_(faults_rng),
      stats_(stats) {
  HS_CHECK(engine_ != nullptr && network_ != nullptr && master_ != nullptr && stats_ != nullptr);
  HS_CHECK((faults_.drop_ppm == 0 && faults_.delay_ppm == 0) || faults_rng_ != nullptr);
  HS_CHECK(faults_.drop_ppm <= kPpm && faults_.delay_ppm <= kPpm);
}

std::optional<DurationNs> SimMasterClient::MessageDelay(int src, int dst) {
  ++stats_->messages;
  // Draws happen only when the fault is configured, so a scenario without
  // control faults consumes nothing from the faults stream here.
  const bool faulty = engine_->NowNs() < faults_.until_ns;
  if (faulty && faults_.drop_ppm > 0 && faults_rng_->Bernoulli(faults_.drop_ppm, kPpm)) {
    ++stats_->dropped;
    return std::nullopt;
  }
  absl::StatusOr<DurationNs> latency = network_->ControlLatencyNs(src, dst);
  if (!latency.ok()) {
    ++stats_->unreachable;
    return std::nullopt;
  }
  DurationNs delay = *latency;
  if (faulty && faults_.delay_ppm > 0 && faults_rng_->Bernoulli(faults_.delay_ppm, kPpm)) {
    ++stats_->delayed;
    delay += faults_.delay_ns;
  }
  return delay;
}

template <typename Result, typename Done>
void SimMasterClient::TimeOut(TimeNs deadline, Done done) {
  ++stats_->calls_timed_out;
  engine_->ScheduleAt(std::max(deadline, engine_->NowNs()), [done = std::move(done)]() mutable {
    std::move(done)(Result(absl::DeadlineExceededError(
        "control message to or from the master was lost (RPC deadline exceeded)")));
  });
}

template <typename Result, typename Run, typename Done>
void SimMasterClient::Call(Run run, Done done) {
  // `done` moves with the call: into the request, then into the answer, or
  // into the timeout at the step where a message is lost.
  const TimeNs deadline = engine_->NowNs() + faults_.rpc_timeout_ns;
  const std::optional<DurationNs> there = MessageDelay(caller_host_, master_host_);
  if (!there.has_value()) {
    TimeOut<Result>(deadline, std::move(done));
    return;
  }
  engine_->ScheduleAfter(*there, [this, deadline, run = std::move(run),
                                  done = std::move(done)]() mutable {
    Result result = run();
    const std::optional<DurationNs> back = MessageDelay(master_host_, caller_host_);
    if (!back.has_value()) {
      TimeOut<Result>(deadline, std::move(done));
      return;
    }
    engine_->ScheduleAfter(*back, [done = std::move(done), result = std::move(result)]() mutable {
      std::move(done)(std::move(result));
    });
  });
}

void SimMasterClient::RegisterClient(const RegisterClientRequest& req, StatusCallback done) {
  Call<absl::Status>([this, req] { return master_->RegisterClient(req); }, std::move(done));
}

void SimMasterClient::Heartbeat(ClientId client, StatusCallback done) {
  Call<absl::Status>([this, client] { return master_->Heartbeat(client); }, std::move(done));
}

void SimMasterClient::MountSegment(ClientId client, const MountSegmentRequest& req,
                                   StatusCallback done) {
  Call<absl::Status>([this, client, req] { return master_->MountSegment(client, req); },
                     std::move(done));
}

void SimMasterClient::UnmountSegment(ClientId client, SegmentId segment, StatusCallback done) {
  Call<absl::Status>([this, client, segment] { return master_->UnmountSegment(client, segment); },
                     std::move(done));
}

void SimMasterClient::PutStart(ClientId client, const PutStartRequest& req,
                               Callback<PutStartResponse> done) {
  Call<absl::StatusOr<PutStartResponse>>(
      [this, client, req] { return master_->PutStart(client, req); }, std::move(done));
}

void SimMasterClient::PutEnd(ClientId client, const PutEndRequest& req, StatusCallback done) {
  Call<absl::Status>([this, client, req] { return master_->PutEnd(client, req); }, std::move(done));
}

void SimMasterClient::PutRevoke(ClientId client, const PutRevokeRequest& req, StatusCallback done) {
  Call<absl::Status>([this, client, req] { return master_->PutRevoke(client, req); },
                     std::move(done));
}

void SimMasterClient::BatchPutStart(ClientId client, BatchPutStartRequest req,
                                    Callback<BatchPutStartResponse> done) {
  Call<absl::StatusOr<BatchPutStartResponse>>(
      [this, client, req = std::move(req)] { return master_->BatchPutStart(client, req); },
      std::move(done));
}

void SimMasterClient::BatchPutEnd(ClientId client, BatchPutEndRequest req,
                                  Callback<BatchPutResponse> done) {
  Call<absl::StatusOr<BatchPutResponse>>(
      [this, client, req = std::move(req)] { return master_->BatchPutEnd(client, req); },
      std::move(done));
}

void SimMasterClient::BatchPutRevoke(ClientId client, BatchPutRevokeRequest req,
                                     Callback<BatchPutResponse> done) {
  Call<absl::StatusOr<BatchPutResponse>>(
      [this, client, req = std::move(req)] { return master_->BatchPutRevoke(client, req); },
      std::move(done));
}

void SimMasterClient::GetReplicaList(const GetReplicaListRequest& req,
                                     Callback<GetReplicaListResponse> done) {
  Call<absl::StatusOr<GetReplicaListResponse>>([this, req] { return master_->GetReplicaList(req); },
                                               std::move(done));
}

void SimMasterClient::BatchGetReplicaList(const BatchGetReplicaListRequest& req,
                                          Callback<BatchGetReplicaListResponse> done) {
  Call<absl::StatusOr<BatchGetReplicaListResponse>>(
      [this, req] { return master_->BatchGetReplicaList(req); }, std::move(done));
}

void SimMasterClient::Remove(const RemoveRequest& req, StatusCallback done) {
  Call<absl::Status>([this, req] { return master_->Remove(req); }, std::move(done));
}

void SimMasterClient::ReportManifest(ClientId client, const ReportManifestRequest& req,
                                     Callback<ReportManifestResponse> done) {
  Call<absl::StatusOr<ReportManifestResponse>>(
      [this, client, req] { return master_->ReportManifest(client, req); }, std::move(done));
}

void SimMasterClient::FetchTasks(ClientId client, size_t batch_max, uint64_t manifest_ack_seq,
                                 Callback<FetchTasksResponse> done) {
  Call<absl::StatusOr<FetchTasksResponse>>(
      [this, client, batch_max, manifest_ack_seq] {
        return master_->FetchTasks(client, batch_max, manifest_ack_seq);
      },
      std::move(done));
}

void SimMasterClient::MarkTaskComplete(ClientId client, const MarkTaskCompleteRequest& req,
                                       StatusCallback done) {
  Call<absl::Status>([this, client, req] { return master_->MarkTaskComplete(client, req); },
                     std::move(done));
}

void SimMasterClient::CopyStart(ClientId client, const CopyStartRequest& req,
                                Callback<CopyStartResponse> done) {
  Call<absl::StatusOr<CopyStartResponse>>(
      [this, client, req] { return master_->CopyStart(client, req); }, std::move(done));
}

void SimMasterClient::CopyEnd(ClientId client, const CopyEndRequest& req, StatusCallback done) {
  Call<absl::Status>([this, client, req] { return master_->CopyEnd(client, req); },
                     std::move(done));
}

void SimMasterClient::CopyRevoke(ClientId client, const CopyRevokeRequest& req,
                                 StatusCallback done) {
  Call<absl::Status>([this, client, req] { return master_->CopyRevoke(client, req); },
                     std::move(done));
}

void SimMasterClient::DynamicReplicaCopyStart(ClientId client, const CopyStartRequest& req,
                                              Callback<CopyStartResponse> done) {
  Call<absl::StatusOr<CopyStartResponse>>(
      [this, client, req] {
        return dynamic_ != nullptr ? dynamic_->DynamicReplicaCopyStart(client, req)
                                   : master_->LeasedCopyStart(client, req);
      },
      std::move(done));
}

void SimMasterClient::DynamicReplicaCopyEnd(ClientId client, const CopyEndRequest& req,
                                            StatusCallback done) {
  Call<absl::Status>(
      [this, client, req] {
        return dynamic_ != nullptr ? dynamic_->DynamicReplicaCopyEnd(client, req)
                                   : master_->LeasedCopyEnd(client, req);
      },
      std::move(done));
}

void SimMasterClient::DynamicReplicaCopyRevoke(ClientId client, const CopyRevokeRequest& req,
                                               StatusCallback done) {
  Call<absl::Status>(
      [this, client, req] {
        return dynamic_ != nullptr ? dynamic_->DynamicReplicaCopyRevoke(client, req)
                                   : master_->LeasedCopyRevoke(client, req);
      },
      std::move(done));
}

}  // namespace heatsink::sim
