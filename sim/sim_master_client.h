// File: sim/sim_master_client.h
//
// core/worker MasterClient for the simulator: every call is a modelled
// control message from the caller's host to the master's host, the call runs
// on the master, and the answer is a control message back. Both messages pay
// Network::ControlLatencyNs (distance class, trunk latency, seeded jitter), so
// a store worker or reader in another domain sees its GetReplicaList,
// FetchTasks or CopyStart answered later than a neighbour of the master.
// When the request arrives the call runs directly on the live incarnation's
// MasterEndpoint (SimMasterEndpoint::master(), the ReplicatedMaster). The
// calls themselves are MasterEndpointClient's (core/worker/
// master_endpoint_client.h); this file is its Transport.
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

#include <algorithm>
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
#include "core/master/master_endpoint.h"
#include "core/worker/master_endpoint_client.h"
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

// Which master the simulated control plane reaches: the live incarnation,
// or none while the master is down.
class SimMasterEndpoint {
 public:
  using ReportHook =
      std::function<void(ClientId client, const absl::StatusOr<ReportManifestResponse>& result)>;

  // A master (incarnation) comes up. REQUIRES: down.
  void Up(MasterEndpoint* master);
  // The master goes down; its pointer is forgotten. REQUIRES: up.
  void Down();
  bool up() const { return master_ != nullptr; }
  // Changes at every Up and Down.
  uint64_t incarnation() const { return incarnation_; }
  MasterEndpoint* master() const { return master_; }

  // Runs at the caller right after the `done` of each ReportManifest call.
  // May be empty. (What ran on the master is ReplicatedMaster's
  // MasterCallObserver::AfterReportManifest.)
  ReportHook report_answered;

 private:
  MasterEndpoint* master_ = nullptr;
  uint64_t incarnation_ = 0;
};

// MasterEndpointClient's Transport for SimMasterClient: the round trip as
// control messages.
class SimCallTransport {
 public:
  // `faults_rng` may be null when no fault is configured. Every pointer must
  // outlive the transport.
  SimCallTransport(Engine* engine, Network* network, const SimMasterEndpoint* endpoint,
                   int caller_host, int master_host, const ControlFaults& faults, Rng* faults_rng,
                   ControlStats* stats);

  int caller_host() const { return caller_host_; }
  const SimMasterEndpoint& endpoint() const { return *endpoint_; }

  // The round trip: request to the master, `run(master)` there, the answer
  // back to the caller, then `done(result)`. `Result` is absl::Status or
  // absl::StatusOr<T>.
  template <typename Result, typename Run, typename Done>
  void Call(Run run, Done done);

 private:
  // The delay of one message from `src` to `dst` (latency, plus the delay
  // fault if drawn), or nullopt when it is lost (dropped or unreachable).
  // Counts the message in the stats.
  std::optional<DurationNs> MessageDelay(int src, int dst);

  // A call whose request or answer was lost: `done` gets DEADLINE_EXCEEDED
  // at `deadline` (or now, if that has passed).
  template <typename Result, typename Done>
  void TimeOut(TimeNs deadline, Done done);

  Engine* const engine_;
  Network* const network_;
  const SimMasterEndpoint* const endpoint_;
  const int caller_host_;
  const int master_host_;
  const ControlFaults faults_;
  Rng* const faults_rng_;
  ControlStats* const stats_;
};

class SimMasterClient final : public MasterEndpointClient<SimCallTransport> {
 public:
  // `faults_rng` may be null when no fault is configured. Every pointer must
  // outlive the client.
  SimMasterClient(Engine* engine, Network* network, const SimMasterEndpoint* endpoint,
                  int caller_host, int master_host, const ControlFaults& faults, Rng* faults_rng,
                  ControlStats* stats)
      : MasterEndpointClient(engine, network, endpoint, caller_host, master_host, faults,
                             faults_rng, stats) {}

  int caller_host() const { return transport().caller_host(); }

  // As MasterEndpointClient's, then the endpoint's report_answered hook.
  void ReportManifest(ClientId client, const ReportManifestRequest& req,
                      Callback<ReportManifestResponse> done) override;
};

template <typename Result, typename Done>
void SimCallTransport::TimeOut(TimeNs deadline, Done done) {
  ++stats_->calls_timed_out;
  engine_->ScheduleAt(std::max(deadline, engine_->NowNs()), [done = std::move(done)]() mutable {
    std::move(done)(Result(absl::DeadlineExceededError(
        "control message to or from the master was lost (RPC deadline exceeded)")));
  });
}

template <typename Result, typename Run, typename Done>
void SimCallTransport::Call(Run run, Done done) {
  // `done` moves with the call: into the request, then into the answer, or
  // into the timeout at the step where a message is lost.
  const TimeNs deadline = engine_->NowNs() + faults_.rpc_timeout_ns;
  const uint64_t sent_to = endpoint_->incarnation();
  const std::optional<DurationNs> there = MessageDelay(caller_host_, master_host_);
  if (!there.has_value()) {
    TimeOut<Result>(deadline, std::move(done));
    return;
  }
  engine_->ScheduleAfter(
      *there, [this, deadline, sent_to, run = std::move(run), done = std::move(done)]() mutable {
        // A master that is down, or a connection its crash broke: refused.
        const bool refused = !endpoint_->up() || endpoint_->incarnation() != sent_to;
        Result result = refused ? Result(MasterDownError("the master is down or restarted"))
                                : run(*endpoint_->master());
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

}  // namespace heatsink::sim

#endif  // HEATSINK_SIM_SIM_MASTER_CLIENT_H_
