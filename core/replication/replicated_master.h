// File: core/replication/replicated_master.h
//
// ReplicatedMaster: the master process's core, and the only master the
// drivers see: a MasterService with dynamic hot replication attached (heat
// observation on reads, background admission, proposals, leases, version
// fences, placement, cooldowns, warmup, metrics). It is the one
// implementation of MasterEndpoint (core/master/master_endpoint.h): the
// gRPC server, the simulator's latency-modelling client and LocalMasterClient
// all adapt this object, and the Dynamic* copy calls always go through the
// lease checks. Beside the endpoint it offers the operator's calls (drain a
// segment, ordinary copy tasks, eviction, known tenants), read-only views
// (master(), replication()), and one supported hook for a driver that watches
// the master's work (SetCallObserver).
//
// Example:
//   HS_ASSIGN_OR_RETURN(std::unique_ptr<ReplicatedMaster> m,
//                       ReplicatedMaster::Create(env, master_knobs, replication_knobs, &sink));
//   LocalMasterClient client(m.get(), env->executor);
//   ... m->GetReplicaList(req) ...   // records heat, may queue admission
//   HS_RETURN_IF_ERROR(m->CheckInvariants());
//   std::string text = RenderPrometheusText(m->SyncMetrics().Snapshot());
//
// Thread safety: every method is thread-safe unless it says otherwise (see
// master_service.h and dynamic_replication.h). REQUIRES: the Env and the sink
// outlive the object, and the executor runs none of its work concurrently
// with or after destruction.
#ifndef HEATSINK_CORE_REPLICATION_REPLICATED_MASTER_H_
#define HEATSINK_CORE_REPLICATION_REPLICATED_MASTER_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/env/env.h"
#include "core/master/master_endpoint.h"
#include "core/master/master_knobs.h"
#include "core/master/master_observers.h"
#include "core/master/master_service.h"
#include "core/metrics/metrics.h"
#include "core/replication/decision.h"
#include "core/replication/dynamic_replication.h"
#include "core/replication/replica_action.h"
#include "core/replication/replication_knobs.h"

namespace heatsink {

// What a driver watches of the master's work, beyond the calls it makes
// (the simulator's read log, its restart checks, its run observer). Every
// method has an empty default. Called on the thread of the master call that
// caused it, with no master lock held, like the master's own observers
// (master_observers.h); implementations must be cheap and must not call into
// the master from OnKeyRead or OnReplicaRemoved.
class MasterCallObserver {
 public:
  virtual ~MasterCallObserver() = default;
  // Each key read and each replica removal, just before dynamic
  // replication sees it.
  virtual void OnKeyRead(const ReadObservation& /*read*/) {}
  virtual void OnReplicaRemoved(const ReplicaRemoval& /*removal*/) {}
  // Around each DynamicReplicaCopyEnd: before it runs (the master and the
  // pending leases as the call finds them; views may be read), and its
  // result. Both run on the caller's thread, back to back with the call.
  virtual void BeforeDynamicReplicaCopyEnd(ClientId /*client*/, const CopyEndRequest& /*req*/) {}
  virtual void AfterDynamicReplicaCopyEnd(ClientId /*client*/, const CopyEndRequest& /*req*/,
                                          const absl::Status& /*result*/) {}
  // Right after each ReportManifest ran, with its result.
  virtual void AfterReportManifest(ClientId /*client*/, const ReportManifestRequest& /*req*/,
                                   const absl::StatusOr<ReportManifestResponse>& /*result*/) {}
};

class ReplicatedMaster final : public MasterEndpoint {
 public:
  // INVALID_ARGUMENT when either knob struct fails Validate(). `sink` may be
  // null (decisions are then only counted in the metrics).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ReplicatedMaster>> Create(
      Env* env, const MasterKnobs& master_knobs, const ReplicationKnobs& replication_knobs,
      DecisionSink* sink);
  ~ReplicatedMaster() override;
  ReplicatedMaster(const ReplicatedMaster&) = delete;
  ReplicatedMaster& operator=(const ReplicatedMaster&) = delete;

