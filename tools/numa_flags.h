// File: tools/numa_flags.h
//
// The ADR-0019 head pool's command-line flags (--memory, --sub-memory,
// --sub-memory-nodes, --serving-node, --nic, --block, --ram-head,
// --increment, --decay, --perverse, --no-numa-promotion) and their
// translation into TieringKnobs and a checked NumaPlacement, shared by
// heatsink-numa and heatsink-store.
#ifndef HEATSINK_TOOLS_NUMA_FLAGS_H_
#define HEATSINK_TOOLS_NUMA_FLAGS_H_

#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/tiering/tiering_knobs.h"
#include "runtime/numa/placement.h"
#include "runtime/numa/topology.h"

namespace heatsink::runtime {

struct NumaConfigFlags {
  std::string topology_xml;
  std::string nic;
  int serving_node = -1;
  std::string memory = "64M";
  std::string sub_memory;
  std::vector<int> sub_memory_nodes;
  std::string block;
  std::string ram_head;
  std::string increment;
  std::string decay;
  bool perverse = false;
  bool no_numa_promotion = false;
  // heatsink-numa only (heatsink-store has --segment-huge-pages,
  // --segment-mlock and one --set for every knob).
  bool huge_pages = false;
  bool mlock = false;
  std::vector<std::string> sets;  // name=value knob overrides
};

// The head pool's placement and scoring flags (ADR-0019 names), shared by
// heatsink-numa and heatsink-store.
inline void AddHeadPoolFlags(CLI::App* app, NumaConfigFlags* f) {
  app->add_option("--nic", f->nic, "network device whose node serves (default: the first one)");
  app->add_option("--serving-node", f->serving_node, "serving node (default: the NIC's node)");
  app->add_option("--memory", f->memory, "bytes of the preferred head region (K/M/G)")
      ->capture_default_str();
  app->add_option("--sub-memory", f->sub_memory,
                  "bytes of each foreign head region, comma-separated, nearest node first");
  app->add_option("--sub-memory-nodes", f->sub_memory_nodes,
                  "nodes of the foreign regions, in --sub-memory order")
      ->delimiter(',');
  app->add_option("--block", f->block, "promotion block size (default 2M)");
  app->add_option("--ram-head", f->ram_head, "fixed head size (default 256K)");
  app->add_option("--increment", f->increment, "score added per read (default 1.0)");
  app->add_option("--decay", f->decay, "score factor per decay pass (default 0.5)");
  app->add_flag("--perverse", f->perverse,
                "benchmark only: preferred region on the node farthest from the serving node");
  app->add_flag("--no-numa-promotion", f->no_numa_promotion, "keep scores, never move blocks");
}

inline absl::StatusOr<Topology> LoadFor(const NumaConfigFlags& f) {
  TopologyOptions options;
  options.xml_path = f.topology_xml;
  options.nic_name = f.nic;
  return LoadTopology(options);
}

// `base` with the flags, then the --set overrides, applied; validated.
inline absl::StatusOr<TieringKnobs> KnobsFor(const NumaConfigFlags& f, TieringKnobs base = {}) {
  TieringKnobs knobs = std::move(base);
  const KnobRegistry<TieringKnobs>& registry = TieringKnobs::Registry();
  auto set = [&](const char* name, const std::string& value) -> absl::Status {
    if (value.empty()) return absl::OkStatus();
    absl::Status s = registry.Set(knobs, name, value);
    if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat("--", name, ": ", s.message()));
    return absl::OkStatus();
  };
  for (auto [name, value] : {std::pair<const char*, const std::string*>{"memory", &f.memory},
                             {"sub_memory", &f.sub_memory},
                             {"block", &f.block},
                             {"ram_head", &f.ram_head},
                             {"increment", &f.increment},
                             {"decay", &f.decay}}) {
    if (absl::Status s = set(name, *value); !s.ok()) return s;
  }
  if (f.no_numa_promotion) knobs.no_numa_promotion = true;
  for (const std::string& kv : f.sets) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("--set ", kv, ": expected name=value"));
    }
    if (absl::Status s = registry.Set(knobs, kv.substr(0, eq), kv.substr(eq + 1)); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--set ", kv, ": ", s.message()));
    }
  }
  if (absl::Status s = knobs.Validate(); !s.ok()) return s;
  return knobs;
}

inline absl::StatusOr<NumaPlacement> PlanFor(const Topology& topology, const TieringKnobs& knobs,
                                             const NumaConfigFlags& f) {
  NumaPlacementOptions options;
  options.serving_node = f.serving_node;
  options.sub_memory_nodes = f.sub_memory_nodes;
  options.perverse = f.perverse;
  return PlanNumaPlacement(topology, knobs, options);
}

}  // namespace heatsink::runtime

#endif  // HEATSINK_TOOLS_NUMA_FLAGS_H_
