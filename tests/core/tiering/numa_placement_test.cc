// Covers PlanNumaPlacement, the one head-region placement rule of both worlds,
// on hand-built topologies with hand-computed answers: the preferred region on
// the serving node, foreign regions nearest first by distance with ties to
// the lower id (whatever the order the distances suggest), the small pool
// beside them, --perverse, explicit foreign lists, and every refusal --
// including more foreign regions than other memory nodes, where no node
// absorbs the extras -- with messages that name the caller's inputs.
#include "core/tiering/numa_placement.h"

#include <vector>

#include "gtest/gtest.h"

namespace heatsink {
namespace {

constexpr uint64_t kNodeBytes = 512 * kMiB;

NumaNode Node(int id) {
  NumaNode n;
  n.id = id;
  n.capacity_bytes = kNodeBytes;
  return n;
}

// Nodes 0..3, 512 MiB each. Distances from node 0: node 3 at 12, node 1 and
// node 2 both at 21 (a tie), so "nearest first" is 3, 1, 2 -- neither id
// order nor the order of the rows.
Topology SkewedFour() {
  Topology t;
  for (int id = 0; id < 4; ++id) t.nodes.push_back(Node(id));
  t.distances = {{10, 21, 21, 12}, {21, 10, 12, 21}, {21, 12, 10, 21}, {12, 21, 21, 10}};
  t.nic_node = 0;
  return t;
}

TieringKnobs Knobs(std::vector<uint64_t> sub_memory) {
  TieringKnobs k;
  k.memory_bytes = 64 * kMiB;
  k.sub_memory_bytes = std::move(sub_memory);
  return k;
}

std::vector<int> Nodes(const NumaPlacement& p) {
  std::vector<int> nodes;
  for (const RegionPlacement& r : p.regions) nodes.push_back(r.node);
  return nodes;
}

TEST(NumaPlacementRule, ForeignRegionsGoNearestFirstTiesToTheLowerId) {
  absl::StatusOr<NumaPlacement> p =
      PlanNumaPlacement(SkewedFour(), Knobs({32 * kMiB, 32 * kMiB, 32 * kMiB}), {});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->serving_node, 0);
  EXPECT_EQ(Nodes(*p), (std::vector<int>{0, 3, 1, 2}));
  EXPECT_TRUE(p->regions[0].preferred);
  EXPECT_FALSE(p->regions[1].preferred);
  EXPECT_EQ(p->regions[0].bytes, 64 * kMiB);
  EXPECT_EQ(p->regions[3].bytes, 32 * kMiB);
  EXPECT_EQ(p->head_nodes, (std::vector<int>{0, 1, 2, 3}));
}

TEST(NumaPlacementRule, TiesAreBrokenByIdNotByNodeOrder) {
  // Node 2 serves; nodes 1 and 3 are both at 12 from it: node 1 first.
  Topology t = SkewedFour();
  t.distances[2] = {21, 12, 10, 12};
  t.distances[3][2] = 12;
  t.distances[1][2] = 12;
  NumaPlacementOptions o;
  o.serving_node = 2;
  absl::StatusOr<NumaPlacement> p = PlanNumaPlacement(t, Knobs({kMiB * 2, kMiB * 2}), o);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(Nodes(*p), (std::vector<int>{2, 1, 3}));
}

TEST(NumaPlacementRule, DefaultDistancesMeanAscendingIds) {
  Topology t = SkewedFour();
  t.distances = DefaultNodeDistances(4);
  t.nic_node = 2;
  absl::StatusOr<NumaPlacement> p = PlanNumaPlacement(t, Knobs({kMiB * 2, kMiB * 2, kMiB * 2}), {});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(Nodes(*p), (std::vector<int>{2, 0, 1, 3}));
}

TEST(NumaPlacementRule, SmallPoolFollowsTheHeadRegions) {
  TieringKnobs k = Knobs({32 * kMiB, 32 * kMiB});
  k.small_memory_bytes = 8 * kMiB;
  k.small_sub_memory_bytes = {8 * kMiB};
  ASSERT_TRUE(k.Validate().ok()) << k.Validate();
  absl::StatusOr<NumaPlacement> p = PlanNumaPlacement(SkewedFour(), k, {});
  ASSERT_TRUE(p.ok()) << p.status();
  // Head: 0, 3, 1. Small: the serving node, then the first foreign node.
  EXPECT_EQ(Nodes(*p), (std::vector<int>{0, 3, 1, 0, 3}));
  EXPECT_EQ(p->regions[3].pool, PoolKind::kSmall);
  EXPECT_TRUE(p->regions[3].preferred);
  EXPECT_EQ(p->head_nodes, (std::vector<int>{0, 1, 3}));
}

TEST(NumaPlacementRule, PerverseTakesTheFarthestNodeForThePreferredRegion) {
  NumaPlacementOptions o;
  o.perverse = true;
  absl::StatusOr<NumaPlacement> p =
      PlanNumaPlacement(SkewedFour(), Knobs({32 * kMiB, 32 * kMiB}), o);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->serving_node, 0);
  // Farthest from 0: nodes 1 and 2 at 21, the lower id wins.
  EXPECT_EQ(Nodes(*p), (std::vector<int>{1, 0, 3}));
}

