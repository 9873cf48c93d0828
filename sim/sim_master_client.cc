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

void SimMasterEndpoint::Up(MasterEndpoint* master) {
  HS_CHECK(master_ == nullptr && master != nullptr);
  master_ = master;
  ++incarnation_;
}

void SimMasterEndpoint::Down() {
  HS_CHECK(master_ != nullptr);
  master_ = nullptr;
  ++incarnation_;
}

SimCallTransport::SimCallTransport(Engine* engine, Network* network,
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

std::optional<DurationNs> SimCallTransport::MessageDelay(int src, int dst) {
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

void SimMasterClient::ReportManifest(ClientId client, const ReportManifestRequest& req,
                                     Callback<ReportManifestResponse> done) {
  MasterEndpointClient::ReportManifest(
      client, req,
      [endpoint = &transport().endpoint(), client,
       done = std::move(done)](absl::StatusOr<ReportManifestResponse> r) mutable {
        const absl::StatusOr<ReportManifestResponse> seen =
            endpoint->report_answered ? r : absl::StatusOr<ReportManifestResponse>();
        std::move(done)(std::move(r));
        if (endpoint->report_answered) endpoint->report_answered(client, seen);
      });
}

}  // namespace heatsink::sim
