#include "core/tiering/numa_placement.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/base/status_macros.h"

namespace heatsink {
namespace {

// Whole MiB (rounded down) from 1 MiB on, else KiB or bytes, so a test-sized
// pool is not described as "0 MiB".
std::string FormatSize(uint64_t bytes) {
  if (bytes >= kMiB) return absl::StrFormat("%d MiB", bytes >> 20);
  if (bytes % kKiB == 0) return absl::StrFormat("%d KiB", bytes >> 10);
  return absl::StrFormat("%d bytes", bytes);
}

// Every memory node except `preferred_node`, nearest to `serving` first, ties
// to the lower id.
std::vector<int> NearestMemoryNodes(const Topology& topology, int serving, int preferred_node) {
  std::vector<int> nearest;
  for (const NumaNode& node : topology.nodes) {
    if (node.id != preferred_node && node.capacity_bytes > 0) nearest.push_back(node.id);
  }
  std::sort(nearest.begin(), nearest.end(), [&](int a, int b) {
    const int da = NodeDistance(topology, serving, a);
    const int db = NodeDistance(topology, serving, b);
    return da != db ? da < db : a < b;
  });
  return nearest;
}

// The nodes of the foreign regions, in region order: the explicit list after
// its checks, else the nearest `needed` candidates. Refuses rather than
// doubling a node up.
absl::StatusOr<std::vector<int>> ForeignNodes(const Topology& topology,
                                              const NumaPlacementOptions& options,
                                              const NumaPlacementNames& names, int serving,
                                              int preferred_node, size_t needed) {
  if (options.sub_memory_nodes.empty()) {
    const std::vector<int> nearest = NearestMemoryNodes(topology, serving, preferred_node);
    if (needed > nearest.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(names.sub_memory, " describes ", needed, " foreign region(s) but ",
                       names.topology, " has ", nearest.size(), " other NUMA node(s) with memory"));
    }
    return std::vector<int>(nearest.begin(), nearest.begin() + static_cast<ptrdiff_t>(needed));
  }
  const std::vector<int>& foreign = options.sub_memory_nodes;
  for (size_t i = 0; i < foreign.size(); ++i) {
    HS_RETURN_IF_ERROR(CheckMemoryNode(topology, foreign[i], names.sub_memory_nodes));
    if (foreign[i] == preferred_node) {
      return absl::InvalidArgumentError(absl::StrCat(
          names.sub_memory_nodes, ": node ", foreign[i], " already holds the preferred region (",
          names.memory, "); a foreign region needs another node"));
    }
    if (std::find(foreign.begin(), foreign.begin() + static_cast<ptrdiff_t>(i), foreign[i]) !=
        foreign.begin() + static_cast<ptrdiff_t>(i)) {
      return absl::InvalidArgumentError(
          absl::StrCat(names.sub_memory_nodes, ": node ", foreign[i], " is listed twice"));
    }
  }
  if (foreign.size() != needed) {
    return absl::InvalidArgumentError(absl::StrCat(
        names.sub_memory_nodes, " lists ", foreign.size(), " node(s) but ", names.sub_memory, "/",
        names.small_sub_memory, " describe ", needed, " foreign region(s)"));
  }
  return foreign;
}

}  // namespace

absl::Status CheckMemoryNode(const Topology& topology, int node, absl::string_view what) {
  const NumaNode* n = topology.FindNode(node);
  if (n == nullptr) {
    std::vector<int> ids;
    for (const NumaNode& x : topology.nodes) ids.push_back(x.id);
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": NUMA node ", node, " does not exist (nodes: ", absl::StrJoin(ids, ","), ")"));
  }
  if (n->capacity_bytes == 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": NUMA node ", node, " has no memory"));
  }
  return absl::OkStatus();
}

absl::StatusOr<NumaPlacement> PlanNumaPlacement(const Topology& topology, const TieringKnobs& knobs,
                                                const NumaPlacementOptions& options,
                                                const NumaPlacementNames& names) {
  HS_RETURN_IF_ERROR(knobs.Validate());
  HS_RETURN_IF_ERROR(ValidateTopology(topology));

  NumaPlacement placement;
  placement.serving_node = options.serving_node >= 0 ? options.serving_node : topology.nic_node;
  HS_RETURN_IF_ERROR(CheckMemoryNode(topology, placement.serving_node, names.serving_node));
  const int serving = placement.serving_node;
  // Under --perverse the serving node is at distance 10 from itself, so it
  // comes first among the foreign nodes.
  const int preferred_node = options.perverse ? FarthestNode(topology, serving) : serving;

  const size_t foreign_needed =
      std::max(knobs.sub_memory_bytes.size(),
               knobs.small_memory_bytes != 0 ? knobs.small_sub_memory_bytes.size() : size_t{0});
  HS_ASSIGN_OR_RETURN(
      const std::vector<int> foreign,
      ForeignNodes(topology, options, names, serving, preferred_node, foreign_needed));

  std::map<int, uint64_t> bytes_per_node;
  int small_regions = 0;
  for (const RegionSpec& spec : PlanRegions(knobs)) {
    RegionPlacement r;
    r.region = spec.region;
    r.bytes = spec.bytes;
    r.preferred = spec.preferred;
    r.pool = spec.pool;
    if (spec.pool == PoolKind::kHead) {
      r.node = spec.preferred ? preferred_node : foreign[static_cast<size_t>(spec.region - 1)];
    } else {
      // Small-pool regions follow the head regions: local first, then foreign.
      r.node = small_regions == 0 ? serving : foreign[static_cast<size_t>(small_regions - 1)];
      ++small_regions;
    }
    bytes_per_node[r.node] += r.bytes;
    placement.regions.push_back(r);
  }
  for (const auto& [node, bytes] : bytes_per_node) {
    const uint64_t capacity = topology.FindNode(node)->capacity_bytes;
    if (bytes > capacity) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s/%s: %s of head regions on NUMA node %d, which has only %s", names.memory,
          names.sub_memory, FormatSize(bytes), node, FormatSize(capacity)));
    }
  }
  for (const RegionPlacement& r : placement.regions) {
    if (r.pool == PoolKind::kHead) placement.head_nodes.push_back(r.node);
  }
  std::sort(placement.head_nodes.begin(), placement.head_nodes.end());
  placement.head_nodes.erase(std::unique(placement.head_nodes.begin(), placement.head_nodes.end()),
                             placement.head_nodes.end());
  return placement;
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

}  // namespace heatsink
