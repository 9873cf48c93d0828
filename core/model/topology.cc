#include "core/model/topology.h"

#include <algorithm>
#include <cstddef>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"

namespace heatsink {
namespace {

int IndexOfNode(const Topology& topology, int id) {
  for (size_t i = 0; i < topology.nodes.size(); ++i) {
    if (topology.nodes[i].id == id) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

std::vector<std::vector<int>> DefaultNodeDistances(int node_count) {
  std::vector<std::vector<int>> distances(
      static_cast<size_t>(node_count),
      std::vector<int>(static_cast<size_t>(node_count), kRemoteNodeDistance));
  for (int i = 0; i < node_count; ++i) distances[i][i] = kLocalNodeDistance;
  return distances;
}

absl::Status ValidateTopology(const Topology& topology) {
  const size_t n = topology.nodes.size();
  if (n == 0) return absl::InvalidArgumentError("topology: no NUMA node");
  for (size_t i = 0; i < n; ++i) {
    if (topology.nodes[i].id < 0 || (i > 0 && topology.nodes[i].id <= topology.nodes[i - 1].id)) {
      return absl::InvalidArgumentError("topology: node ids must be non-negative and ascending");
    }
    if (!std::is_sorted(topology.nodes[i].cpus.begin(), topology.nodes[i].cpus.end())) {
      return absl::InvalidArgumentError(
          absl::StrCat("topology: cpus of node ", topology.nodes[i].id, " are not ascending"));
    }
  }
  if (topology.distances.size() != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "topology: distance matrix has ", topology.distances.size(), " rows for ", n, " nodes"));
  }
  for (size_t i = 0; i < n; ++i) {
    if (topology.distances[i].size() != n) {
      return absl::InvalidArgumentError(absl::StrCat("topology: distance row ", i, " has ",
                                                     topology.distances[i].size(), " entries for ",
                                                     n, " nodes"));
    }
    for (size_t j = 0; j < n; ++j) {
      if (topology.distances[i][j] <= 0 || topology.distances[i][j] < topology.distances[i][i]) {
        return absl::InvalidArgumentError(
            absl::StrCat("topology: distance from node ", topology.nodes[i].id, " to node ",
                         topology.nodes[j].id, " is ", topology.distances[i][j],
                         ", below its local distance or not positive"));
      }
    }
  }
  if (topology.FindNode(topology.nic_node) == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("topology: NIC node ", topology.nic_node, " is not a node"));
  }
  return absl::OkStatus();
}

int NodeDistance(const Topology& topology, int a, int b) {
  const int ia = IndexOfNode(topology, a);
  const int ib = IndexOfNode(topology, b);
  HS_CHECK_MSG(ia >= 0 && ib >= 0, absl::StrCat("no node ", a, " or ", b));
  return topology.distances[ia][ib];
}

int FarthestNode(const Topology& topology, int from) {
  HS_CHECK(IndexOfNode(topology, from) >= 0);
  int best = from;
  int best_distance = -1;
  for (const NumaNode& node : topology.nodes) {
    if (node.capacity_bytes == 0 || node.id == from) continue;
    const int d = NodeDistance(topology, from, node.id);
    if (d > best_distance) {  // ascending ids: ties keep the lowest
      best = node.id;
      best_distance = d;
    }
  }
  return best;
}

}  // namespace heatsink
