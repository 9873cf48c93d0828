// Reference model for tests only: sim/network as it was before route classes
// (one timer and one rate per flow, O(n) per event), frozen in namespace
// heatsink::sim::legacy. tests/sim/network_legacy_test.cc holds the route-class
// network to it. Not built into any library; do not extend.
// File: sim/network.h
//
// Flow-level network model. A flow moves `bytes` from one host to another; it
// first waits the fixed per-transfer overhead plus the trunk latency of its
// route plus its source delay (setup), then shares bandwidth with every other flow on the resources
// it crosses:
//   same host    -> the host's local-copy bandwidth,
//   same domain  -> source NIC send, destination NIC receive,
//   cross domain -> source NIC send, one direction of each trunk on the route,
//                   destination NIC receive.
// Rates are max-min fair (progressive filling) in integer bytes per second.
// When several resources tie as the bottleneck the lower resource index goes
// first; each flow's share is rounded down, so a resource may keep a few bytes
// per second unused (at least 1 B/s per flow is always granted).
//
// Exactness: remaining work is held in byte-nanoseconds-per-second units
// (bytes * 10^9) in 128-bit integers, so progress at rate R over dt ns is
// exactly R * dt and the completion time is now + ceil(remaining / R). Two
// runs of the same operations give bit-identical rates and times.
//
// Selective update (as SimGrid): a flow starting, ending, failing, or a trunk
// changing capacity re-solves only the connected component of flows that share
// a resource with the change, transitively. last_update_flows_recomputed()
// tells how many flows the last update touched. Flows that start moving or
// finish at the same instant (a batch of reads set up together, equal flows
// ending together) share one re-solve: the activation or completion records
// its resources and the re-solve runs as one event at that same time, after
// the events already queued for it. No time passes in between, so every rate
// and completion time is what a re-solve per flow would give; `done` of a
// completed flow runs before the rates of the remaining flows are updated.
//
// Failures: StartFlow returns an error (and never calls `done`) for bad
// arguments (INVALID_ARGUMENT), the flow limit (RESOURCE_EXHAUSTED) or a route
// over a partitioned trunk (UNAVAILABLE). Otherwise `done` runs exactly once,
// later, as an engine event: OK when the last byte lands, or the failure
// status when the flow is failed (FailFlow, FailFlowsOfHost, or a trunk on its
// route partitioned, which gives UNAVAILABLE so that copies are revoked rather
// than stalled forever).
//
// NIC choice: a flow uses the NICs named in its FlowSpec, or else, at the end
// of setup, the source NIC with the fewest sending flows and the destination
// NIC with the fewest receiving flows (ties: lowest NIC index).
//
// Host indices passed to any method must be in [0, host_count()) (a
// programmer error otherwise), except in StartFlow, which reports
// INVALID_ARGUMENT.
//
// Thread safety: none (engine thread only).
#ifndef HEATSINK_LEGACY_NETWORK_H_
#define HEATSINK_LEGACY_NETWORK_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/env/rng.h"
#include "sim/engine.h"
#include "sim/inline_function.h"
#include "sim/network_topology.h"

namespace heatsink::sim {
namespace legacy {

using FlowId = uint64_t;  // 0 is never issued
// A flow's completion callback; up to 64 bytes of closure live inline in the
// flow's slot (sim/inline_function.h).
using FlowDone = InlineFunction<void(absl::Status), 64>;

struct FlowSpec {
  int src_host = -1;  // host indices, see Network::FindHost
  int dst_host = -1;
  int64_t bytes = 0;  // 0..flow_bytes_max; 0 completes right after setup
  int src_nic = -1;   // -1: least-loaded at the end of setup
  int dst_nic = -1;
  // Time the source spends before the first byte moves (reading the data out
  // of its memory: a head on a far NUMA node), added to setup.
  // 0..kSourceDelayMaxNs.
  DurationNs source_delay_ns = 0;

  static constexpr DurationNs kSourceDelayMaxNs = DurationNs{3'600} * 1'000'000'000;
};

struct FlowInfo {
  FlowId id = 0;
  bool moving = false;             // false while in setup
  int64_t rate_bytes_per_s = 0;    // 0 while in setup
  int64_t remaining_bytes = 0;     // rounded up, as of now
  TimeNs completion_ns = -1;       // -1 while in setup
};

struct NicLoad {
  int send_flows = 0;
  int receive_flows = 0;
};

// Cumulative accounting as of Counters()'s call time, including the partial
// progress of moving flows (whole bytes only).
struct NetworkCounters {
  std::array<uint64_t, kDistanceCount> bytes_by_distance{};  // index: Distance
  std::vector<uint64_t> host_bytes_sent;                     // by host index
  std::vector<uint64_t> host_bytes_received;
  uint64_t flows_started = 0;
  uint64_t flows_completed = 0;
  uint64_t flows_failed = 0;
  std::array<uint64_t, kDistanceCount> control_messages_by_distance{};
};

class Network {
 public:
  // `rng` (the network sub-stream) draws control-message jitter; it and
  // `engine` must outlive the network. INVALID_ARGUMENT for a bad topology or
  // knobs.
  static absl::StatusOr<std::unique_ptr<Network>> Create(Engine* engine, Rng* rng,
                                                         NetworkTopology topology,
                                                         const NetworkKnobs& knobs);
  Network(const Network&) = delete;
  Network& operator=(const Network&) = delete;
  ~Network();

