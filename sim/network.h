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
// Traffic classes (foreground first): every flow is foreground (reads, puts)
// or background (replica copies of any kind, warmup). NetworkKnobs::
// background_sharing chooses how they share a resource:
//   strict   -- foreground flows are filled first, exactly as if no
//               background flow existed; background flows then share, max-min
//               fair, what foreground left (at least 1 B/s each, so a
//               background flow crawls rather than stops);
//   weighted -- one weighted max-min fill: a background flow counts as
//               `background_weight` (in (0, 1]) of a foreground flow. Weights
//               are integers (foreground 2^20 units, background
//               max(1, round(weight * 2^20))); a class at the bottleneck gets
//               floor(capacity * its weight / unfixed units), which for
//               foreground-only resources is exactly capacity / flows;
//   equal    -- background flows are ordinary flows (the model before traffic
//               classes; for comparison).
// With no background flow moving, all three give the same rates to the byte.
//
// Route classes: moving flows over the same resources (after NIC choice)
// always get the same max-min rate, so they are kept as one route class. A
// class holds one virtual-progress clock (work units, below) that advances by
// the class's per-flow rate times the elapsed time; a flow joining a class
// records its target, the clock at its join plus its work. A flow's remaining
// work is target - clock (0 once the clock passes it). The members sit in a
// min-heap on (target, join order) and the class has ONE engine timer, for its
// first member. A rate change settles one clock and moves one timer per
// class, not one per flow, and the solver runs progressive filling over
// classes weighted by their flow counts, so an event costs O(classes in the
// component + log flows in the class), whatever the number of flows.
//
// Exactness: work is held in byte-nanoseconds-per-second units (bytes * 10^9)
// in 128-bit integers, so progress at rate R over dt ns is exactly R * dt and
// the completion time is now + ceil(remaining / R) (clamped far in the
// future). A class clock is settled exactly when the rate of its members
// changes, so every member's remaining work is the integer a per-flow
// account would hold: bytes * 10^9 - sum(R_i * dt_i), clamped at 0. Two runs
// of the same operations give bit-identical rates and times.
//
// Completion order and ties: flows complete in (completion time, engine
// sequence) order, as events do. When a re-solve re-times a class it draws
// one engine sequence number, and every member completing before the class's
// next re-time runs with it, as if all of them had been timed, one after the
// other, by that re-solve. Within a class equal completion times therefore
// run in (target, join order) order -- join order is the order flows ended
// setup -- and all of them run before anything scheduled after the re-solve,
// such as the re-solve that the first of them requests. Classes re-timed by
// one re-solve are ordered as the re-solve visits them (depth first from the
// changed resources, each resource's classes in the order they gained their
// first flow there), so flows of different classes due at the same time run
// class by class. A first member whose completion time a re-time leaves
// unchanged keeps its place.
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
// Flow groups (bulk operations): a FlowSpec with count = k > 1 is k flows of
// `bytes` each, started together over the same route and NIC pair. They join
// their class together, always move at the same rate and land at the same
// instant, so the group is one class member (weight k in the solver, k in
// every flow count and NIC load, k times the bytes in the counters) with one
// timer and one `done`. Against k single flows started in the same event the
// rates, completion times and counters are the same to the byte; what
// differs is the number of engine events (one completion instead of k) and,
// on hosts with several NICs and no NIC named, the NIC choice: the group
// takes one least-loaded pair where single flows would spread.
//
// Host indices passed to any method must be in [0, host_count()) (a
// programmer error otherwise), except in StartFlow, which reports
// INVALID_ARGUMENT.
//
// Thread safety: none (engine thread only).
#ifndef HEATSINK_SIM_NETWORK_H_
#define HEATSINK_SIM_NETWORK_H_

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
#include "sim/chunked_slab.h"
#include "sim/engine.h"
#include "sim/inline_function.h"
#include "sim/network_topology.h"