  // --- MasterEndpoint ----------------------------------------------------------
  absl::Status RegisterClient(const RegisterClientRequest& req) override {
    return master_->RegisterClient(req);
  }
  absl::Status Heartbeat(ClientId client) override { return master_->Heartbeat(client); }
  absl::Status MountSegment(ClientId client, const MountSegmentRequest& req) override {
    return master_->MountSegment(client, req);
  }
  absl::Status UnmountSegment(ClientId client, SegmentId segment) override {
    return master_->UnmountSegment(client, segment);
  }
  absl::StatusOr<ReportManifestResponse> ReportManifest(ClientId client,
                                                        const ReportManifestRequest& req) override;
  std::vector<SegmentView> ListSegments() const override { return master_->ListSegments(); }
  absl::StatusOr<PutStartResponse> PutStart(ClientId client, const PutStartRequest& req) override {
    return master_->PutStart(client, req);
  }
  absl::Status PutEnd(ClientId client, const PutEndRequest& req) override {
    return master_->PutEnd(client, req);
  }
  absl::Status PutRevoke(ClientId client, const PutRevokeRequest& req) override {
    return master_->PutRevoke(client, req);
  }
  absl::StatusOr<BatchPutStartResponse> BatchPutStart(ClientId client,
                                                      const BatchPutStartRequest& req) override {
    return master_->BatchPutStart(client, req);
  }
  absl::StatusOr<BatchPutResponse> BatchPutEnd(ClientId client,
                                               const BatchPutEndRequest& req) override {
    return master_->BatchPutEnd(client, req);
  }
  absl::StatusOr<BatchPutResponse> BatchPutRevoke(ClientId client,
                                                  const BatchPutRevokeRequest& req) override {
    return master_->BatchPutRevoke(client, req);
  }
  absl::StatusOr<GetReplicaListResponse> GetReplicaList(const GetReplicaListRequest& req) override {
    return master_->GetReplicaList(req);
  }
  absl::StatusOr<BatchGetReplicaListResponse> BatchGetReplicaList(
      const BatchGetReplicaListRequest& req) override {
    return master_->BatchGetReplicaList(req);
  }
  absl::Status Remove(const RemoveRequest& req) override { return master_->Remove(req); }
  absl::StatusOr<FetchTasksResponse> FetchTasks(ClientId client, size_t batch_max,
                                                uint64_t manifest_ack_seq) override {
    return master_->FetchTasks(client, batch_max, manifest_ack_seq);
  }
  absl::Status MarkTaskComplete(ClientId client, const MarkTaskCompleteRequest& req) override {
    return master_->MarkTaskComplete(client, req);
  }
  absl::StatusOr<CopyStartResponse> CopyStart(ClientId client,
                                              const CopyStartRequest& req) override {
    return master_->CopyStart(client, req);
  }
  absl::Status CopyEnd(ClientId client, const CopyEndRequest& req) override {
    return master_->CopyEnd(client, req);
  }
  absl::Status CopyRevoke(ClientId client, const CopyRevokeRequest& req) override {
    return master_->CopyRevoke(client, req);
  }
  // The dynamic copy lifecycle, with dynamic replication's lease checks.
  absl::StatusOr<CopyStartResponse> DynamicReplicaCopyStart(ClientId client,
                                                            const CopyStartRequest& req) override {
    return replication_->DynamicReplicaCopyStart(client, req);
  }
  absl::Status DynamicReplicaCopyEnd(ClientId client, const CopyEndRequest& req) override;
  absl::Status DynamicReplicaCopyRevoke(ClientId client, const CopyRevokeRequest& req) override {
    return replication_->DynamicReplicaCopyRevoke(client, req);
  }
  absl::StatusOr<CopyLeaseGrant> CheckCopyLease(ClientId asker,
                                                const CopyLeaseQuery& query) override {
    return replication_->CheckCopyLease(asker, query);
  }

