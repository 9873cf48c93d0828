// File: core/model/topology.h
//
// The memory topology of one host as a plain value. The runtime builds it from
// hwloc (runtime/numa/topology.h) and places its head regions and binds its
// promotion threads from it (runtime/numa/placement.h, promotion_service.h);
// tests build it by hand. core/ does not read it yet: the tiering core works
// on head regions by index, and each driver maps regions to nodes itself (the
// simulator from scenario JSON, in sim/numa_model.h, without this value).
#ifndef HEATSINK_CORE_MODEL_TOPOLOGY_H_
#define HEATSINK_CORE_MODEL_TOPOLOGY_H_

#include <cstdint>
#include <vector>

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

}  // namespace heatsink

#endif  // HEATSINK_CORE_MODEL_TOPOLOGY_H_
