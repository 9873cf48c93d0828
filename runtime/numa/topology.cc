#include "runtime/numa/topology.h"

#include <hwloc.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/base/check.h"

namespace heatsink::runtime {
namespace {

struct TopologyDeleter {
  void operator()(hwloc_topology_t t) const { hwloc_topology_destroy(t); }
};
using TopologyHandle = std::unique_ptr<hwloc_topology, TopologyDeleter>;

// The single node an I/O object is local to, if its locality has one.
std::optional<int> NodeOfIoObject(hwloc_topology_t topology, hwloc_obj_t obj) {
  hwloc_obj_t ancestor = hwloc_get_non_io_ancestor_obj(topology, obj);
  if (ancestor == nullptr || ancestor->nodeset == nullptr) return std::nullopt;
  if (hwloc_bitmap_weight(ancestor->nodeset) != 1) return std::nullopt;
  return hwloc_bitmap_first(ancestor->nodeset);
}

std::optional<int> FindNicNode(hwloc_topology_t topology, const std::string& nic_name) {
  std::optional<int> first_device;
  for (hwloc_obj_t dev = hwloc_get_next_osdev(topology, nullptr); dev != nullptr;
       dev = hwloc_get_next_osdev(topology, dev)) {
    const hwloc_obj_osdev_type_e type = dev->attr->osdev.type;
    if (type != HWLOC_OBJ_OSDEV_NETWORK && type != HWLOC_OBJ_OSDEV_OPENFABRICS) continue;
    const std::optional<int> node = NodeOfIoObject(topology, dev);
    if (!nic_name.empty()) {
      if (dev->name != nullptr && nic_name == dev->name) return node;
      continue;
    }
    if (node.has_value() && !first_device.has_value()) first_device = node;
  }
  if (first_device.has_value()) return first_device;
  if (!nic_name.empty()) return std::nullopt;
  // No OS device (typical of an XML export made without I/O discovery): the
  // first PCI network controller (class 0x02xx) with a single-node locality.
  for (hwloc_obj_t dev = hwloc_get_next_pcidev(topology, nullptr); dev != nullptr;
       dev = hwloc_get_next_pcidev(topology, dev)) {
    if ((dev->attr->pcidev.class_id >> 8) != 0x02) continue;
    const std::optional<int> node = NodeOfIoObject(topology, dev);
    if (node.has_value()) return node;
  }
  return std::nullopt;
}

int IndexOfNode(const Topology& topology, int id) {
  for (size_t i = 0; i < topology.nodes.size(); ++i) {
    if (topology.nodes[i].id == id) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

absl::StatusOr<Topology> LoadTopology(const TopologyOptions& options) {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) {
    return absl::InternalError(absl::StrCat("hwloc: init failed: ", std::strerror(errno)));
  }
  TopologyHandle topology(raw);
  if (!options.xml_text.empty()) {
    if (hwloc_topology_set_xmlbuffer(raw, options.xml_text.data(),
                                     static_cast<int>(options.xml_text.size()) + 1) != 0) {
      return absl::InvalidArgumentError("hwloc: the topology XML text is not usable");
    }
  } else if (!options.xml_path.empty()) {
    if (hwloc_topology_set_xml(raw, options.xml_path.c_str()) != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "hwloc: cannot use topology XML file '", options.xml_path, "': ", std::strerror(errno)));
    }
  }
  hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  // PCI devices come from Linux sysfs instead of the libpciaccess plugin,
  // which leaks its device table at every load (seen under LeakSanitizer)
  // and adds nothing the NIC lookup needs.
  hwloc_topology_set_components(raw, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "pci");
  if (hwloc_topology_load(raw) != 0) {
    const bool from_xml = !options.xml_text.empty() || !options.xml_path.empty();
    const std::string what = from_xml ? "cannot load the topology XML" : "topology discovery failed";
    return from_xml ? absl::InvalidArgumentError(absl::StrCat("hwloc: ", what))
                    : absl::InternalError(absl::StrCat("hwloc: ", what));
  }

  Topology result;
  const int node_count = hwloc_get_nbobjs_by_type(raw, HWLOC_OBJ_NUMANODE);
  if (node_count <= 0) return absl::InvalidArgumentError("hwloc: the topology has no NUMA node");
  std::vector<hwloc_obj_t> node_objs;
  for (int i = 0; i < node_count; ++i) {
    hwloc_obj_t obj = hwloc_get_obj_by_type(raw, HWLOC_OBJ_NUMANODE, i);
    HS_CHECK(obj != nullptr);
    node_objs.push_back(obj);
  }
  std::sort(node_objs.begin(), node_objs.end(),
            [](hwloc_obj_t a, hwloc_obj_t b) { return a->os_index < b->os_index; });
  for (hwloc_obj_t obj : node_objs) {
    NumaNode node;
    node.id = static_cast<int>(obj->os_index);
    node.capacity_bytes = obj->attr->numanode.local_memory;
    if (obj->cpuset != nullptr) {
      unsigned cpu = 0;
      hwloc_bitmap_foreach_begin(cpu, obj->cpuset) { node.cpus.push_back(static_cast<int>(cpu)); }
      hwloc_bitmap_foreach_end();
    }
    result.nodes.push_back(std::move(node));
  }

  const size_t n = result.nodes.size();
  result.distances = DefaultNodeDistances(static_cast<int>(n));
  unsigned matrices = 1;
  hwloc_distances_s* distances = nullptr;
  if (hwloc_distances_get_by_type(raw, HWLOC_OBJ_NUMANODE, &matrices, &distances,
                                  HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0) == 0 &&
      matrices >= 1 && distances != nullptr) {
    const unsigned k = distances->nbobjs;
    for (unsigned a = 0; a < k; ++a) {
      for (unsigned b = 0; b < k; ++b) {
        const int ia = IndexOfNode(result, static_cast<int>(distances->objs[a]->os_index));
        const int ib = IndexOfNode(result, static_cast<int>(distances->objs[b]->os_index));
        if (ia < 0 || ib < 0) continue;
        result.distances[ia][ib] = static_cast<int>(distances->values[a * k + b]);
      }
    }
    hwloc_distances_release(raw, distances);
  }

  const std::optional<int> nic = FindNicNode(raw, options.nic_name);
  if (!options.nic_name.empty() && !nic.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "hwloc: no network device named '", options.nic_name, "' with a single-node locality"));
  }
  if (nic.has_value()) {
    result.nic_node = *nic;
  } else {
    result.nic_node = result.nodes.front().id;
    for (const NumaNode& node : result.nodes) {
      if (node.capacity_bytes > 0) {
        result.nic_node = node.id;
        break;
      }
    }
  }
  if (absl::Status s = ValidateTopology(result); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("hwloc: ", s.message()));
  }
  return result;
}

std::string DescribeTopology(const Topology& topology) {
  std::string out = absl::StrFormat("%d NUMA node(s); NIC on node %d\n", topology.nodes.size(),
                                    topology.nic_node);
  for (size_t i = 0; i < topology.nodes.size(); ++i) {
    const NumaNode& node = topology.nodes[i];
    std::vector<int> row = i < topology.distances.size() ? topology.distances[i] : std::vector<int>{};
    absl::StrAppendFormat(&out, "node %d: %d MiB, cpus [%s], distances [%s]\n", node.id,
                          node.capacity_bytes >> 20, absl::StrJoin(node.cpus, ","),
                          absl::StrJoin(row, " "));
  }
  return out;
}

}  // namespace heatsink::runtime
