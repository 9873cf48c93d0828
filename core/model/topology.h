// File: core/model/topology.h
//
// The memory topology of one host as a plain value. The runtime builds it from
// hwloc and libnuma (runtime/numa/topology.h); the simulator from scenario
// JSON (sim/numa_model.h); tests by hand. Tiering decisions read only this
// value, never the libraries: which node backs each head region is
// core/tiering/numa_placement.h.
#ifndef HEATSINK_CORE_MODEL_TOPOLOGY_H_
#define HEATSINK_CORE_MODEL_TOPOLOGY_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"

namespace heatsink {

struct NumaNode {
  int id = 0;                      // OS node number
  std::vector<int> cpus;           // OS cpu numbers on this node
  uint64_t capacity_bytes = 0;     // memory on this node (0: a memoryless node)
};

struct Topology {
  std::vector<NumaNode> nodes;     // ascending id
  // distances[i][j]: ACPI SLIT style relative distance between nodes[i] and
  // nodes[j] (10 = local).
  std::vector<std::vector<int>> distances;
  int nic_node = 0;                // node the NIC is attached to (the serving node)

  const NumaNode* FindNode(int id) const {
    for (const NumaNode& n : nodes) {
      if (n.id == id) return &n;
    }
    return nullptr;
  }
};

// The distance every node has to itself, and the one assumed between two
// nodes when the source gives no matrix (hwloc's default and the simulator's).
inline constexpr int kLocalNodeDistance = 10;
inline constexpr int kRemoteNodeDistance = 20;

// kLocalNodeDistance on the diagonal and kRemoteNodeDistance elsewhere.
std::vector<std::vector<int>> DefaultNodeDistances(int node_count);

// OK when the nodes have non-negative ids in strictly ascending order, the
// distance matrix is square over them with positive entries, nobody is
// nearer to a node than the node itself, and nic_node is one of the nodes.
// INVALID_ARGUMENT (message starting "topology: ") otherwise.
[[nodiscard]] absl::Status ValidateTopology(const Topology& topology);

// Distance between two nodes of `topology`. REQUIRES: both exist.
int NodeDistance(const Topology& topology, int a, int b);

// The node with memory farthest from `from` (largest distance; ties to the
// lowest id), or `from` itself when it is the only node with memory.
// REQUIRES: `from` is a node of `topology`.
int FarthestNode(const Topology& topology, int from);

}  // namespace heatsink

#endif  // HEATSINK_CORE_MODEL_TOPOLOGY_H_