namespace heatsink::sim {

// A live flow's handle: its sequence number (from 1, in start order) and its
// slot, in one word, so a lookup needs no table. Handles of a network sort
// in start order; 0 is never issued.
using FlowId = uint64_t;
// A flow's completion callback; up to 64 bytes of closure live inline in the
// flow's slot (sim/inline_function.h).
using FlowDone = InlineFunction<void(absl::Status), 64>;

// See the file comment ("Traffic classes").
enum class TrafficClass : uint8_t { kForeground, kBackground };

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
  TrafficClass traffic_class = TrafficClass::kForeground;
  // Flows in the group, 1..flows_max (see "Flow groups" above).
  int64_t count = 1;

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
  uint64_t background_bytes = 0;  // of bytes_by_distance, moved by background flows
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
    std::vector<uint32_t> classes;  // route classes with moving flows over it
    int64_t flows = 0;              // moving flows over it (all its classes)
    int64_t background_flows = 0;   // of which background
    uint32_t visit_epoch = 0;
    bool reshare_pending = false;  // in pending_seeds_
    // Progressive-filling scratch, valid during Solve(): capacity left and
    // weight units of the flows not yet fixed.
    int64_t solve_capacity = 0;
    int64_t solve_unfixed = 0;
  };
  using ResourceList = absl::InlinedVector<uint32_t, 4>;  // resource indices, in route order
  struct Member {
    Work target_work;
    uint64_t join_order;
    uint32_t slot;
  };
  // The moving flows over one route: they always share one rate. See the
  // file comment ("Route classes").
  struct RouteClass {
    ResourceList resources;
    bool background = false;  // the traffic class of its flows
    ResourceList positions;  // index in resources_[r].classes, while it has flows
    // The member flows, a min-heap on (target_work, join_order). Entries
    // carry their keys, so the heap is walked without touching the flows; a
    // flow failed from the middle leaves a stale entry (see MemberLive),
    // dropped when it reaches the top or when stale entries outnumber live
    // ones.
    std::vector<Member> heap;
    int64_t members = 0;  // live entries
    int64_t flows = 0;    // flows of the live entries (a group counts its size)
    Work clock = 0;  // virtual progress of every member, as of settled_ns
    TimeNs settled_ns = 0;
    int64_t rate_bytes_per_s = 0;  // per flow; 0 until its first re-solve
    int64_t next_rate_bytes_per_s = 0;
    bool joined = false;    // a flow joined since the last re-solve
    uint64_t solves = 0;    // re-solves that rated the class
    // Completion timer (lane handle: the class index) and the engine
    // sequence number drawn when the class was last re-timed, which every
    // member completing after that re-time runs with.
    uint64_t sequence = 0;
    TimeNs timer_ns = -1;  // -1: no timer
    uint32_t timer_slot = 0;
    uint32_t visit_epoch = 0;
    uint32_t fixed_epoch = 0;
  };
  struct Flow {
    uint64_t id = 0;  // the flow's sequence number; 0: free slot
    int src_host = 0;
    int dst_host = 0;
    int src_nic = -1;
    int dst_nic = -1;
    Distance distance = Distance::kSameHost;
    int64_t bytes = 0;  // per flow of the group
    int64_t count = 1;  // flows in the group
    bool moving = false;
    bool background = false;        // TrafficClass::kBackground (accounting)
    bool background_class = false;  // shares as background (not under `equal`)
    uint32_t route_class = 0;  // while moving
    Work target_work = 0;      // class clock at which the last byte lands
    uint64_t join_order = 0;   // ties between equal targets; unique
    uint64_t rated_after = 0;  // the class's `solves` count once it has a rate
    EventId event = kNoTimer;  // activation, while in setup
    uint64_t bytes_counted = 0;  // bytes per flow already in counters_
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
  // The slot of the live flow a FlowId names (its token), if any.
  std::optional<uint32_t> LiveSlot(FlowId id) const;
  // The class timer fired: completes the class's first flow.
  void CompleteFirst(uint32_t route_class);
  // Ends a flow whose last byte landed (or that had none): `done` runs inline.
  void Complete(uint32_t slot);
  uint32_t FindOrAddClass(const ResourceList& route, bool background);
  // Puts a flow into its class (the class clock settled to now first).
  void Join(uint32_t slot, uint32_t route_class);
  // Takes a moving flow out of its class, re-arming the class timer if the
  // class's first flow changed; appends the class's resources to `touched`.
  void Leave(uint32_t slot, std::vector<uint32_t>& touched);
  // Detaches a live flow, posts its `done` with `status` and frees the slot.
  void Fail(uint32_t slot, absl::Status status, std::vector<uint32_t>& touched);
  void FreeSlot(uint32_t slot);
  // Class clock now, and the class clock brought to now at its rate.
  Work ClockNow(const RouteClass& c) const;
  void Settle(RouteClass& c);
  Work RemainingWorkNow(const Flow& flow) const;
  // Whole bytes per flow of the group moved so far, with `remaining` work left.
  static uint64_t BytesDone(const Flow& flow, Work remaining);
  // Adds `bytes_per_flow` moved by each flow of the group to `counters`.
  static void AddBytes(const Flow& flow, uint64_t bytes_per_flow, NetworkCounters& counters);
  // Moves the flow's whole bytes done so far into counters_. Called when a
  // flow ends; Counters() adds the part of live flows.
  void CountProgress(Flow& flow, Work remaining);
  // Sets the class timer to its first flow's completion, with a newly drawn
  // sequence number when `fresh` (the class was re-timed by a re-solve), else
  // with the class's current one (its first flow left).
  void ArmClassTimer(uint32_t route_class, bool fresh);
  // Class heap: an entry is live while its flow still moves (join orders
  // are unique, so a reused slot does not revive it).
  bool MemberLive(const Member& m) const;
  // Pops stale entries off the top of the class heap.
  void DropStaleFirst(RouteClass& c);
  // Re-solves the component reachable from `seeds` (every moving flow when
  // selective_update is off) and re-times the classes whose rate moved.
  void Reshare(absl::Span<const uint32_t> seeds);
  // Adds `seeds` to the re-solve scheduled for the current time (scheduling
  // it, as a zero-delay event, if there is none yet).
  void RequestReshare(absl::Span<const uint32_t> seeds);
  void Solve();
  // One progressive fill over the component's unfixed classes, a flow of a
  // foreground class counting `foreground_units` and one of a background
  // class `background_units` (0: the class waits for a later pass).
  void SolvePass(int64_t foreground_units, int64_t background_units);
  TimeNs CompletionTime(Work remaining, int64_t rate_bytes_per_s) const;

  Engine* const engine_;
  Rng* const rng_;
  const NetworkTopology topology_;
  const NetworkKnobs knobs_;
  std::vector<std::vector<Route>> routes_;
  std::vector<HostState> hosts_;
  std::vector<TrunkState> trunks_;
  std::vector<Resource> resources_;
  absl::flat_hash_map<std::string, int> host_index_;  // lookup only

  ChunkedSlab<Flow, 12> flows_;  // slots in use or free
  std::vector<uint32_t> free_flow_slots_;
  uint64_t next_flow_id_ = 1;  // the next flow's sequence number
  int64_t flows_alive_ = 0;
  uint64_t next_join_order_ = 0;

  // Route classes, kept (empty) once created; lookup only by route (a
  // background class's key ends with kBackgroundKey).
  std::vector<RouteClass> classes_;
  absl::flat_hash_map<ResourceList, uint32_t> class_index_;
  static constexpr uint32_t kBackgroundKey = ~uint32_t{0};

  // Settled accounting (see Counters() for the unsettled part).
  NetworkCounters counters_;

  uint32_t epoch_ = 0;
  std::vector<uint32_t> component_classes_;
  std::vector<uint32_t> component_resources_;
  std::vector<uint32_t> stack_;
  std::vector<uint32_t> solve_active_;  // resources with unfixed flows
  std::vector<uint32_t> touched_;
  ResourceList route_scratch_;
  // Resources whose flows changed at the current time and wait for the one
  // re-solve scheduled for it (see RequestReshare).
  std::vector<uint32_t> pending_seeds_;
  std::vector<uint32_t> resharing_seeds_;  // the seeds of the re-solve running now
  TimerId reshare_event_ = kNoTimer;
  // Class completion timers, by class index, moved in place in an engine
  // timer lane.
  LaneId completion_lane_ = -1;
  int64_t last_update_flows_recomputed_ = 0;
  uint64_t rate_updates_ = 0;
  uint64_t flows_recomputed_total_ = 0;
};

}  // namespace heatsink::sim

#endif  // HEATSINK_SIM_NETWORK_H_