  // Topology. Hosts are indexed in topology order (domain by domain).
  int host_count() const { return static_cast<int>(hosts_.size()); }
  std::optional<int> FindHost(absl::string_view name) const;
  const HostId& host_name(int host) const;
  int host_domain(int host) const;  // domain index
  const Domain& domain_name(int domain) const;
  int nic_count(int host) const;
  Distance DistanceBetween(int src_host, int dst_host) const;
  const NetworkKnobs& knobs() const { return knobs_; }

  // Starts a flow; see the file comment for errors and the `done` contract.
  [[nodiscard]] absl::StatusOr<FlowId> StartFlow(const FlowSpec& spec, FlowDone done);
  // Fails a live flow: its `done` gets `status` as a later event. False if the
  // flow is unknown or already finished. REQUIRES: !status.ok().
  bool FailFlow(FlowId id, absl::Status status);
  // Fails every live flow from or to `host` (a crashed worker), in id order.
  // Returns how many.
  int FailFlowsOfHost(int host, absl::Status status);
  std::optional<FlowInfo> GetFlow(FlowId id) const;
  int64_t flows_alive() const { return flows_alive_; }

  // Trunk faults, effective now. NOT_FOUND when no trunk joins the domains.
  // Partition fails every live flow whose route crosses the trunk with
  // UNAVAILABLE and refuses new flows and control messages over it until
  // HealTrunk.
  [[nodiscard]] absl::Status PartitionTrunk(absl::string_view domain_a, absl::string_view domain_b);
  [[nodiscard]] absl::Status HealTrunk(absl::string_view domain_a, absl::string_view domain_b);
  // Runs the trunk at `bandwidth_percent` (1..100) of its effective capacity
  // and adds `extra_latency_ns` to flows set up and messages sent from now on.
  // (100, 0) restores it. Moving flows are re-shared at once.
  [[nodiscard]] absl::Status DegradeTrunk(absl::string_view domain_a, absl::string_view domain_b,
                                          int64_t bandwidth_percent, DurationNs extra_latency_ns);

  // One-way latency of a control message: the distance class's base plus, for
  // cross-domain, the route's trunk latency, plus jitter drawn from the
  // network Rng. UNAVAILABLE across a partitioned trunk.
  [[nodiscard]] absl::StatusOr<DurationNs> ControlLatencyNs(int src_host, int dst_host);
  // Delivers `deliver` as an event after ControlLatencyNs. On error nothing is
  // scheduled (the message is lost; the caller decides what that means).
  [[nodiscard]] absl::Status SendControl(int src_host, int dst_host, EventFn deliver);

  NetworkCounters Counters() const;
  NicLoad NicFlows(int host, int nic) const;

  // Flows whose rate the last update re-solved (the size of the affected
  // component, or every moving flow when selective_update is off).
  int64_t last_update_flows_recomputed() const { return last_update_flows_recomputed_; }
  uint64_t rate_updates() const { return rate_updates_; }
  uint64_t flows_recomputed_total() const { return flows_recomputed_total_; }

 private:
  using Work = unsigned __int128;  // bytes * 10^9

