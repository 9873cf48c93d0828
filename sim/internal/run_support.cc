// Knob resolution, the network topology of a scenario, and the small
// helpers of sim/internal/simulation.h.
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/replication/decision.h"
#include "sim/internal/simulation.h"

namespace heatsink::sim::runner_internal {

std::string DecisionCountKey(const DecisionRecord& r) {
  if (r.outcome == DecisionOutcome::kDropped) {
    return absl::StrCat("dropped/", DecisionKindName(r.kind));
  }
  if (r.outcome != DecisionOutcome::kRejected) {
    return std::string(DecisionOutcomeName(r.outcome));
  }
  return absl::StrCat("rejected/", r.reason.has_value() ? RejectReasonName(*r.reason) : "unknown");
}

void SimCallObserver::BeforeDynamicReplicaCopyEnd(ClientId client, const CopyEndRequest& req) {
  if (observer_ == nullptr) return;
  CopyEndObservation seen;
  seen.t_ns = engine_->NowNs();
  seen.client = client;
  seen.fence = req;
  for (const PendingActionView& p : master_->replication().PendingActions()) {
    if (p.lease.lease_id != req.lease_id) continue;
    seen.lease_pending = true;
    seen.lease_expiration_ns = p.lease.expiration_ns;
    seen.lease_version = p.lease.version;
    seen.name = p.lease.name;
  }
  if (!seen.lease_pending) {
    if (std::optional<Task> task = master_->master().GetTask(req.task_id); task.has_value()) {
      seen.name = task->copy.name;
    }
  }
  if (!seen.name.key.empty()) {
    if (absl::StatusOr<ObjectView> object = master_->master().GetObjectView(seen.name);
        object.ok()) {
      seen.object_exists = true;
      seen.object_version = object->version;
    }
  }
  copy_end_ = std::move(seen);
}

void SimCallObserver::AfterDynamicReplicaCopyEnd(ClientId /*client*/, const CopyEndRequest& /*req*/,
                                                 const absl::Status& result) {
  if (observer_ == nullptr) return;
  copy_end_.status = result;
  observer_->OnCopyEnd(copy_end_);
}

absl::StatusOr<KnobSet> ResolveKnobs(const Scenario& scenario, const RunOptions& options) {
  KnobSet knobs;
  const ScenarioNetwork& n = scenario.topology.network;
  if (n.control_same_host_latency_ns) {
    knobs.network.control_same_host_latency_ns = *n.control_same_host_latency_ns;
  }
  if (n.control_same_domain_latency_ns) {
    knobs.network.control_same_domain_latency_ns = *n.control_same_domain_latency_ns;
  }
  if (n.control_cross_domain_latency_ns) {
    knobs.network.control_cross_domain_latency_ns = *n.control_cross_domain_latency_ns;
  }
  if (n.control_jitter_percent) knobs.network.control_jitter_percent = *n.control_jitter_percent;
  if (n.transfer_overhead_ns) knobs.network.transfer_overhead_ns = *n.transfer_overhead_ns;
  for (const KnobSetting& s : scenario.knobs) {
    if (absl::Status st = knobs.Set(s.name, s.value); !st.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(s.where, ": ", st.message()));
    }
  }
  for (const KnobOverride& o : options.overrides) {
    if (absl::Status st = knobs.Set(o.name, o.value); !st.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--set ", o.name, "=", o.value, ": ", st.message()));
    }
  }
  if (absl::Status st = knobs.Validate(); !st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(scenario.source, ": knobs: ", st.message()));
  }
  return knobs;
}

NetworkTopology BuildNetworkTopology(const Scenario& scenario) {
  NetworkTopology topology;
  for (const ScenarioDomain& d : scenario.topology.domains) {
    DomainSpec domain;
    domain.name = d.name;
    for (const ScenarioHost& h : d.hosts) {
      HostSpec host;
      host.name = h.name;
      host.local_copy_bytes_per_s = h.local_copy_bytes_per_s;
      for (int64_t i = 0; i < h.nic_count; ++i) {
        host.nics.push_back(NicSpec{h.nic_send_bytes_per_s, h.nic_receive_bytes_per_s});
      }
      domain.hosts.push_back(std::move(host));
    }
    topology.domains.push_back(std::move(domain));
  }
  for (const ScenarioTrunk& t : scenario.topology.trunks) {
    topology.trunks.push_back(TrunkSpec{t.domain_a, t.domain_b, t.bandwidth_bytes_per_s,
                                        t.latency_ns, t.oversubscription_percent});
  }
  return topology;
}

void ScriptedDataMover::StartCopy(const CopyRange& range,
                                  absl::AnyInvocable<void(absl::Status) &&> done) {
  sim_->StartCopy(range, std::move(done));
}

void SimCallObserver::OnKeyRead(const ReadObservation& read) { sim_->OnKeyRead(read); }

void SimCallObserver::OnReplicaRemoved(const ReplicaRemoval& removal) {
  sim_->OnReplicaRemoved(removal);
}

void SimCallObserver::AfterReportManifest(ClientId client, const ReportManifestRequest& req,
                                          const absl::StatusOr<ReportManifestResponse>& result) {
  sim_->OnReportApplied(client, req, result);
}

}  // namespace heatsink::sim::runner_internal
