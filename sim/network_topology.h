// File: sim/network_topology.h
//
// The simulated network as plain values: domains -> hosts -> NICs, trunk links
// between domains, and the knobs of the network model (per-transfer overhead,
// control-message latency by distance, limits). The scenario loader fills
// these from JSON; tests build them by hand.
//
// Units: bandwidth in bytes per second, latency in nanoseconds, both integers.
//
// Routing: a flow or message between two domains crosses the trunks of the
// route with the least total latency (ties: fewest trunks, then the lower-indexed
// domain before the destination, recursively). Routes are fixed when the network is built;
// a partitioned trunk is not routed around, it fails what crosses it.
#ifndef HEATSINK_SIM_NETWORK_TOPOLOGY_H_
#define HEATSINK_SIM_NETWORK_TOPOLOGY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/base/knobs.h"
#include "core/env/time.h"
#include "core/model/ids.h"

namespace heatsink::sim {

// How far apart two hosts are; the classes the accounting and the control
// latency use.
enum class Distance : int { kSameHost = 0, kSameDomain = 1, kCrossDomain = 2 };
inline constexpr int kDistanceCount = 3;
// "same_host", "same_domain", "cross_domain".
absl::string_view DistanceName(Distance distance);

struct NicSpec {
  int64_t send_bytes_per_s = 0;
  int64_t receive_bytes_per_s = 0;
};

struct HostSpec {
  HostId name;
  std::vector<NicSpec> nics;  // at least one
  // Bandwidth of a copy between two segments of the same host (memory copy);
  // same-host flows share it instead of a NIC.
  int64_t local_copy_bytes_per_s = 20'000'000'000;
};

struct DomainSpec {
  Domain name;
  std::vector<HostSpec> hosts;
};

// A full-duplex link between two domains: each direction has the whole
// capacity. Effective capacity = bandwidth * 100 / oversubscription_percent
// (100: none; 300: 3:1 oversubscribed, a third of the bandwidth is usable).
struct TrunkSpec {
  Domain domain_a;
  Domain domain_b;
  int64_t bandwidth_bytes_per_s = 0;
  DurationNs latency_ns = 0;
  int64_t oversubscription_percent = 100;
};

inline constexpr int kNicsPerHostMax = 16;
inline constexpr int64_t kOversubscriptionPercentMax = 100'000;

struct NetworkTopology {
  std::vector<DomainSpec> domains;
  std::vector<TrunkSpec> trunks;

  // Non-empty unique domain and host names, at least one host, 1..16 NICs per
  // host, positive bandwidths, trunks between two distinct known domains (at
  // most one per pair), latency >= 0, oversubscription in [100, 100000], and
  // every domain reachable from every other. INVALID_ARGUMENT names the
  // offending element.
  [[nodiscard]] absl::Status Validate() const;
};

struct NetworkKnobs {
  // Fixed cost of every transfer (connection setup, memory registration,
  // completion signalling): a flow waits this long, plus the trunk latency of
  // its route, before it starts taking bandwidth.
  DurationNs transfer_overhead_ns = 10'000;
  // Most flows alive at once (in setup or moving bytes).
  int64_t flows_max = 1'000'000;
  // Largest single flow; keeps the exact byte arithmetic far from overflow.
  int64_t flow_bytes_max = int64_t{1} << 40;
  // One-way latency of a control message by distance; cross-domain messages
  // also pay the trunk latency of their route.
  DurationNs control_same_host_latency_ns = 5'000;
  DurationNs control_same_domain_latency_ns = 50'000;
  DurationNs control_cross_domain_latency_ns = 100'000;
  // Each message adds a uniform jitter in [0, base * percent / 100], drawn
  // from the network Rng.
  int64_t control_jitter_percent = 10;
  // false recomputes every flow's rate on every change instead of only the
  // flows sharing a resource with the change; for checking and benchmarks.
  bool selective_update = true;
  // How background flows (replica copies, warmup) share a resource with
  // foreground ones (reads, puts); see sim/network.h, "Traffic classes".
  enum class BackgroundSharing { kStrict, kWeighted, kEqual };
  BackgroundSharing background_sharing = BackgroundSharing::kStrict;
  // With kWeighted: a background flow's weight against a foreground flow's 1.
  // In (0, 1].
  double background_weight = 0.1;

  [[nodiscard]] absl::Status Validate() const;
  static const KnobRegistry<NetworkKnobs>& Registry();
};

// One direction of a trunk on a route.
struct RouteHop {
  int trunk = 0;               // index into NetworkTopology::trunks
  bool a_to_b = true;          // direction of travel
};

struct Route {
  std::vector<RouteHop> hops;  // empty within a domain
  DurationNs latency_ns = 0;   // sum of the hops' trunk latencies
};

// routes[from][to] for domain indices. REQUIRES: topology.Validate().ok().
std::vector<std::vector<Route>> ComputeRoutes(const NetworkTopology& topology);

}  // namespace heatsink::sim

#endif  // HEATSINK_SIM_NETWORK_TOPOLOGY_H_