  // --- The operator's calls ---------------------------------------------------
  // Drains or undrains a segment (MasterService::SetSegmentAllocatable; an
  // invalid `client` is the operator).
  [[nodiscard]] absl::Status SetSegmentAllocatable(ClientId client, SegmentId segment,
                                                   bool allocatable) {
    return master_->SetSegmentAllocatable(client, segment, allocatable);
  }
  // An ordinary REPLICA_COPY task (MasterService::CreateCopyTask).
  [[nodiscard]] absl::StatusOr<CopyTaskResponse> CreateCopyTask(const CopyTaskRequest& req) {
    return master_->CreateCopyTask(req);
  }
  // One eviction pass now (MasterService::Evict); optional replicas go
  // first, coldest first by dynamic replication's heat.
  uint64_t Evict(uint64_t min_bytes = 0) { return master_->Evict(min_bytes); }
  // Tenants a manifest entry may name (MasterService::SetKnownTenants).
  void SetKnownTenants(std::vector<std::string> tenants) {
    master_->SetKnownTenants(std::move(tenants));
  }
  // For a master that never restarts (MasterService::DisableManifestJournal).
  // REQUIRES: before any segment is mounted.
  void DisableManifestJournal() { master_->DisableManifestJournal(); }
  // Internal control-plane entry; see DynamicReplication.
  [[nodiscard]] absl::StatusOr<ReplicaActionLease> SubmitReplicaActionProposal(
      const ReplicaActionProposal& proposal) {
    return replication_->SubmitReplicaActionProposal(proposal);
  }
  // Cross-domain warmup of `domain` (stage 2; needs the warmup knob).
  [[nodiscard]] absl::StatusOr<WarmupRequestResult> RequestWarmup(absl::string_view domain) {
    return replication_->RequestWarmup(domain);
  }
  // The live dynamic_replication_mode (DynamicReplication::SetMode).
  DynamicReplicationMode dynamic_replication_mode() const { return replication_->mode(); }
  void SetDynamicReplicationMode(DynamicReplicationMode mode) { replication_->SetMode(mode); }
  // Task and lease ids of this incarnation start above
  // MasterService::IdBase(epoch): a copy that outlived an earlier master
  // (a crash, a failover) carries ids this one never hands out, so its
  // CopyEnd or CopyRevoke is refused. REQUIRES: before the first task or
  // lease.
  void SetIdEpoch(uint32_t epoch) {
    master_->SetIdEpoch(epoch);
    replication_->SetFirstLeaseId(MasterService::IdBase(epoch) + 1);
  }

  // --- The driver's hook --------------------------------------------------------
  // Installs `observer` (null removes it). Not thread-safe: REQUIRES no
  // concurrent master call; `observer` outlives its installation.
  void SetCallObserver(MasterCallObserver* observer);

  // --- Views ---------------------------------------------------------------------
  // The master's views (objects, segments, tasks, stats); no call through
  // it changes anything.
  const MasterService& master() const { return *master_; }
  DynamicReplication& replication() { return *replication_; }
  const DynamicReplication& replication() const { return *replication_; }
  const ReplicationKnobs& replication_knobs() const { return replication_->knobs(); }
  const MasterKnobs& master_knobs() const { return master_->knobs(); }

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
  // Sends each read and removal to the driver's observer, then to dynamic
  // replication.
  class ObserverTee final : public ReadObserver, public ReplicaRemovalObserver {
   public:
    ObserverTee(MasterCallObserver* driver, DynamicReplication* replication)
        : driver_(driver), replication_(replication) {}
    void OnKeyRead(const ReadObservation& read) override;
    void OnReplicaRemoved(const ReplicaRemoval& removal) override;

   private:
    MasterCallObserver* const driver_;
    DynamicReplication* const replication_;
  };

  ReplicatedMaster() = default;

  friend class ReplicatedMasterTestPeer;  // tests reach the MasterService

  // Destroyed in reverse order: the tee and replication first (they point
  // into the master and the registry).
  std::unique_ptr<MetricsRegistry> metrics_;
  std::unique_ptr<MasterService> master_;
  std::unique_ptr<DynamicReplication> replication_;
  std::unique_ptr<ObserverTee> tee_;
  MasterCallObserver* observer_ = nullptr;
};

}  // namespace heatsink

#endif  // HEATSINK_CORE_REPLICATION_REPLICATED_MASTER_H_
