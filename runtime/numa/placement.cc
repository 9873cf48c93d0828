#include "runtime/numa/placement.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "runtime/numa/topology.h"

namespace heatsink::runtime {
namespace {

absl::Status CheckMemoryNode(const Topology& topology, int node, absl::string_view what) {
  const NumaNode* n = topology.FindNode(node);
  if (n == nullptr) {
    std::vector<int> ids;
    for (const NumaNode& x : topology.nodes) ids.push_back(x.id);
    return absl::InvalidArgumentError(absl::StrCat(what, ": NUMA node ", node,
                                                   " does not exist (nodes: ",
                                                   absl::StrJoin(ids, ","), ")"));
  }
  if (n->capacity_bytes == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": NUMA node ", node, " has no memory"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<NumaPlacement> PlanNumaPlacement(const Topology& topology,
                                                const TieringKnobs& knobs,
                                                const NumaPlacementOptions& options) {
  if (absl::Status s = knobs.Validate(); !s.ok()) return s;
  if (absl::Status s = ValidateTopology(topology); !s.ok()) return s;

  NumaPlacement placement;
  placement.serving_node = options.serving_node >= 0 ? options.serving_node : topology.nic_node;
  if (absl::Status s = CheckMemoryNode(topology, placement.serving_node, "serving node");
      !s.ok()) {
    return s;
  }
  const int serving = placement.serving_node;
  const int preferred_node = options.perverse ? FarthestNode(topology, serving) : serving;

  // Candidate foreign nodes: every other memory node, nearest to the serving
  // node first (the serving node itself is at distance 10, so under
  // --perverse it comes first).
  std::vector<int> nearest;
  for (const NumaNode& node : topology.nodes) {
    if (node.id != preferred_node && node.capacity_bytes > 0) nearest.push_back(node.id);
  }
  std::stable_sort(nearest.begin(), nearest.end(), [&](int a, int b) {
    return NodeDistance(topology, serving, a) < NodeDistance(topology, serving, b);
  });

  const size_t foreign_needed =
      std::max(knobs.sub_memory_bytes.size(),
               knobs.small_memory_bytes != 0 ? knobs.small_sub_memory_bytes.size() : size_t{0});
  std::vector<int> foreign;
  if (!options.sub_memory_nodes.empty()) {
    foreign = options.sub_memory_nodes;
    for (size_t i = 0; i < foreign.size(); ++i) {
      if (absl::Status s = CheckMemoryNode(topology, foreign[i], "--sub-memory-nodes"); !s.ok()) {
        return s;
      }
      if (foreign[i] == preferred_node) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--sub-memory-nodes: node ", foreign[i],
            " already holds the preferred region (--memory); a foreign region needs another "
            "node"));
      }
      if (std::find(foreign.begin(), foreign.begin() + i, foreign[i]) != foreign.begin() + i) {
        return absl::InvalidArgumentError(
            absl::StrCat("--sub-memory-nodes: node ", foreign[i], " is listed twice"));
      }
    }
    if (foreign.size() != foreign_needed) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--sub-memory-nodes lists ", foreign.size(), " node(s) but --sub-memory/"
          "--small-sub-memory describe ", foreign_needed, " foreign region(s)"));
    }
  } else {
    if (foreign_needed > nearest.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--sub-memory describes ", foreign_needed, " foreign region(s) but the topology has ",
          nearest.size(), " other NUMA node(s) with memory"));
    }
    foreign.assign(nearest.begin(), nearest.begin() + foreign_needed);
  }

  std::map<int, uint64_t> bytes_per_node;
  for (const RegionSpec& spec : PlanRegions(knobs)) {
    RegionPlacement r;
    r.region = spec.region;
    r.bytes = spec.bytes;
    r.preferred = spec.preferred;
    r.pool = spec.pool;
    if (spec.pool == PoolKind::kHead) {
      r.node = spec.preferred ? preferred_node : foreign[spec.region - 1];
    } else {
      // Small-pool regions follow the head regions: local first, then foreign.
      int small_index = 0;
      for (const RegionPlacement& prev : placement.regions) {
        if (prev.pool == PoolKind::kSmall) ++small_index;
      }
      r.node = small_index == 0 ? serving : foreign[small_index - 1];
    }
    bytes_per_node[r.node] += r.bytes;
    placement.regions.push_back(r);
  }
  for (const auto& [node, bytes] : bytes_per_node) {
    const uint64_t capacity = topology.FindNode(node)->capacity_bytes;
    if (bytes > capacity) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--memory/--sub-memory: %d MiB of head regions on NUMA node %d, which has only %d MiB",
          bytes >> 20, node, capacity >> 20));
    }
  }
  for (const RegionPlacement& r : placement.regions) {
    if (r.pool == PoolKind::kHead &&
        std::find(placement.head_nodes.begin(), placement.head_nodes.end(), r.node) ==
            placement.head_nodes.end()) {
      placement.head_nodes.push_back(r.node);
    }
  }
  std::sort(placement.head_nodes.begin(), placement.head_nodes.end());
  return placement;
}

absl::StatusOr<int> PlanSegmentNode(const Topology& topology, int requested, uint64_t total_bytes) {
  if (absl::Status s = ValidateTopology(topology); !s.ok()) return s;
  const int node = requested >= 0 ? requested : topology.nic_node;
  if (absl::Status s = CheckMemoryNode(topology, node, "--segment-node"); !s.ok()) return s;
  const uint64_t capacity = topology.FindNode(node)->capacity_bytes;
  if (total_bytes > capacity) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--segment-node: %d MiB of segments on NUMA node %d, which has only %d MiB",
                        total_bytes >> 20, node, capacity >> 20));
  }
  return node;
}

std::string DescribePlacement(const NumaPlacement& placement) {
  std::string out = absl::StrFormat("serving node %d\n", placement.serving_node);
  for (const RegionPlacement& r : placement.regions) {
    absl::StrAppendFormat(&out, "region %d (%s, %s): %d MiB on node %d\n", r.region,
                          r.preferred ? "preferred" : "foreign",
                          r.pool == PoolKind::kHead ? "head" : "small", r.bytes >> 20, r.node);
  }
  return out;
}

}  // namespace heatsink::runtime
