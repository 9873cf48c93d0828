// File: core/replication/replicated_master.h
//
// ReplicatedMaster: the master process's core: a MasterService with dynamic
// hot replication attached (heat observation on reads, background admission,
// proposals, leases, version fences, placement, cooldowns, warmup, metrics).
// The simulator and the runtime build this one object; both reach the plain
// master calls through master() and the dynamic ones through the methods
// here (or through replication() for views).
//
// Example:
//   HS_ASSIGN_OR_RETURN(std::unique_ptr<ReplicatedMaster> m,
//                       ReplicatedMaster::Create(env, master_knobs, replication_knobs, &sink));
//   LocalMasterClient client(&m->master(), env->executor, m.get());  // dynamic calls routed
//   ... m->master().GetReplicaList(req) ...   // records heat, may queue admission
//   HS_RETURN_IF_ERROR(m->CheckInvariants());
//   std::string text = RenderPrometheusText(m->SyncMetrics().Snapshot());
//
// Thread safety: every method is thread-safe (see master_service.h and
// dynamic_replication.h). REQUIRES: the Env and the sink outlive the object,
// and the executor runs none of its work concurrently with or after
// destruction.
#ifndef HEATSINK_CORE_REPLICATION_REPLICATED_MASTER_H_
#define HEATSINK_CORE_REPLICATION_REPLICATED_MASTER_H_

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/env/env.h"
#include "core/master/dynamic_copy_calls.h"
#include "core/master/master_knobs.h"
#include "core/master/master_service.h"
#include "core/metrics/metrics.h"
#include "core/replication/decision.h"
#include "core/replication/dynamic_replication.h"
#include "core/replication/replica_action.h"
#include "core/replication/replication_knobs.h"

namespace heatsink {

class ReplicatedMaster final : public DynamicCopyCalls {
 public:
  // INVALID_ARGUMENT when either knob struct fails Validate(). `sink` may be
  // null (decisions are then only counted in the metrics).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ReplicatedMaster>> Create(
      Env* env, const MasterKnobs& master_knobs, const ReplicationKnobs& replication_knobs,
      DecisionSink* sink);
  ~ReplicatedMaster() override;
  ReplicatedMaster(const ReplicatedMaster&) = delete;
  ReplicatedMaster& operator=(const ReplicatedMaster&) = delete;

  MasterService& master() { return *master_; }
  const MasterService& master() const { return *master_; }
  DynamicReplication& replication() { return *replication_; }
  const DynamicReplication& replication() const { return *replication_; }
  const ReplicationKnobs& replication_knobs() const { return replication_->knobs(); }
  // The live dynamic_replication_mode (DynamicReplication::SetMode).
  DynamicReplicationMode dynamic_replication_mode() const { return replication_->mode(); }
  void SetDynamicReplicationMode(DynamicReplicationMode mode) { replication_->SetMode(mode); }
  const MasterKnobs& master_knobs() const { return master_->knobs(); }
  // Task and lease ids of this incarnation start above
  // MasterService::IdBase(epoch): a copy that outlived an earlier master
  // (a crash, a failover) carries ids this one never hands out, so its
  // CopyEnd or CopyRevoke is refused. REQUIRES: before the first task or
  // lease.
  void SetIdEpoch(uint32_t epoch) {
    master_->SetIdEpoch(epoch);
    replication_->SetFirstLeaseId(MasterService::IdBase(epoch) + 1);
  }

  // Internal control-plane entry; see DynamicReplication.
  [[nodiscard]] absl::StatusOr<ReplicaActionLease> SubmitReplicaActionProposal(
      const ReplicaActionProposal& proposal);

  // The dynamic copy lifecycle with lease checks (DynamicCopyCalls).
  [[nodiscard]] absl::StatusOr<CopyStartResponse> DynamicReplicaCopyStart(
      ClientId client, const CopyStartRequest& req) override;
  [[nodiscard]] absl::Status DynamicReplicaCopyEnd(ClientId client,
                                                   const CopyEndRequest& req) override;
  [[nodiscard]] absl::Status DynamicReplicaCopyRevoke(ClientId client,
                                                      const CopyRevokeRequest& req) override;

  [[nodiscard]] absl::StatusOr<CopyLeaseGrant> CheckCopyLease(
      ClientId asker, const CopyLeaseQuery& query) override;

  // Cross-domain warmup of `domain` (stage 2; needs the warmup knob).
  [[nodiscard]] absl::StatusOr<WarmupRequestResult> RequestWarmup(absl::string_view domain);

  // The master's invariants, then dynamic replication's.
  [[nodiscard]] absl::Status CheckInvariants() const;

  // Carries the counts that dynamic replication keeps off the read path into
  // the registry (DynamicReplication::SyncMetrics), then returns the registry
  // of its aggregated metrics (names in replication_metrics.h), current as of
  // this call. Render a snapshot with RenderPrometheusText.
  const MetricsRegistry& SyncMetrics() {
    replication_->SyncMetrics();
    return *metrics_;
  }

 private:
  ReplicatedMaster() = default;

  // Destroyed in reverse order: replication first (it points into the
  // master and the registry).
  std::unique_ptr<MetricsRegistry> metrics_;
  std::unique_ptr<MasterService> master_;
  std::unique_ptr<DynamicReplication> replication_;
};

}  // namespace heatsink

#endif  // HEATSINK_CORE_REPLICATION_REPLICATED_MASTER_H_
