#include "core/replication/replicated_master.h"

#include <utility>

#include "core/base/check.h"
#include "core/base/status_macros.h"

namespace heatsink {

absl::StatusOr<std::unique_ptr<ReplicatedMaster>> ReplicatedMaster::Create(
    Env* env, const MasterKnobs& master_knobs, const ReplicationKnobs& replication_knobs,
    DecisionSink* sink) {
  if (env == nullptr || env->clock == nullptr || env->executor == nullptr || env->rng == nullptr) {
    return absl::InvalidArgumentError("ReplicatedMaster needs a complete Env");
  }
  HS_RETURN_IF_ERROR(replication_knobs.Validate());
  HS_ASSIGN_OR_RETURN(std::unique_ptr<MasterService> master,
                      MasterService::Create(env, master_knobs));
  std::unique_ptr<ReplicatedMaster> m(new ReplicatedMaster());
  m->metrics_ = std::make_unique<MetricsRegistry>();
  m->master_ = std::move(master);
  m->replication_ = std::make_unique<DynamicReplication>(env, m->master_.get(), replication_knobs,
                                                         sink, m->metrics_.get());
  m->SetCallObserver(nullptr);
  m->master_->SetOptionalReplicaRanker(m->replication_.get());
  m->master_->SetReportedDynamicReplicaCap(
      replication_knobs.dynamic_replication_max_memory_replicas,
      replication_knobs.dynamic_replication_domain_aware);
  return m;
}

ReplicatedMaster::~ReplicatedMaster() {
  if (master_ != nullptr) {
    master_->SetReadObserver(nullptr);
    master_->SetReplicaRemovalObserver(nullptr);
    master_->SetOptionalReplicaRanker(nullptr);
  }
  replication_.reset();
  master_.reset();
}

absl::StatusOr<ReportManifestResponse> ReplicatedMaster::ReportManifest(
    ClientId client, const ReportManifestRequest& req) {
  absl::StatusOr<ReportManifestResponse> result = master_->ReportManifest(client, req);
  if (observer_ != nullptr) observer_->AfterReportManifest(client, req, result);
  return result;
}

absl::Status ReplicatedMaster::DynamicReplicaCopyEnd(ClientId client, const CopyEndRequest& req) {
  if (observer_ == nullptr) return replication_->DynamicReplicaCopyEnd(client, req);
  observer_->BeforeDynamicReplicaCopyEnd(client, req);
  absl::Status result = replication_->DynamicReplicaCopyEnd(client, req);
  observer_->AfterDynamicReplicaCopyEnd(client, req, result);
  return result;
}

void ReplicatedMaster::SetCallObserver(MasterCallObserver* observer) {
  observer_ = observer;
  // The master's read and removal observers: dynamic replication itself, or
  // the tee that also tells the driver.
  std::unique_ptr<ObserverTee> tee =
      observer == nullptr ? nullptr : std::make_unique<ObserverTee>(observer, replication_.get());
  if (tee == nullptr) {
    master_->SetReadObserver(replication_.get());
    master_->SetReplicaRemovalObserver(replication_.get());
  } else {
    master_->SetReadObserver(tee.get());
    master_->SetReplicaRemovalObserver(tee.get());
  }
  tee_ = std::move(tee);
}

void ReplicatedMaster::ObserverTee::OnKeyRead(const ReadObservation& read) {
  driver_->OnKeyRead(read);
  replication_->OnKeyRead(read);
}

void ReplicatedMaster::ObserverTee::OnReplicaRemoved(const ReplicaRemoval& removal) {
  driver_->OnReplicaRemoved(removal);
  replication_->OnReplicaRemoved(removal);
}

absl::Status ReplicatedMaster::CheckInvariants() const {
  HS_RETURN_IF_ERROR(master_->CheckInvariants());
  return replication_->CheckInvariants();
}

}  // namespace heatsink
