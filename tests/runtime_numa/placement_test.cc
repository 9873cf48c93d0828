// Covers PlanNumaPlacement on the four-node topology: the preferred region on
// the serving node, foreign regions nearest first (or as listed), the
// small-object pool beside them, one worker node per head node, --perverse
// (preferred region on the farthest node, the serving node hosting the first
// foreign region), and every start-time rejection: a node that does not
// exist, a node without memory, the preferred node or a duplicate as a
// foreign node, more foreign regions than nodes, and more memory than a node
// has.
#include "runtime/numa/placement.h"

#include <vector>

#include "gtest/gtest.h"
#include "runtime/numa/topology.h"
#include "tests/runtime_numa/four_node_topology.h"

namespace heatsink::runtime {
namespace {

using testing::FourNodes;

TieringKnobs Knobs(std::vector<uint64_t> sub_memory) {
  TieringKnobs k;
  k.memory_bytes = 64 * kMiB;
  k.sub_memory_bytes = std::move(sub_memory);
  return k;
}

NumaPlacementOptions Opts(int serving_node, std::vector<int> sub_memory_nodes = {},
                          bool perverse = false) {
  NumaPlacementOptions o;
  o.serving_node = serving_node;
  o.sub_memory_nodes = std::move(sub_memory_nodes);
  o.perverse = perverse;
  return o;
}

std::vector<int> Nodes(const NumaPlacement& p) {
  std::vector<int> nodes;
  for (const RegionPlacement& r : p.regions) nodes.push_back(r.node);
  return nodes;
}

TEST(NumaPlacement, NearestForeignNodesFirst) {
  absl::StatusOr<NumaPlacement> p =
      PlanNumaPlacement(FourNodes(), Knobs({32 * kMiB, 32 * kMiB, 32 * kMiB}), {});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->serving_node, 0);
  // From node 0: nodes 1 and 3 at 20 (lower id first), node 2 at 30.
  EXPECT_EQ(Nodes(*p), (std::vector<int>{0, 1, 3, 2}));
  EXPECT_TRUE(p->regions[0].preferred);
  EXPECT_FALSE(p->regions[1].preferred);
  EXPECT_EQ(p->regions[0].bytes, 64 * kMiB);
  EXPECT_EQ(p->head_nodes, (std::vector<int>{0, 1, 2, 3}));
}

TEST(NumaPlacement, ServingNodeAndExplicitForeignNodes) {
  absl::StatusOr<NumaPlacement> p = PlanNumaPlacement(
      FourNodes(), Knobs({32 * kMiB, 32 * kMiB}), Opts(1, {2, 0}));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->serving_node, 1);
  EXPECT_EQ(Nodes(*p), (std::vector<int>{1, 2, 0}));
  EXPECT_EQ(p->head_nodes, (std::vector<int>{0, 1, 2}));
}

TEST(NumaPlacement, SmallPoolFollowsTheHeadRegions) {
  TieringKnobs k = Knobs({32 * kMiB, 32 * kMiB});
  k.small_memory_bytes = 8 * kMiB;
  k.small_sub_memory_bytes = {8 * kMiB};
  ASSERT_TRUE(k.Validate().ok()) << k.Validate();
  absl::StatusOr<NumaPlacement> p = PlanNumaPlacement(FourNodes(), k, Opts(2));
  ASSERT_TRUE(p.ok()) << p.status();
  // Head: 2, then 1 and 3 (both at 20). Small: 2, then the first foreign node.
  EXPECT_EQ(Nodes(*p), (std::vector<int>{2, 1, 3, 2, 1}));
  EXPECT_EQ(p->regions[3].pool, PoolKind::kSmall);
  EXPECT_TRUE(p->regions[3].preferred);
  EXPECT_EQ(p->head_nodes, (std::vector<int>{1, 2, 3}));
}

TEST(NumaPlacement, PerversePutsThePreferredRegionOnTheFarthestNode) {
  absl::StatusOr<NumaPlacement> p =
      PlanNumaPlacement(FourNodes(), Knobs({32 * kMiB, 32 * kMiB}), Opts(-1, {}, /*perverse=*/true));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->serving_node, 0);  // coordinator and ordinary memory stay here
  EXPECT_EQ(p->regions[0].node, 2);
  EXPECT_TRUE(p->regions[0].preferred);
  // The serving node is nearest to itself: it hosts the first foreign region.
  EXPECT_EQ(p->regions[1].node, 0);
  EXPECT_EQ(p->regions[2].node, 1);
}

