// File: runtime/numa/placement.h
//
// Which NUMA node backs each region of the tiering head pool (ADR-0019), and
// the start-time checks of that configuration against a Topology. Pure: it
// reads a Topology value and knobs, so it is tested on any machine.
//
// Layout (region order is PlanRegions(knobs)):
//   - head region 0 (--memory) on the serving node: `serving_node`, or the
//     topology's NIC node when not given;
//   - head region i >= 1 (--sub-memory entry i-1) on foreign node i-1, where
//     the foreign nodes are `sub_memory_nodes` when given, else every other
//     node with memory ordered by distance from the serving node (ties: lower
//     id first);
//   - small-pool regions (--small-memory, --small-sub-memory) likewise: the
//     local one on the serving node, foreign ones on the same foreign nodes in
//     the same order.
//   - --perverse (benchmark only): head region 0 goes to the node farthest
//     from the serving node and stays preferred; the foreign order is then
//     taken over the remaining memory nodes, the serving node first. Workers
//     and ordinary allocations stay on the serving node.
//
// Rejected at start, each with a message naming the flag and the node:
// a node that does not exist, a node without memory, a foreign node that is
// the serving node or is listed twice, more --sub-memory regions than foreign
// nodes, and more memory on a node than the node has.
#ifndef HEATSINK_RUNTIME_NUMA_PLACEMENT_H_
#define HEATSINK_RUNTIME_NUMA_PLACEMENT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/model/topology.h"
#include "core/tiering/tiering_knobs.h"

namespace heatsink::runtime {

struct NumaPlacementOptions {
  int serving_node = -1;              // -1: the topology's NIC node
  std::vector<int> sub_memory_nodes;  // nodes of the foreign regions; empty: nearest first
  bool perverse = false;
};

struct RegionPlacement {
  int region = 0;
  int node = 0;
  uint64_t bytes = 0;
  bool preferred = false;
  PoolKind pool = PoolKind::kHead;
};

struct NumaPlacement {
  int serving_node = 0;  // where workers' coordinator, decay and ordinary memory live
  std::vector<RegionPlacement> regions;  // index = region
  // Distinct nodes holding head-pool regions, ascending: one promotion worker each.
  std::vector<int> head_nodes;
};

// REQUIRES: knobs.Validate() is OK (checked; INVALID_ARGUMENT otherwise).
[[nodiscard]] absl::StatusOr<NumaPlacement> PlanNumaPlacement(const Topology& topology,
                                                              const TieringKnobs& knobs,
                                                              const NumaPlacementOptions& options);

// The node a store's segments are bound to (--segment-node): `requested`, or
// the topology's NIC node when -1 (the node the data plane reads and writes
// from). INVALID_ARGUMENT, naming the flag and the node, when the node does
// not exist, has no memory, or has less memory than `total_bytes` (every
// segment together).
[[nodiscard]] absl::StatusOr<int> PlanSegmentNode(const Topology& topology, int requested,
                                                  uint64_t total_bytes);

// One line per region: "region 0 (preferred, head): 1024 MiB on node 0".
std::string DescribePlacement(const NumaPlacement& placement);

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_NUMA_PLACEMENT_H_
