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
  m->master_->SetReadObserver(m->replication_.get());
  m->master_->SetReplicaRemovalObserver(m->replication_.get());
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

absl::StatusOr<ReplicaActionLease> ReplicatedMaster::SubmitReplicaActionProposal(
    const ReplicaActionProposal& proposal) {
  return replication_->SubmitReplicaActionProposal(proposal);
}

absl::StatusOr<CopyStartResponse> ReplicatedMaster::DynamicReplicaCopyStart(
    ClientId client, const CopyStartRequest& req) {
  return replication_->DynamicReplicaCopyStart(client, req);
}

absl::Status ReplicatedMaster::DynamicReplicaCopyEnd(ClientId client, const CopyEndRequest& req) {
  return replication_->DynamicReplicaCopyEnd(client, req);
}

absl::Status ReplicatedMaster::DynamicReplicaCopyRevoke(ClientId client,
                                                        const CopyRevokeRequest& req) {
  return replication_->DynamicReplicaCopyRevoke(client, req);
}

absl::StatusOr<CopyLeaseGrant> ReplicatedMaster::CheckCopyLease(ClientId asker,
                                                               const CopyLeaseQuery& query) {
  return replication_->CheckCopyLease(asker, query);
}

absl::StatusOr<WarmupRequestResult> ReplicatedMaster::RequestWarmup(absl::string_view domain) {
  return replication_->RequestWarmup(domain);
}

absl::Status ReplicatedMaster::CheckInvariants() const {
  HS_RETURN_IF_ERROR(master_->CheckInvariants());
  return replication_->CheckInvariants();
}

}  // namespace heatsink
