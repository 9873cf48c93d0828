// File: runtime/numa/topology.h
//
// Turns hwloc's view of a host into the core's plain Topology value
// (core/model/topology.h): NUMA nodes with their CPUs and memory, the node
// distance matrix, and the node the NIC is attached to. Nothing above this
// file sees hwloc.
//
// Sources, first match wins:
//   1. TopologyOptions::xml_text -- an hwloc XML export held in memory;
//   2. TopologyOptions::xml_path -- an hwloc XML export on disk;
//   3. the machine itself, unless the environment sets HWLOC_XMLFILE, which
//      hwloc honours as if it were xml_path.
// An XML source lets tests and the command-line tool reason about a
// four-node host on a one-node machine; placement that must really happen
// (mbind, move_pages) always talks to the running kernel instead.
//
// The NIC node: the node of the network or OpenFabrics device named by
// `nic_name`, else of the first such device hwloc lists, else of the first
// PCI network controller; when none has a single-node locality, the lowest
// node with memory.
//
// Distances: the OS-provided latency matrix (ACPI SLIT) when hwloc has one,
// else 10 on the diagonal and 20 elsewhere.
//
// Example:
//   HS_ASSIGN_OR_RETURN(Topology topology, LoadTopology({.xml_path = flags.topology_xml}));
//   int far = FarthestNode(topology, topology.nic_node);
#ifndef HEATSINK_RUNTIME_NUMA_TOPOLOGY_H_
#define HEATSINK_RUNTIME_NUMA_TOPOLOGY_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/model/topology.h"

namespace heatsink::runtime {

struct TopologyOptions {
  std::string xml_text;  // an hwloc XML document ("" = not given)
  std::string xml_path;  // an hwloc XML file ("" = not given)
  std::string nic_name;  // e.g. "eth0", "mlx5_0" ("" = the first network device)
};

// INVALID_ARGUMENT for an unreadable or malformed XML source or a topology
// without NUMA nodes; INTERNAL when hwloc fails to discover this machine.
[[nodiscard]] absl::StatusOr<Topology> LoadTopology(const TopologyOptions& options);

// The pure helpers over the value live with it in the core
// (core/model/topology.h); the runtime names them here too.
using ::heatsink::FarthestNode;
using ::heatsink::NodeDistance;
using ::heatsink::ValidateTopology;

// A few human-readable lines: nodes, CPUs, memory, distances, NIC node.
std::string DescribeTopology(const Topology& topology);

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_NUMA_TOPOLOGY_H_
