// Covers the simulator's NUMA host model beyond the tiering core: the head
// pool's placement by the core's rule (foreign regions nearest first by the
// host's distances, a set-up the store refuses refused here too, naming the
// host's numa_nodes path), the oracle
// lines (the best placement of whole blocks, and of single heads, for one
// interval's reads, blocks as composed at the interval's end), the promotion
// state reported per interval, and score inheritance (a copy's chunks start
// at the source chunks' decayed scores, scaled by copy_score_inheritance).
// Without Start() nothing is promoted, so every placement below is the one
// the stores made: the preferred region fills first, in store order.
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/tiering/tiering_knobs.h"
#include "gtest/gtest.h"
#include "sim/numa_model.h"
#include "sim/sim_env.h"

namespace heatsink::sim {
namespace {

// 64 KiB blocks of 8 KiB heads; a preferred region of `preferred_blocks`
// blocks and one foreign region of 8 blocks.
TieringKnobs Knobs(uint64_t preferred_blocks) {
  TieringKnobs k = TieringKnobs::TestMin();
  k.memory_bytes = preferred_blocks * k.block_bytes;
  k.sub_memory_bytes = {8 * k.block_bytes};
  return k;
}

ScenarioHost TwoNodeHost() {
  ScenarioHost h;
  h.name = "h";
  h.numa_nodes = {ScenarioNumaNode{.id = 0}, ScenarioNumaNode{.id = 1}};
  return h;
}

ObjectName Obj(int i) { return ObjectName{"", absl::StrCat("o", i)}; }

class NumaModelTest : public ::testing::Test {
 protected:
  std::unique_ptr<NumaHostModel> Make(const TieringKnobs& knobs) {
    absl::StatusOr<std::unique_ptr<NumaHostModel>> m =
        NumaHostModel::Create(sim_.env(), knobs, TwoNodeHost(), NumaCosts());
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? *std::move(m) : nullptr;
  }
  // Reads object i `n` times in `interval`.
  static void ReadN(NumaHostModel& m, int i, int n, size_t interval, uint64_t head) {
    for (int r = 0; r < n; ++r) m.Read(Obj(i), head, interval);
  }
  SimEnv sim_{1};
};

TEST_F(NumaModelTest, OracleTakesTheMostReadWholeBlocks) {
  const TieringKnobs knobs = Knobs(1);  // one preferred block of 8 heads
  const uint64_t head = knobs.ram_head_bytes;
  std::unique_ptr<NumaHostModel> m = Make(knobs);
  ASSERT_NE(m, nullptr);
  // Objects 0-7 fill the preferred block, 8-15 and 16-23 two foreign ones.
  for (int i = 0; i < 24; ++i) m->Store(Obj(i), head);
  // Local block: 1 read each (8). Foreign block A: object 8 read 20 times
  // (20). Foreign block B: objects 16-23 read 3 times each (24).
  for (int i = 0; i < 8; ++i) ReadN(*m, i, 1, 0, head);
  ReadN(*m, 8, 20, 0, head);
  for (int i = 16; i < 24; ++i) ReadN(*m, i, 3, 0, head);
  const NumaIntervalStats s = m->CloseInterval(0);
  EXPECT_EQ(s.head_reads, 8 + 20 + 24);
  EXPECT_EQ(s.local_reads, 8);
  // Whole blocks: block B (24 reads) is the best single block.
  EXPECT_EQ(s.oracle_local_reads, 24);
  // Single heads: the 8 most-read heads are object 8 (20) and seven of
  // objects 16-23 (3 each).
  EXPECT_EQ(s.head_oracle_local_reads, 20 + 7 * 3);
  EXPECT_EQ(s.exchanges, 0);
  EXPECT_EQ(s.eligible_local_blocks, 1);
  EXPECT_EQ(s.eligible_foreign_blocks, 2);
  ASSERT_TRUE(s.coldest_local_score.has_value());
  EXPECT_EQ(*s.coldest_local_score, 8.0);
  ASSERT_TRUE(s.hottest_foreign_score.has_value());
  EXPECT_EQ(*s.hottest_foreign_score, 24.0);
}

TEST_F(NumaModelTest, IntervalsCloseInOrderAndAQuietIntervalIsEmpty) {
  const TieringKnobs knobs = Knobs(1);
  const uint64_t head = knobs.ram_head_bytes;
  std::unique_ptr<NumaHostModel> m = Make(knobs);
  ASSERT_NE(m, nullptr);
  for (int i = 0; i < 16; ++i) m->Store(Obj(i), head);
  ReadN(*m, 9, 4, 0, head);
  // A read of interval 2 arrives before interval 0 is closed: interval 0
  // keeps its own reads, interval 1 had none.
  ReadN(*m, 0, 2, 2, head);
  const NumaIntervalStats first = m->CloseInterval(0);
  EXPECT_EQ(first.head_reads, 4);
  EXPECT_EQ(first.local_reads, 0);
  EXPECT_EQ(first.oracle_local_reads, 4);
  const NumaIntervalStats quiet = m->CloseInterval(1);
  EXPECT_EQ(quiet.head_reads, 0);
  EXPECT_EQ(quiet.oracle_local_reads, 0);
  const NumaIntervalStats third = m->CloseInterval(2);
  EXPECT_EQ(third.head_reads, 2);
  EXPECT_EQ(third.local_reads, 2);
  EXPECT_EQ(third.oracle_local_reads, 2);
}

TEST_F(NumaModelTest, ChunksOutsideFixedHeadsCountAsServed) {
  const TieringKnobs knobs = Knobs(1);
  const uint64_t head = knobs.ram_head_bytes;
  std::unique_ptr<NumaHostModel> m = Make(knobs);
  ASSERT_NE(m, nullptr);
  // A small object goes to the arena (in the preferred region, local).
  m->Store(Obj(0), 100);
  ReadN(*m, 0, 5, 0, 100);
  // A fixed head read, then removed before the interval closes.
  for (int i = 1; i <= 9; ++i) m->Store(Obj(i), head);
  ReadN(*m, 9, 3, 0, head);  // foreign (the preferred block filled first)
  m->Remove(Obj(9), head);
  const NumaIntervalStats s = m->CloseInterval(0);
  EXPECT_EQ(s.head_reads, 8);
  EXPECT_EQ(s.local_reads, 5);
  // The arena reads were local and stay so; the removed head's were not.
  EXPECT_EQ(s.oracle_local_reads, 5);
  EXPECT_EQ(s.head_oracle_local_reads, 5);
}

TEST_F(NumaModelTest, ACopyInheritsTheSourcesScores) {
  TieringKnobs knobs = Knobs(1);
  const uint64_t head = knobs.ram_head_bytes;
  std::unique_ptr<NumaHostModel> source = Make(knobs);
  std::unique_ptr<NumaHostModel> target = Make(knobs);
  knobs.copy_score_inheritance = 0.5;
  std::unique_ptr<NumaHostModel> half = Make(knobs);
  knobs.copy_score_inheritance = 0.0;
  std::unique_ptr<NumaHostModel> none = Make(knobs);
  ASSERT_TRUE(source && target && half && none);
  // Two chunks; the source reads the object 6 times (each chunk once per read).
  source->Store(Obj(1), 2 * head);
  ReadN(*source, 1, 6, 0, 2 * head);
  for (NumaHostModel* m : {target.get(), half.get(), none.get()}) {
    m->Store(Obj(1), 2 * head);
    m->InheritScores(Obj(1), 2 * head, *source);
    // Six unread heads complete the preferred block, so that it is ranked.
    for (int i = 10; i < 16; ++i) m->Store(Obj(i), head);
  }
  // The inherited scores show in the block scan: both chunks sit in the
  // preferred block.
  EXPECT_EQ(target->CloseInterval(0).coldest_local_score.value_or(-1), 12.0);
  EXPECT_EQ(half->CloseInterval(0).coldest_local_score.value_or(-1), 6.0);
  EXPECT_EQ(none->CloseInterval(0).coldest_local_score.value_or(-1), 0.0);
  // An object the source never indexed inherits nothing; reads still count.
  target->Store(Obj(2), head);
  target->InheritScores(Obj(2), head, *source);
  ReadN(*target, 1, 1, 1, 2 * head);
  EXPECT_EQ(target->CloseInterval(1).coldest_local_score.value_or(-1), 14.0);
}

TEST_F(NumaModelTest, ForeignRegionsGoToTheNearestNodesAndPayTheirLatency) {
  TieringKnobs knobs = Knobs(1);
  knobs.sub_memory_bytes = {8 * knobs.block_bytes, 8 * knobs.block_bytes};
  ScenarioHost h;
  h.name = "h";
  h.numa_nodes = {ScenarioNumaNode{.id = 0}, ScenarioNumaNode{.id = 1},
                  ScenarioNumaNode{.id = 2, .remote_read_latency_ns = 500}};
  // Node 2 is nearer to the NIC's node 0 than node 1 is.
  h.numa_distances = {{10, 20, 11}, {20, 10, 20}, {11, 20, 10}};
  absl::StatusOr<std::unique_ptr<NumaHostModel>> m =
      NumaHostModel::Create(sim_.env(), knobs, h, NumaCosts());
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ((*m)->placement().regions.size(), 3u);
  EXPECT_EQ((*m)->placement().regions[0].node, 0);
  EXPECT_EQ((*m)->placement().regions[1].node, 2);
  EXPECT_EQ((*m)->placement().regions[2].node, 1);
  const uint64_t head = knobs.ram_head_bytes;
  for (int i = 0; i < 9; ++i) (*m)->Store(Obj(i), head);  // object 8 lands in region 1
  // Node 2's remote latency plus 8 KiB at 320 Gbps (205 ns).
  EXPECT_EQ((*m)->Read(Obj(8), head, 0).memory_ns, 500 + 205);
}

TEST_F(NumaModelTest, RefusesWhatTheStoreRefuses) {
  ScenarioHost one;
  one.name = "h";
  one.numa_nodes = {ScenarioNumaNode{.id = 0}};
  one.numa_where = "s.json:9:23: $.topology.domains[0].hosts[0].numa_nodes";
  // One foreign region and no other node: the last node used to absorb it.
  absl::StatusOr<std::unique_ptr<NumaHostModel>> m =
      NumaHostModel::Create(sim_.env(), Knobs(1), one, NumaCosts());
  ASSERT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(m.status().message(),
            "s.json:9:23: $.topology.domains[0].hosts[0].numa_nodes: $.knobs.sub_memory describes "
            "1 foreign region(s) but host h has 0 other NUMA node(s) with memory");
  // More head bytes than the node has.
  ScenarioHost small = TwoNodeHost();
  small.numa_nodes[1].capacity_bytes = 4 * Knobs(1).block_bytes;
  m = NumaHostModel::Create(sim_.env(), Knobs(1), small, NumaCosts());
  ASSERT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(m.status().message(),
            "h: $.knobs.memory/$.knobs.sub_memory: 512 KiB of head regions on NUMA node 1, "
            "which has only 256 KiB");
}

}  // namespace
}  // namespace heatsink::sim
