#include "runtime/numa/placement.h"

#include "absl/strings/str_format.h"
#include "core/base/status_macros.h"

namespace heatsink::runtime {

absl::StatusOr<int> PlanSegmentNode(const Topology& topology, int requested, uint64_t total_bytes) {
  HS_RETURN_IF_ERROR(ValidateTopology(topology));
  const int node = requested >= 0 ? requested : topology.nic_node;
  HS_RETURN_IF_ERROR(CheckMemoryNode(topology, node, "--segment-node"));
  const NumaNode* n = topology.FindNode(node);
  if (total_bytes > n->capacity_bytes) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--segment-node: %d MiB of segments on NUMA node %d, which has only %d MiB",
                        total_bytes >> 20, node, n->capacity_bytes >> 20));
  }
  return node;
}

}  // namespace heatsink::runtime