  struct Resource {
    int64_t capacity_bytes_per_s = 0;
    std::vector<uint32_t> flows;  // slots of moving flows
    uint32_t visit_epoch = 0;
    bool reshare_pending = false;  // in pending_seeds_
    // Progressive-filling scratch, valid during Solve().
    int64_t solve_capacity = 0;
    int64_t solve_unfixed = 0;
  };
  struct ResourceRef {
    uint32_t resource;
    uint32_t position;  // index in resources_[resource].flows
  };
  struct Flow {
    FlowId id = 0;  // 0: free slot
    int src_host = 0;
    int dst_host = 0;
    int src_nic = -1;
    int dst_nic = -1;
    Distance distance = Distance::kSameHost;
    int64_t bytes = 0;
    bool moving = false;
    Work remaining_work = 0;
    int64_t rate_bytes_per_s = 0;
    int64_t next_rate_bytes_per_s = 0;
    TimeNs settled_ns = 0;
    TimeNs completion_ns = -1;
    EventId event = kNoTimer;  // activation, while in setup (completion: the lane)
    uint64_t bytes_counted = 0;  // bytes already in counters_
    uint32_t visit_epoch = 0;
    uint32_t fixed_epoch = 0;
    absl::InlinedVector<ResourceRef, 4> resources;
    FlowDone done;
  };
  struct HostState {
    HostId name;
    int domain = 0;
    uint32_t local_resource = 0;
    std::vector<uint32_t> send_resources;  // by NIC
    std::vector<uint32_t> receive_resources;
  };
  struct TrunkState {
    int64_t effective_bytes_per_s = 0;  // after oversubscription
    DurationNs latency_ns = 0;
    bool partitioned = false;
    int64_t bandwidth_percent = 100;
    DurationNs extra_latency_ns = 0;
    uint32_t resource_a_to_b = 0;
    uint32_t resource_b_to_a = 0;
  };

  Network(Engine* engine, Rng* rng, NetworkTopology topology, const NetworkKnobs& knobs);

  absl::StatusOr<int> FindTrunk(absl::string_view domain_a, absl::string_view domain_b) const;
  bool RouteBlocked(int src_domain, int dst_domain) const;
  DurationNs RouteLatencyNs(int src_domain, int dst_domain) const;
  bool RouteCrosses(int src_domain, int dst_domain, int trunk) const;

  void Activate(uint32_t slot, FlowId id);
  void Complete(uint32_t slot, FlowId id);
  void Attach(uint32_t slot);
  void Detach(uint32_t slot, std::vector<uint32_t>& touched);
  // Detaches a live flow, posts its `done` with `status` and frees the slot.
  void Fail(uint32_t slot, absl::Status status, std::vector<uint32_t>& touched);
  void FreeSlot(uint32_t slot);
  // Brings remaining_work to now at the flow's current rate. Flows whose
  // rate is unchanged by an update are settled lazily (see Reshare).
  void Settle(Flow& flow);
  Work RemainingWorkNow(const Flow& flow) const;
  // Moves the flow's whole bytes done so far (as of its last Settle) into
  // counters_. Called when a flow ends; Counters() adds the part of live
  // flows, so settling does not divide on every rate change.
  void CountProgress(Flow& flow);
  // Re-solves the component reachable from `seeds` (every moving flow when
  // selective_update is off) and reschedules completions that moved.
  void Reshare(absl::Span<const uint32_t> seeds);
  // Adds `seeds` to the re-solve scheduled for the current time (scheduling
  // it, as a zero-delay event, if there is none yet).
  void RequestReshare(absl::Span<const uint32_t> seeds);
  void Solve();
  TimeNs CompletionTime(const Flow& flow) const;

  Engine* const engine_;
  Rng* const rng_;
  const NetworkTopology topology_;
  const NetworkKnobs knobs_;
  std::vector<std::vector<Route>> routes_;
  std::vector<HostState> hosts_;
  std::vector<TrunkState> trunks_;
  std::vector<Resource> resources_;
  absl::flat_hash_map<std::string, int> host_index_;  // lookup only

  std::vector<Flow> flows_;  // slab
  std::vector<uint32_t> free_flow_slots_;
  absl::flat_hash_map<FlowId, uint32_t> flow_slot_;  // lookup only
  FlowId next_flow_id_ = 1;
  int64_t flows_alive_ = 0;

  // Settled accounting (see Counters() for the unsettled part).
  NetworkCounters counters_;

  uint32_t epoch_ = 0;
  std::vector<uint32_t> component_flows_;
  std::vector<uint32_t> component_resources_;
  std::vector<uint32_t> stack_;
  std::vector<uint32_t> solve_active_;  // resources with unfixed flows
  std::vector<Engine::LaneTimerUpdate> retimed_;  // completion timers a re-solve moves
  std::vector<uint32_t> touched_;
  // Resources whose flows changed at the current time and wait for the one
  // re-solve scheduled for it (see RequestReshare).
  std::vector<uint32_t> pending_seeds_;
  std::vector<uint32_t> resharing_seeds_;  // the seeds of the re-solve running now
  TimerId reshare_event_ = kNoTimer;
  // Flow completion timers, by flow slot: re-timed on most re-solves, so they
  // move in place in an engine timer lane.
  LaneId completion_lane_ = -1;
  int64_t last_update_flows_recomputed_ = 0;
  uint64_t rate_updates_ = 0;
  uint64_t flows_recomputed_total_ = 0;
};

}  // namespace legacy
}  // namespace heatsink::sim

#endif  // HEATSINK_LEGACY_NETWORK_H_
