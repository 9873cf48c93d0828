// File: runtime/numa/placement.h
//
// The store's NUMA placement at start: which node backs each region of the
// tiering head pool is the core's rule (core/tiering/numa_placement.h,
// PlanNumaPlacement, shared with the simulator), whose refusals name
// heatsink-store's flags by default; this file adds the node of the store's
// segments (--segment-node). Pure: it reads a Topology value, so it is tested
// on any machine.
#ifndef HEATSINK_RUNTIME_NUMA_PLACEMENT_H_
#define HEATSINK_RUNTIME_NUMA_PLACEMENT_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/model/topology.h"
#include "core/tiering/numa_placement.h"

namespace heatsink::runtime {

using ::heatsink::CheckMemoryNode;
using ::heatsink::DescribePlacement;
using ::heatsink::NumaPlacement;
using ::heatsink::NumaPlacementOptions;
using ::heatsink::PlanNumaPlacement;
using ::heatsink::RegionPlacement;

// The node a store's segments are bound to (--segment-node): `requested`, or
// the topology's NIC node when -1 (the node the data plane reads and writes
// from). INVALID_ARGUMENT, naming the flag and the node, when the node does
// not exist, has no memory, or has less memory than `total_bytes` (every
// segment together).
[[nodiscard]] absl::StatusOr<int> PlanSegmentNode(const Topology& topology, int requested,
                                                  uint64_t total_bytes);

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_NUMA_PLACEMENT_H_
