// File: sim/sim_master_client.h
//
// core/worker MasterClient for the simulator: every call is a modelled
// control message from the caller's host to the master's host, the call runs
// on the master, and the answer is a control message back. Both messages pay
// Network::ControlLatencyNs (distance class, trunk latency, seeded jitter), so
// a store worker or reader in another domain sees its GetReplicaList,
// FetchTasks or CopyStart answered later than a neighbour of the master.
// When the request arrives the call runs directly on the live incarnation's
// MasterService (SimMasterEndpoint::master(); there is no inner
// MasterClient); the dynamic copy calls go to the endpoint's DynamicCopyCalls
// (dynamic replication's lease checks), or to the master's Leased* calls
// without one.
//
// Faults (the scenario's control_messages): each message is dropped with
// drop_probability or delayed by delay_ns with delay_probability, both drawn
// from the faults Rng. A lost message (dropped, or refused by a partitioned
// trunk) makes the call fail with DEADLINE_EXCEEDED at
// rpc_timeout_ns after it was sent, as a real RPC deadline would; a request
// lost on the way back has still run on the master.
//
// Master crashes (the scenario's master_crashes): the client reaches the
// master through a SimMasterEndpoint, which says which master incarnation is
// up. A request that arrives while the master is down, or at another
// incarnation than the one up when it was sent (the crash broke the
// connection), is answered UNAVAILABLE "master_down" without running; an
// answer of an incarnation that crashed while the answer was on its way is
// replaced by the same status when it arrives.
//
// One instance per caller host.
// The MasterClient contract holds: `done` runs exactly once, later, as an
// engine event.
//
// Thread safety: none (engine thread only).
#ifndef HEATSINK_SIM_SIM_MASTER_CLIENT_H_
#define HEATSINK_SIM_SIM_MASTER_CLIENT_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <utility>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/env/rng.h"
#include "core/master/dynamic_copy_calls.h"
#include "core/master/master_service.h"
#include "core/worker/master_client.h"
#include "sim/engine.h"
#include "sim/network.h"

namespace heatsink::sim {

struct ControlFaults {
  // Probabilities as numerator / kProbabilityDenominator, drawn exactly.
  uint64_t drop_ppm = 0;
  uint64_t delay_ppm = 0;
  DurationNs delay_ns = 0;
  // Messages sent at or after this time are neither dropped nor delayed.
  TimeNs until_ns = std::numeric_limits<TimeNs>::max();
  // A call whose request or answer was lost fails after this long.
  DurationNs rpc_timeout_ns = 1'000'000'000;
};

// Message counters shared by every client of a run.
struct ControlStats {
  uint64_t messages = 0;
  uint64_t dropped = 0;
  uint64_t delayed = 0;
  uint64_t unreachable = 0;  // refused by a partitioned trunk
  uint64_t calls_timed_out = 0;
  uint64_t master_down = 0;  // calls answered "master_down" (master_crashes)
};

// The prefix of the UNAVAILABLE message of a call the master could not
// answer because it was down or crashed meanwhile.
inline constexpr absl::string_view kMasterDownReason = "master_down";
// UNAVAILABLE "master_down: <why>".
inline absl::Status MasterDownError(absl::string_view why) {
  return absl::UnavailableError(absl::StrCat(kMasterDownReason, ": ", why));
}

// Which master the simulated control plane reaches: the live incarnation's
// MasterService and dynamic copy calls, or none while the master is down.
class SimMasterEndpoint {
 public:
  using ReportHook = std::function<void(ClientId client, const ReportManifestRequest& req,
                                        const absl::StatusOr<ReportManifestResponse>& result)>;

  // A master (incarnation) comes up. `dynamic` may be null (the master's
  // Leased* calls then serve the dynamic copy lifecycle). REQUIRES: down.
  void Up(MasterService* master, DynamicCopyCalls* dynamic);
  // The master goes down; its pointers are forgotten. REQUIRES: up.
  void Down();
  bool up() const { return master_ != nullptr; }
  // Changes at every Up and Down.
  uint64_t incarnation() const { return incarnation_; }
  MasterService* master() const { return master_; }
  DynamicCopyCalls* dynamic() const { return dynamic_; }

  // Observers of ReportManifest calls: `applied` runs on the master right
  // after the call, `answered` at the caller right after its `done`. Either
  // may be empty.
  ReportHook report_applied;
  ReportHook report_answered;