TEST(NumaPlacement, RejectsANodeThatDoesNotExist) {
  absl::StatusOr<NumaPlacement> p =
      PlanNumaPlacement(FourNodes(), Knobs({32 * kMiB}), Opts(-1, {7}));
  ASSERT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("node 7 does not exist"), absl::string_view::npos)
      << p.status();
  p = PlanNumaPlacement(FourNodes(), Knobs({}), Opts(4));
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(NumaPlacement, RejectsANodeWithoutMemory) {
  Topology t = FourNodes();
  t.nodes[3].capacity_bytes = 0;
  absl::StatusOr<NumaPlacement> p =
      PlanNumaPlacement(t, Knobs({32 * kMiB}), Opts(-1, {3}));
  ASSERT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("no memory"), absl::string_view::npos) << p.status();
  // Without an explicit list the memoryless node is simply not a candidate.
  p = PlanNumaPlacement(t, Knobs({32 * kMiB, 32 * kMiB}), {});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(Nodes(*p), (std::vector<int>{0, 1, 2}));
  p = PlanNumaPlacement(t, Knobs({32 * kMiB, 32 * kMiB, 32 * kMiB}), {});
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(NumaPlacement, RejectsBadForeignLists) {
  const Topology t = FourNodes();
  EXPECT_FALSE(PlanNumaPlacement(t, Knobs({32 * kMiB}), Opts(-1, {0})).ok());
  EXPECT_FALSE(
      PlanNumaPlacement(t, Knobs({32 * kMiB, 32 * kMiB}), Opts(-1, {1, 1})).ok());
  EXPECT_FALSE(PlanNumaPlacement(t, Knobs({32 * kMiB, 32 * kMiB}), Opts(-1, {1})).ok());
  // Four foreign regions, three other nodes.
  absl::StatusOr<NumaPlacement> p =
      PlanNumaPlacement(t, Knobs({kMiB * 2, kMiB * 2, kMiB * 2, kMiB * 2}), {});
  ASSERT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("3 other NUMA node"), absl::string_view::npos) << p.status();
}

TEST(NumaPlacement, RejectsMoreMemoryThanTheNodeHas) {
  TieringKnobs k = Knobs({1 * kGiB});  // node 1 has 459 MiB
  absl::StatusOr<NumaPlacement> p = PlanNumaPlacement(FourNodes(), k, {});
  ASSERT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("NUMA node 1"), absl::string_view::npos) << p.status();
  k = Knobs({});
  k.memory_bytes = 512 * kMiB;  // node 0 has 502 MiB
  EXPECT_EQ(PlanNumaPlacement(FourNodes(), k, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  k.memory_bytes = 256 * kMiB;
  EXPECT_TRUE(PlanNumaPlacement(FourNodes(), k, {}).ok());
}

// --segment-node: auto is the NIC's node; an explicit node must exist, have
// memory and hold every segment; each refusal names the flag and the node.
TEST(SegmentNodePlacement, AutoIsTheNicNodeAndExplicitNodesAreChecked) {
  Topology t = FourNodes();
  absl::StatusOr<int> node = PlanSegmentNode(t, -1, 64 * kMiB);
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ(*node, t.nic_node);
  node = PlanSegmentNode(t, 2, 64 * kMiB);
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ(*node, 2);

  node = PlanSegmentNode(t, 7, 64 * kMiB);
  ASSERT_EQ(node.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(node.status().message().find("--segment-node: NUMA node 7 does not exist"),
            absl::string_view::npos)
      << node.status();
  node = PlanSegmentNode(t, 1, 1 * kGiB);  // node 1 has 459 MiB
  ASSERT_EQ(node.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(node.status().message().find("NUMA node 1, which has only"), absl::string_view::npos)
      << node.status();
  t.nodes[3].capacity_bytes = 0;
  node = PlanSegmentNode(t, 3, kMiB);
  ASSERT_EQ(node.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(node.status().message().find("no memory"), absl::string_view::npos) << node.status();
}

}  // namespace
}  // namespace heatsink::runtime
