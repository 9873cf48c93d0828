#include "sim/sim_master_client.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"

namespace heatsink::sim {
namespace {

constexpr uint64_t kPpm = 1'000'000;

}  // namespace

void SimMasterEndpoint::Up(MasterService* master, DynamicCopyCalls* dynamic) {
  HS_CHECK(master_ == nullptr && master != nullptr);
  master_ = master;
  dynamic_ = dynamic;
  ++incarnation_;
}

void SimMasterEndpoint::Down() {
  HS_CHECK(master_ != nullptr);
  master_ = nullptr;
  dynamic_ = nullptr;
  ++incarnation_;
}

SimMasterClient::SimMasterClient(Engine* engine, Network* network,
                                 const SimMasterEndpoint* endpoint, int caller_host,
                                 int master_host, const ControlFaults& faults, Rng* faults_rng,
                                 ControlStats* stats)
    : engine_(engine),
      network_(network),
      endpoint_(endpoint),
      caller_host_(caller_host),
      master_host_(master_host),
      faults_(faults),
      faults_rng_(faults_rng),
      stats_(stats) {
  HS_CHECK(engine_ != nullptr && network_ != nullptr && endpoint_ != nullptr && stats_ != nullptr);
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
  const uint64_t sent_to = endpoint_->incarnation();
  const std::optional<DurationNs> there = MessageDelay(caller_host_, master_host_);
  if (!there.has_value()) {
    TimeOut<Result>(deadline, std::move(done));
    return;
  }
  engine_->ScheduleAfter(*there, [this, deadline, sent_to, run = std::move(run),
                                  done = std::move(done)]() mutable {
    // A master that is down, or a connection its crash broke: refused.
    const bool refused = !endpoint_->up() || endpoint_->incarnation() != sent_to;
    Result result = refused ? Result(MasterDownError("the master is down or restarted")) : run();
    if (refused) ++stats_->master_down;
    const uint64_t answered_by = endpoint_->incarnation();
    const std::optional<DurationNs> back = MessageDelay(master_host_, caller_host_);
    if (!back.has_value()) {
      TimeOut<Result>(deadline, std::move(done));
      return;
    }
    engine_->ScheduleAfter(*back, [this, answered_by, done = std::move(done),
                                   result = std::move(result)]() mutable {
      if (endpoint_->incarnation() != answered_by) {
        // The master crashed after answering: its answer is lost with the
        // connection.
        ++stats_->master_down;
        result = Result(MasterDownError("the master crashed before its answer arrived"));
      }
      std::move(done)(std::move(result));
    });
  });
}

void SimMasterClient::RegisterClient(const RegisterClientRequest& req, StatusCallback done) {
  Call<absl::Status>([this, req] { return master()->RegisterClient(req); }, std::move(done));
}

void SimMasterClient::Heartbeat(ClientId client, StatusCallback done) {
  Call<absl::Status>([this, client] { return master()->Heartbeat(client); }, std::move(done));
}

void SimMasterClient::MountSegment(ClientId client, const MountSegmentRequest& req,
                                   StatusCallback done) {
  Call<absl::Status>([this, client, req] { return master()->MountSegment(client, req); },
                     std::move(done));
}

void SimMasterClient::UnmountSegment(ClientId client, SegmentId segment, StatusCallback done) {
  Call<absl::Status>([this, client, segment] { return master()->UnmountSegment(client, segment); },
                     std::move(done));
}

void SimMasterClient::PutStart(ClientId client, const PutStartRequest& req,
                               Callback<PutStartResponse> done) {
  Call<absl::StatusOr<PutStartResponse>>(
      [this, client, req] { return master()->PutStart(client, req); }, std::move(done));
}

void SimMasterClient::PutEnd(ClientId client, const PutEndRequest& req, StatusCallback done) {
  Call<absl::Status>([this, client, req] { return master()->PutEnd(client, req); },
                     std::move(done));
}

void SimMasterClient::PutRevoke(ClientId client, const PutRevokeRequest& req, StatusCallback done) {
  Call<absl::Status>([this, client, req] { return master()->PutRevoke(client, req); },
                     std::move(done));
}

void SimMasterClient::BatchPutStart(ClientId client, const BatchPutStartRequest& req,
                                    Callback<BatchPutStartResponse> done) {
  Call<absl::StatusOr<BatchPutStartResponse>>(
      [this, client, req] { return master()->BatchPutStart(client, req); }, std::move(done));
}

void SimMasterClient::BatchPutEnd(ClientId client, const BatchPutEndRequest& req,
                                  Callback<BatchPutResponse> done) {
  Call<absl::StatusOr<BatchPutResponse>>(
      [this, client, req] { return master()->BatchPutEnd(client, req); }, std::move(done));
}

void SimMasterClient::BatchPutRevoke(ClientId client, const BatchPutRevokeRequest& req,
                                     Callback<BatchPutResponse> done) {
  Call<absl::StatusOr<BatchPutResponse>>(
      [this, client, req] { return master()->BatchPutRevoke(client, req); }, std::move(done));
}

void SimMasterClient::GetReplicaList(const GetReplicaListRequest& req,
                                     Callback<GetReplicaListResponse> done) {
  Call<absl::StatusOr<GetReplicaListResponse>>(
      [this, req] { return master()->GetReplicaList(req); }, std::move(done));
}

void SimMasterClient::BatchGetReplicaList(const BatchGetReplicaListRequest& req,
                                          Callback<BatchGetReplicaListResponse> done) {
  Call<absl::StatusOr<BatchGetReplicaListResponse>>(
      [this, req] { return master()->BatchGetReplicaList(req); }, std::move(done));
}

void SimMasterClient::Remove(const RemoveRequest& req, StatusCallback done) {
  Call<absl::Status>([this, req] { return master()->Remove(req); }, std::move(done));
}

void SimMasterClient::ReportManifest(ClientId client, const ReportManifestRequest& req,
                                     Callback<ReportManifestResponse> done) {
  Call<absl::StatusOr<ReportManifestResponse>>(
      [this, client, req] {
        absl::StatusOr<ReportManifestResponse> r = master()->ReportManifest(client, req);
        if (endpoint_->report_applied) endpoint_->report_applied(client, req, r);
        return r;
      },
      [this, client, req,
       done = std::move(done)](absl::StatusOr<ReportManifestResponse> r) mutable {
        const absl::StatusOr<ReportManifestResponse> seen =
            endpoint_->report_answered ? r : absl::StatusOr<ReportManifestResponse>();
        std::move(done)(std::move(r));
        if (endpoint_->report_answered) endpoint_->report_answered(client, req, seen);
      });
}

void SimMasterClient::FetchTasks(ClientId client, size_t batch_max, uint64_t manifest_ack_seq,
                                 Callback<FetchTasksResponse> done) {
  Call<absl::StatusOr<FetchTasksResponse>>(
      [this, client, batch_max, manifest_ack_seq] {
        return master()->FetchTasks(client, batch_max, manifest_ack_seq);
      },
      std::move(done));
}

void SimMasterClient::MarkTaskComplete(ClientId client, const MarkTaskCompleteRequest& req,
                                       StatusCallback done) {
  Call<absl::Status>([this, client, req] { return master()->MarkTaskComplete(client, req); },
                     std::move(done));
}

void SimMasterClient::CopyStart(ClientId client, const CopyStartRequest& req,
                                Callback<CopyStartResponse> done) {
  Call<absl::StatusOr<CopyStartResponse>>(
      [this, client, req] { return master()->CopyStart(client, req); }, std::move(done));
}

void SimMasterClient::CopyEnd(ClientId client, const CopyEndRequest& req, StatusCallback done) {
  Call<absl::Status>([this, client, req] { return master()->CopyEnd(client, req); },
                     std::move(done));
}

void SimMasterClient::CopyRevoke(ClientId client, const CopyRevokeRequest& req,
                                 StatusCallback done) {
  Call<absl::Status>([this, client, req] { return master()->CopyRevoke(client, req); },
                     std::move(done));
}

void SimMasterClient::DynamicReplicaCopyStart(ClientId client, const CopyStartRequest& req,
                                              Callback<CopyStartResponse> done) {
  Call<absl::StatusOr<CopyStartResponse>>(
      [this, client, req] {
        return dynamic() != nullptr ? dynamic()->DynamicReplicaCopyStart(client, req)
                                   : master()->LeasedCopyStart(client, req);
      },
      std::move(done));
}

void SimMasterClient::DynamicReplicaCopyEnd(ClientId client, const CopyEndRequest& req,
                                            StatusCallback done) {
  Call<absl::Status>(
      [this, client, req] {
        return dynamic() != nullptr ? dynamic()->DynamicReplicaCopyEnd(client, req)
                                   : master()->LeasedCopyEnd(client, req);
      },
      std::move(done));
}

void SimMasterClient::DynamicReplicaCopyRevoke(ClientId client, const CopyRevokeRequest& req,
                                               StatusCallback done) {
  Call<absl::Status>(
      [this, client, req] {
        return dynamic() != nullptr ? dynamic()->DynamicReplicaCopyRevoke(client, req)
                                   : master()->LeasedCopyRevoke(client, req);
      },
      std::move(done));
}

}  // namespace heatsink::sim
