// Covers LoadTopology: hwloc's view of a four-node host (from an XML export)
// becomes the core's Topology value -- node ids, CPUs, memory, the SLIT
// distance matrix, the NIC node fallback -- the running machine loads and
// validates, and bad sources (malformed XML, a missing file, an unknown NIC)
// are INVALID_ARGUMENT. Also ValidateTopology's rejections and FarthestNode.
#include "runtime/numa/topology.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/runtime_numa/four_node_topology.h"

namespace heatsink::runtime {
namespace {

using testing::FourNodes;
using testing::kFourNodeTopologyXml;

TopologyOptions FromXml(const char* text) {
  TopologyOptions options;
  options.xml_text = text;
  return options;
}

TEST(Topology, LoadsFourNodesFromXml) {
  const Topology t = FourNodes();
  ASSERT_EQ(t.nodes.size(), 4u);
  const std::vector<uint64_t> memory = {526983168, 481689600, 528048128, 525799424};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(t.nodes[i].id, i);
    EXPECT_EQ(t.nodes[i].cpus, std::vector<int>{i});
    EXPECT_EQ(t.nodes[i].capacity_bytes, memory[i]);
  }
  const std::vector<std::vector<int>> distances = {
      {10, 20, 30, 20}, {20, 10, 20, 30}, {30, 20, 10, 20}, {20, 30, 20, 10}};
  EXPECT_EQ(t.distances, distances);
  // The NIC sits under the machine (no single-node locality): lowest memory node.
  EXPECT_EQ(t.nic_node, 0);
  EXPECT_TRUE(ValidateTopology(t).ok());
}

TEST(Topology, FarthestNodeFollowsTheDistances) {
  const Topology t = FourNodes();
  EXPECT_EQ(FarthestNode(t, 0), 2);
  EXPECT_EQ(FarthestNode(t, 1), 3);
  EXPECT_EQ(FarthestNode(t, 2), 0);
  EXPECT_EQ(NodeDistance(t, 3, 1), 30);
  Topology one = t;
  for (NumaNode& n : one.nodes) {
    if (n.id != 1) n.capacity_bytes = 0;
  }
  EXPECT_EQ(FarthestNode(one, 1), 1);  // no other node has memory
}

TEST(Topology, LoadsThisMachine) {
  absl::StatusOr<Topology> t = LoadTopology({});
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_GE(t->nodes.size(), 1u);
  EXPECT_TRUE(ValidateTopology(*t).ok());
  EXPECT_NE(t->FindNode(t->nic_node), nullptr);
  uint64_t memory = 0;
  for (const NumaNode& n : t->nodes) memory += n.capacity_bytes;
  EXPECT_GT(memory, 0u);
  EXPECT_FALSE(DescribeTopology(*t).empty());
}

TEST(Topology, BadSourcesAreRejected) {
  absl::StatusOr<Topology> t = LoadTopology(FromXml("<topology>not hwloc"));
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  TopologyOptions missing;
  missing.xml_path = "/nonexistent/heatsink-topology.xml";
  t = LoadTopology(missing);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  TopologyOptions nic = FromXml(kFourNodeTopologyXml);
  nic.nic_name = "no-such-nic0";
  t = LoadTopology(nic);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("no-such-nic0"), absl::string_view::npos);
}

TEST(Topology, ValidateRejectsInconsistentValues) {
  const Topology good = FourNodes();
  Topology t = good;
  std::swap(t.nodes[0], t.nodes[1]);
  EXPECT_FALSE(ValidateTopology(t).ok());  // ids not ascending
  t = good;
  t.distances.pop_back();
  EXPECT_FALSE(ValidateTopology(t).ok());  // not square
  t = good;
  t.distances[1][2] = 5;
  EXPECT_FALSE(ValidateTopology(t).ok());  // nearer than local
  t = good;
  t.nic_node = 9;
  EXPECT_FALSE(ValidateTopology(t).ok());
  EXPECT_FALSE(ValidateTopology(Topology{}).ok());
}

}  // namespace
}  // namespace heatsink::runtime