 private:
  MasterService* master_ = nullptr;
  DynamicCopyCalls* dynamic_ = nullptr;
  uint64_t incarnation_ = 0;
};

class SimMasterClient final : public MasterClient {
 public:
  // `faults_rng` may be null when no fault is configured. Every pointer must
  // outlive the client.
  SimMasterClient(Engine* engine, Network* network, const SimMasterEndpoint* endpoint,
                  int caller_host, int master_host, const ControlFaults& faults, Rng* faults_rng,
                  ControlStats* stats);
  SimMasterClient(const SimMasterClient&) = delete;
  SimMasterClient& operator=(const SimMasterClient&) = delete;

  int caller_host() const { return caller_host_; }

  void RegisterClient(const RegisterClientRequest& req, StatusCallback done) override;
  void Heartbeat(ClientId client, StatusCallback done) override;
  void MountSegment(ClientId client, const MountSegmentRequest& req, StatusCallback done) override;
  void UnmountSegment(ClientId client, SegmentId segment, StatusCallback done) override;
  void PutStart(ClientId client, const PutStartRequest& req,
                Callback<PutStartResponse> done) override;
  void PutEnd(ClientId client, const PutEndRequest& req, StatusCallback done) override;
  void PutRevoke(ClientId client, const PutRevokeRequest& req, StatusCallback done) override;
  void GetReplicaList(const GetReplicaListRequest& req,
                      Callback<GetReplicaListResponse> done) override;
  void BatchGetReplicaList(const BatchGetReplicaListRequest& req,
                           Callback<BatchGetReplicaListResponse> done) override;
  void Remove(const RemoveRequest& req, StatusCallback done) override;
  void ReportManifest(ClientId client, const ReportManifestRequest& req,
                      Callback<ReportManifestResponse> done) override;
  void FetchTasks(ClientId client, size_t batch_max, uint64_t manifest_ack_seq,
                  Callback<FetchTasksResponse> done) override;
  void MarkTaskComplete(ClientId client, const MarkTaskCompleteRequest& req,
                        StatusCallback done) override;
  void CopyStart(ClientId client, const CopyStartRequest& req,
                 Callback<CopyStartResponse> done) override;
  void CopyEnd(ClientId client, const CopyEndRequest& req, StatusCallback done) override;
  void CopyRevoke(ClientId client, const CopyRevokeRequest& req, StatusCallback done) override;
  void DynamicReplicaCopyStart(ClientId client, const CopyStartRequest& req,
                               Callback<CopyStartResponse> done) override;
  void DynamicReplicaCopyEnd(ClientId client, const CopyEndRequest& req,
                             StatusCallback done) override;
  void DynamicReplicaCopyRevoke(ClientId client, const CopyRevokeRequest& req,
                                StatusCallback done) override;

  // The writer's batch calls (Mooncake's BatchPut): one round trip each for
  // the keys a prefill instance puts together.
  void BatchPutStart(ClientId client, const BatchPutStartRequest& req,
                     Callback<BatchPutStartResponse> done) override;
  void BatchPutEnd(ClientId client, const BatchPutEndRequest& req,
                   Callback<BatchPutResponse> done) override;
  void BatchPutRevoke(ClientId client, const BatchPutRevokeRequest& req,
                      Callback<BatchPutResponse> done) override;

 private:
  // The delay of one message from `src` to `dst` (latency, plus the delay
  // fault if drawn), or nullopt when it is lost (dropped or unreachable).
  // Counts the message in the stats.
  std::optional<DurationNs> MessageDelay(int src, int dst);

  // A call whose request or answer was lost: `done` gets DEADLINE_EXCEEDED
  // at `deadline` (or now, if that has passed).
  template <typename Result, typename Done>
  void TimeOut(TimeNs deadline, Done done);

  // The round trip: request to the master, `run()` there, the answer back to
  // the caller, then `done(result)`. `Result` is absl::Status or
  // absl::StatusOr<T>.
  template <typename Result, typename Run, typename Done>
  void Call(Run run, Done done);

  // The live master; only called while a request runs on it.
  MasterService* master() const { return endpoint_->master(); }
  DynamicCopyCalls* dynamic() const { return endpoint_->dynamic(); }

  Engine* const engine_;
  Network* const network_;
  const SimMasterEndpoint* const endpoint_;
  const int caller_host_;
  const int master_host_;
  const ControlFaults faults_;
  Rng* const faults_rng_;
  ControlStats* const stats_;
};

}  // namespace heatsink::sim

#endif  // HEATSINK_SIM_SIM_MASTER_CLIENT_H_
