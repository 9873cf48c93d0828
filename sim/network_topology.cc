#include "sim/network_topology.h"

#include <algorithm>
#include <limits>
#include <set>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/base/check.h"

namespace heatsink::sim {
namespace {

struct Adjacent {
  int trunk;
  int neighbor;
  bool a_to_b;
};

// Domain index by name; only looked up, never iterated.
absl::flat_hash_map<std::string, int> DomainIndex(const NetworkTopology& topology) {
  absl::flat_hash_map<std::string, int> index;
  for (size_t d = 0; d < topology.domains.size(); ++d) {
    index.emplace(topology.domains[d].name, static_cast<int>(d));
  }
  return index;
}

// adjacency[d]: trunks leaving domain d, in trunk order.
std::vector<std::vector<Adjacent>> Adjacency(const NetworkTopology& topology) {
  const auto index = DomainIndex(topology);
  std::vector<std::vector<Adjacent>> adjacency(topology.domains.size());
  for (size_t t = 0; t < topology.trunks.size(); ++t) {
    const int a = index.at(topology.trunks[t].domain_a);
    const int b = index.at(topology.trunks[t].domain_b);
    adjacency[a].push_back(Adjacent{static_cast<int>(t), b, true});
    adjacency[b].push_back(Adjacent{static_cast<int>(t), a, false});
  }
  return adjacency;
}

absl::Status Invalid(absl::string_view what) { return absl::InvalidArgumentError(what); }

}  // namespace

absl::string_view DistanceName(Distance distance) {
  switch (distance) {
    case Distance::kSameHost:
      return "same_host";
    case Distance::kSameDomain:
      return "same_domain";
    case Distance::kCrossDomain:
      return "cross_domain";
  }
  return "unknown";
}

absl::Status NetworkTopology::Validate() const {
  if (domains.empty()) return Invalid("topology has no domains");
  std::set<std::string> domain_names;
  std::set<std::string> host_names;
  for (size_t d = 0; d < domains.size(); ++d) {
    const DomainSpec& domain = domains[d];
    if (domain.name.empty()) return Invalid(absl::StrCat("domains[", d, "]: empty name"));
    if (!domain_names.insert(domain.name).second) {
      return Invalid(absl::StrCat("domains[", d, "]: duplicate domain '", domain.name, "'"));
    }
    for (size_t h = 0; h < domain.hosts.size(); ++h) {
      const HostSpec& host = domain.hosts[h];
      const std::string where = absl::StrCat("domains[", d, "].hosts[", h, "]");
      if (host.name.empty()) return Invalid(absl::StrCat(where, ": empty name"));
      if (!host_names.insert(host.name).second) {
        return Invalid(absl::StrCat(where, ": duplicate host '", host.name, "'"));
      }
      if (host.nics.empty() || host.nics.size() > static_cast<size_t>(kNicsPerHostMax)) {
        return Invalid(absl::StrCat(where, ": needs 1..", kNicsPerHostMax, " nics, has ",
                                    host.nics.size()));
      }
      for (size_t n = 0; n < host.nics.size(); ++n) {
        if (host.nics[n].send_bytes_per_s <= 0 || host.nics[n].receive_bytes_per_s <= 0) {
          return Invalid(absl::StrCat(where, ".nics[", n, "]: bandwidth must be positive"));
        }
      }
      if (host.local_copy_bytes_per_s <= 0) {
        return Invalid(absl::StrCat(where, ": local_copy_bytes_per_s must be positive"));
      }
    }
  }
  if (host_names.empty()) return Invalid("topology has no hosts");
  std::set<std::pair<std::string, std::string>> pairs;
  for (size_t t = 0; t < trunks.size(); ++t) {
    const TrunkSpec& trunk = trunks[t];
    const std::string where = absl::StrCat("trunks[", t, "]");
    if (!domain_names.contains(trunk.domain_a) || !domain_names.contains(trunk.domain_b)) {
      return Invalid(absl::StrCat(where, ": unknown domain '",
                                  domain_names.contains(trunk.domain_a) ? trunk.domain_b
                                                                        : trunk.domain_a,
                                  "'"));
    }
    if (trunk.domain_a == trunk.domain_b) {
      return Invalid(absl::StrCat(where, ": a trunk joins two different domains"));
    }
    auto key = std::minmax(trunk.domain_a, trunk.domain_b);
    if (!pairs.emplace(key.first, key.second).second) {
      return Invalid(absl::StrCat(where, ": second trunk between '", trunk.domain_a, "' and '",
                                  trunk.domain_b, "'"));
    }
    if (trunk.bandwidth_bytes_per_s <= 0) {
      return Invalid(absl::StrCat(where, ": bandwidth must be positive"));
    }
    if (trunk.latency_ns < 0) return Invalid(absl::StrCat(where, ": negative latency"));
    if (trunk.oversubscription_percent < 100 ||
        trunk.oversubscription_percent > kOversubscriptionPercentMax) {
      return Invalid(absl::StrCat(where, ": oversubscription_percent must be in [100, ",
                                  kOversubscriptionPercentMax, "]"));
    }
  }
  // Every domain must reach every other: a flow with no route is a scenario
  // error, not a runtime partition.
  const auto adjacency = Adjacency(*this);
  std::vector<bool> seen(domains.size(), false);
  std::vector<int> stack = {0};
  seen[0] = true;
  while (!stack.empty()) {
    const int d = stack.back();
    stack.pop_back();
    for (const Adjacent& adj : adjacency[d]) {
      if (!seen[adj.neighbor]) {
        seen[adj.neighbor] = true;
        stack.push_back(adj.neighbor);
      }
    }
  }
  for (size_t d = 0; d < domains.size(); ++d) {
    if (!seen[d]) {
      return Invalid(absl::StrCat("domain '", domains[d].name, "' is not reachable from '",
                                  domains[0].name, "' over trunks"));
    }
  }
  return absl::OkStatus();
}

std::vector<std::vector<Route>> ComputeRoutes(const NetworkTopology& topology) {
  const int n = static_cast<int>(topology.domains.size());
  const auto adjacency = Adjacency(topology);
  std::vector<std::vector<Route>> routes(n, std::vector<Route>(n));
  constexpr DurationNs kUnreached = std::numeric_limits<DurationNs>::max();
  for (int source = 0; source < n; ++source) {
    // Dijkstra over (latency, hops); O(n^2) is fine for tens of domains.
    std::vector<DurationNs> latency(n, kUnreached);
    std::vector<int> hops(n, 0);
    std::vector<Adjacent> via(n, Adjacent{-1, -1, true});  // neighbor = predecessor
    std::vector<bool> done(n, false);
    latency[source] = 0;
    for (int round = 0; round < n; ++round) {
      int u = -1;
      for (int d = 0; d < n; ++d) {
        if (done[d] || latency[d] == kUnreached) continue;
        if (u == -1 || std::tie(latency[d], hops[d]) < std::tie(latency[u], hops[u])) u = d;
      }
      if (u == -1) break;
      done[u] = true;
      for (const Adjacent& adj : adjacency[u]) {
        const int v = adj.neighbor;
        if (done[v]) continue;
        const DurationNs l = latency[u] + topology.trunks[adj.trunk].latency_ns;
        const int h = hops[u] + 1;
        const bool better = latency[v] == kUnreached || std::tie(l, h) < std::tie(latency[v], hops[v]) ||
                            (l == latency[v] && h == hops[v] && u < via[v].neighbor);
        if (better) {
          latency[v] = l;
          hops[v] = h;
          via[v] = Adjacent{adj.trunk, u, adj.a_to_b};
        }
      }
    }
    for (int target = 0; target < n; ++target) {
      HS_CHECK_MSG(latency[target] != kUnreached, "ComputeRoutes needs a validated topology");
      Route& route = routes[source][target];
      route.latency_ns = latency[target];
      for (int d = target; d != source; d = via[d].neighbor) {
        route.hops.push_back(RouteHop{via[d].trunk, via[d].a_to_b});
      }
      std::reverse(route.hops.begin(), route.hops.end());
    }
  }
  return routes;
}

absl::Status NetworkKnobs::Validate() const {
  if (transfer_overhead_ns < 0) return Invalid("transfer_overhead_ns must not be negative");
  if (flows_max < 1) return Invalid("flows_max must be at least 1");
  if (flow_bytes_max < 1 || flow_bytes_max > (int64_t{1} << 50)) {
    return Invalid("flow_bytes_max must be in [1, 2^50]");
  }
  if (control_same_host_latency_ns < 0 || control_same_domain_latency_ns < 0 ||
      control_cross_domain_latency_ns < 0) {
    return Invalid("control latencies must not be negative");
  }
  if (control_jitter_percent < 0 || control_jitter_percent > 1000) {
    return Invalid("control_jitter_percent must be in [0, 1000]");
  }
  if (!(background_weight > 0 && background_weight <= 1)) {
    return Invalid(absl::StrCat("background_weight must be in (0, 1], got ", background_weight));
  }
  return absl::OkStatus();
}

const KnobRegistry<NetworkKnobs>& NetworkKnobs::Registry() {
  static const KnobRegistry<NetworkKnobs>* const registry = [] {
    auto* r = new KnobRegistry<NetworkKnobs>();
    r->Field("transfer_overhead_ns", "fixed setup time of every transfer",
             [](NetworkKnobs& k) -> int64_t& { return k.transfer_overhead_ns; })
        .Field("flows_max", "most flows alive at once",
               [](NetworkKnobs& k) -> int64_t& { return k.flows_max; })
        .Field("flow_bytes_max", "largest single flow in bytes",
               [](NetworkKnobs& k) -> int64_t& { return k.flow_bytes_max; })
        .Field("control_same_host_latency_ns", "control message latency within a host",
               [](NetworkKnobs& k) -> int64_t& { return k.control_same_host_latency_ns; })
        .Field("control_same_domain_latency_ns", "control message latency within a domain",
               [](NetworkKnobs& k) -> int64_t& { return k.control_same_domain_latency_ns; })
        .Field("control_cross_domain_latency_ns",
               "control message latency across domains, before trunk latency",
               [](NetworkKnobs& k) -> int64_t& { return k.control_cross_domain_latency_ns; })
        .Field("control_jitter_percent", "uniform jitter bound as a percent of the latency",
               [](NetworkKnobs& k) -> int64_t& { return k.control_jitter_percent; })
        .Field("selective_update", "recompute only the flows sharing a resource with a change",
               [](NetworkKnobs& k) -> bool& { return k.selective_update; })
        .Custom(
            "background_sharing",
            "how background flows (copies, warmup) share with foreground ones: strict "
            "(foreground first), weighted (background_weight each) or equal",
            KnobType::kString,
            [](NetworkKnobs& k, absl::string_view v) -> absl::Status {
              if (v == "strict") {
                k.background_sharing = NetworkKnobs::BackgroundSharing::kStrict;
              } else if (v == "weighted") {
                k.background_sharing = NetworkKnobs::BackgroundSharing::kWeighted;
              } else if (v == "equal") {
                k.background_sharing = NetworkKnobs::BackgroundSharing::kEqual;
              } else {
                return Invalid(absl::StrCat(
                    "background_sharing must be strict, weighted or equal, got '", v, "'"));
              }
              return absl::OkStatus();
            },
            [](const NetworkKnobs& k) -> std::string {
              switch (k.background_sharing) {
                case NetworkKnobs::BackgroundSharing::kStrict: return "strict";
                case NetworkKnobs::BackgroundSharing::kWeighted: return "weighted";
                case NetworkKnobs::BackgroundSharing::kEqual: return "equal";
              }
              return "strict";
            })
        .Field("background_weight",
               "with background_sharing=weighted, a background flow's weight against a "
               "foreground flow's 1, in (0, 1]",
               [](NetworkKnobs& k) -> double& { return k.background_weight; });
    return r;
  }();
  return *registry;
}

}  // namespace heatsink::sim
