// What the NUMA tests ask of the machine they run on (this one, or a
// multi-node QEMU guest of tools/numa-qemu-test.sh): its memory nodes, and
// whether a range's pages all sit on one node.
#ifndef HEATSINK_TESTS_RUNTIME_NUMA_MACHINE_NODES_H_
#define HEATSINK_TESTS_RUNTIME_NUMA_MACHINE_NODES_H_

#include <cstddef>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/numa/topology.h"

namespace heatsink::runtime::testing {

// Nodes of this machine that have memory, ascending.
inline std::vector<int> MemoryNodes() {
  absl::StatusOr<Topology> t = LoadTopology({});
  std::vector<int> nodes;
  if (!t.ok()) return nodes;
  for (const NumaNode& n : t->nodes) {
    if (n.capacity_bytes > 0) nodes.push_back(n.id);
  }
  return nodes;
}

// `nodes` (one per page, as PageNodes reports them) is not empty and every
// page is on `node`.
inline void ExpectAllOn(const std::vector<int>& nodes, int node) {
  ASSERT_FALSE(nodes.empty());
  for (size_t i = 0; i < nodes.size(); ++i) {
    ASSERT_EQ(nodes[i], node) << "page " << i;
  }
}

}  // namespace heatsink::runtime::testing

#endif  // HEATSINK_TESTS_RUNTIME_NUMA_MACHINE_NODES_H_