TEST(NumaPlacementRule, ExplicitForeignNodesAreTakenAsListed) {
  NumaPlacementOptions o;
  o.sub_memory_nodes = {2, 1};
  absl::StatusOr<NumaPlacement> p =
      PlanNumaPlacement(SkewedFour(), Knobs({32 * kMiB, 32 * kMiB}), o);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(Nodes(*p), (std::vector<int>{0, 2, 1}));
}

TEST(NumaPlacementRule, RefusesExtraForeignRegionsInsteadOfDoublingANodeUp) {
  absl::StatusOr<NumaPlacement> p =
      PlanNumaPlacement(SkewedFour(), Knobs({kMiB * 2, kMiB * 2, kMiB * 2, kMiB * 2}), {});
  ASSERT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(p.status().message(),
            "--sub-memory describes 4 foreign region(s) but the topology has 3 other NUMA "
            "node(s) with memory");
  // A memoryless node is no candidate either.
  Topology t = SkewedFour();
  t.nodes[3].capacity_bytes = 0;
  p = PlanNumaPlacement(t, Knobs({kMiB * 2, kMiB * 2, kMiB * 2}), {});
  ASSERT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("has 2 other NUMA node(s)"), absl::string_view::npos)
      << p.status();
  // One node: no foreign region at all.
  Topology one;
  one.nodes = {Node(0)};
  one.distances = DefaultNodeDistances(1);
  p = PlanNumaPlacement(one, Knobs({kMiB * 2}), {});
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(PlanNumaPlacement(one, Knobs({}), {}).ok());
}

TEST(NumaPlacementRule, MessagesNameTheCallersInputs) {
  NumaPlacementNames names;
  names.memory = "$.knobs.memory";
  names.sub_memory = "$.knobs.sub_memory";
  names.topology = "host h";
  absl::StatusOr<NumaPlacement> p =
      PlanNumaPlacement(SkewedFour(), Knobs({kMiB * 2, kMiB * 2, kMiB * 2, kMiB * 2}), {}, names);
  EXPECT_EQ(p.status().message(),
            "$.knobs.sub_memory describes 4 foreign region(s) but host h has 3 other NUMA "
            "node(s) with memory");
  p = PlanNumaPlacement(SkewedFour(), Knobs({kGiB}), {}, names);
  EXPECT_EQ(p.status().message(),
            "$.knobs.memory/$.knobs.sub_memory: 1024 MiB of head regions on NUMA node 3, which "
            "has only 512 MiB");
}

TEST(NumaPlacementRule, RefusesBadNodes) {
  NumaPlacementOptions o;
  o.serving_node = 7;
  absl::StatusOr<NumaPlacement> p = PlanNumaPlacement(SkewedFour(), Knobs({}), o);
  EXPECT_EQ(p.status().message(), "serving node: NUMA node 7 does not exist (nodes: 0,1,2,3)");
  Topology t = SkewedFour();
  t.nodes[0].capacity_bytes = 0;
  p = PlanNumaPlacement(t, Knobs({}), {});
  EXPECT_EQ(p.status().message(), "serving node: NUMA node 0 has no memory");
  o = NumaPlacementOptions();
  o.sub_memory_nodes = {0};
  EXPECT_NE(PlanNumaPlacement(SkewedFour(), Knobs({kMiB * 2}), o)
                .status()
                .message()
                .find("node 0 already holds the preferred region"),
            absl::string_view::npos);
  o.sub_memory_nodes = {1, 1};
  EXPECT_EQ(PlanNumaPlacement(SkewedFour(), Knobs({kMiB * 2, kMiB * 2}), o).status().message(),
            "--sub-memory-nodes: node 1 is listed twice");
  o.sub_memory_nodes = {1};
  EXPECT_EQ(PlanNumaPlacement(SkewedFour(), Knobs({kMiB * 2, kMiB * 2}), o).status().message(),
            "--sub-memory-nodes lists 1 node(s) but --sub-memory/--small-sub-memory describe 2 "
            "foreign region(s)");
}

TEST(NumaPlacementRule, RefusesMoreBytesThanANodeHas) {
  TieringKnobs k = Knobs({});
  k.memory_bytes = kNodeBytes;
  EXPECT_TRUE(PlanNumaPlacement(SkewedFour(), k, {}).ok());  // exactly full
  k.memory_bytes = kNodeBytes + k.block_bytes;
  absl::StatusOr<NumaPlacement> p = PlanNumaPlacement(SkewedFour(), k, {});
  ASSERT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("NUMA node 0, which has only 512 MiB"),
            absl::string_view::npos)
      << p.status();
}

TEST(NumaPlacementRule, RefusesAnInvalidTopology) {
  Topology t = SkewedFour();
  t.distances[1][0] = 5;  // nearer than node 1 to itself
  EXPECT_EQ(PlanNumaPlacement(t, Knobs({}), {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace heatsink
