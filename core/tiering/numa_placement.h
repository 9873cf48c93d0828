// File: core/tiering/numa_placement.h
//
// Which NUMA node backs each region of the tiering head pool (ADR-0019): one
// pure rule over a Topology value and the tiering knobs, used by both worlds
// -- heatsink-store / heatsink-numa (runtime/numa/placement.h) and the
// simulator's NUMA host model (sim/numa_model.h) -- so a set-up one accepts
// the other accepts too, with the same nodes.
//
// Layout (region order is PlanRegions(knobs)):
//   - head region 0 (--memory) on the serving node: `serving_node`, or the
//     topology's NIC node when not given;
//   - head region i >= 1 (--sub-memory entry i-1) on foreign node i-1, where
//     the foreign nodes are `sub_memory_nodes` when given, else every other
//     node with memory ordered by distance from the serving node, ties to the
//     lower id (with the default distances, 10 local and 20 elsewhere, that is
//     ascending id order);
//   - small-pool regions (--small-memory, --small-sub-memory) likewise: the
//     local one on the serving node, foreign ones on the same foreign nodes in
//     the same order;
//   - --perverse (benchmark only): head region 0 goes to the node farthest
//     from the serving node and stays preferred; the foreign order is then
//     taken over the remaining memory nodes, the serving node first.
//
// Refused (INVALID_ARGUMENT), never bent to fit: a node that does not exist, a
// node without memory, a foreign node that is the preferred node or is listed
// twice, a foreign list whose length is not the number of foreign regions,
// more foreign regions than other nodes with memory (no node takes two
// foreign regions: the last node never absorbs the extras), and more head and
// small-pool bytes on a node than the node has. Each message names the input
// the way its world spells it (NumaPlacementNames: flags for the runtime, the
// scenario's knob paths for the simulator) and the node.
//
// Example:
//   HS_ASSIGN_OR_RETURN(NumaPlacement p, PlanNumaPlacement(topology, knobs, {}));
//   for (const RegionPlacement& r : p.regions) Bind(r.region, r.node);
#ifndef HEATSINK_CORE_TIERING_NUMA_PLACEMENT_H_
#define HEATSINK_CORE_TIERING_NUMA_PLACEMENT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/model/topology.h"
#include "core/tiering/tiering_knobs.h"

namespace heatsink {

struct NumaPlacementOptions {
  int serving_node = -1;              // -1: the topology's NIC node
  std::vector<int> sub_memory_nodes;  // nodes of the foreign regions; empty: nearest first
  bool perverse = false;
};

// How refusals name their inputs. The defaults are heatsink-store's flags.
struct NumaPlacementNames {
  std::string serving_node = "serving node";
  std::string sub_memory_nodes = "--sub-memory-nodes";
  std::string memory = "--memory";
  std::string sub_memory = "--sub-memory";
  std::string small_sub_memory = "--small-sub-memory";
  std::string topology = "the topology";  // the set of nodes
};

struct RegionPlacement {
  int region = 0;
  int node = 0;
  uint64_t bytes = 0;
  bool preferred = false;
  PoolKind pool = PoolKind::kHead;
};

struct NumaPlacement {
  int serving_node = 0;                  // where the coordinator, decay and ordinary memory live
  std::vector<RegionPlacement> regions;  // index = region
  // Distinct nodes holding head-pool regions, ascending: one promotion worker each.
  std::vector<int> head_nodes;
};

// The placement, or INVALID_ARGUMENT for invalid knobs, an invalid topology
// (ValidateTopology) or any refusal above.
[[nodiscard]] absl::StatusOr<NumaPlacement> PlanNumaPlacement(
    const Topology& topology, const TieringKnobs& knobs, const NumaPlacementOptions& options,
    const NumaPlacementNames& names = NumaPlacementNames());

// OK when `node` is a node of `topology` with memory; else INVALID_ARGUMENT
// "<what>: NUMA node <node> does not exist (nodes: ...)" or "... has no
// memory". The check every node the placement uses passes (the store's
// --segment-node too).
[[nodiscard]] absl::Status CheckMemoryNode(const Topology& topology, int node,
                                           absl::string_view what);

// One line per region: "region 0 (preferred, head): 1024 MiB on node 0".
std::string DescribePlacement(const NumaPlacement& placement);

}  // namespace heatsink

#endif  // HEATSINK_CORE_TIERING_NUMA_PLACEMENT_H_
