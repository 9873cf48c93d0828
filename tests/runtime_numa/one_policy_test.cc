// Holds the two worlds to one NUMA policy (issue 30, item 2): the same
// topology and tiering knobs give
//   - the same head-region placement through heatsink-store's path (hwloc XML
//     -> LoadTopology -> PlanNumaPlacement) and the simulator's (scenario JSON
//     with the same nodes, capacities and distances -> RunScenario, whose NUMA
//     host model plans its pool), and the same refusals: the simulator no
//     longer accepts a set-up the store refuses (more foreign regions than
//     other nodes, more head bytes than a node has), and says where in the
//     scenario it is;
//   - the same promotion pacing decisions from the runtime's
//     NumaPromotionService (threads) and the simulator's NumaHostModel
//     (TieringDriver on simulated time) over the same pool contents: rescan
//     after an exchange, wait after no inversion, wait for the rate cap, stop
//     when promotion is disabled.
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/env/vector_head_memory.h"
#include "core/tiering/numa_placement.h"
#include "core/tiering/promotion_pacing.h"
#include "gtest/gtest.h"
#include "runtime/numa/placement.h"
#include "runtime/numa/promotion_service.h"
#include "runtime/numa/topology.h"
#include "sim/numa_model.h"
#include "sim/runner.h"
#include "sim/scenario.h"
#include "sim/sim_env.h"
#include "tests/runtime_numa/four_node_topology.h"
#include "tests/runtime_numa/tiering_fixture.h"

namespace heatsink::runtime {
namespace {

using testing::Key;
using testing::PutHeads;
using testing::ReadHeads;
using testing::SteadyEnv;

using testing::FourNodes;

// ---------------------------------------------------------------- placement

std::string SizeList(const std::vector<uint64_t>& sizes) { return absl::StrJoin(sizes, ","); }

// A one-host scenario whose host has exactly `t`'s NUMA nodes, capacities,
// distances and NIC node, with the tiering knobs memory/sub_memory.
std::string ScenarioFor(const Topology& t, const TieringKnobs& k) {
  std::vector<std::string> nodes;
  for (const NumaNode& n : t.nodes) {
    nodes.push_back(
        absl::StrCat(R"({"id": )", n.id, R"(, "capacity_bytes": )", n.capacity_bytes, "}"));
  }
  std::vector<std::string> rows;
  for (const std::vector<int>& row : t.distances) {
    rows.push_back(absl::StrCat("[", absl::StrJoin(row, ", "), "]"));
  }
  return absl::StrCat(R"({
  "name": "one-policy",
  "seed": 1,
  "duration_s": 1,
  "topology": {"domains": [{"name": "d", "hosts": [{
    "name": "store",
    "numa_nodes": [)",
                      absl::StrJoin(nodes, ", "), R"(],
    "numa_distances": [)",
                      absl::StrJoin(rows, ", "), R"(],
    "nic_numa_node": )",
                      t.nic_node, R"(,
    "segments": [{"name": "mem", "capacity_bytes": "64MiB"}],
    "clients": [{"name": "c"}]}]}]},
  "knobs": {"memory": )",
                      k.memory_bytes, R"(, "sub_memory": ")", SizeList(k.sub_memory_bytes),
                      R"("},
  "workloads": []
})");
}

// Captures the placement of the run's one NUMA host.
class PlacementCapture final : public sim::RunObserver {
 public:
  absl::Status AtEnd(const sim::RunWorld& world) override {
    if (world.numa_hosts != nullptr && !world.numa_hosts->empty()) {
      placement = world.numa_hosts->front().second->placement();
    }
    return absl::OkStatus();
  }
  std::optional<NumaPlacement> placement;
};

// The simulator's answer: the placement its NUMA model used, or the run's
// refusal.
absl::StatusOr<NumaPlacement> SimulatorPlacement(const Topology& t, const TieringKnobs& k) {
  absl::StatusOr<sim::Scenario> scenario =
      sim::ParseScenario(ScenarioFor(t, k), "one.json", "", sim::SimulatorLoadOptions());
  if (!scenario.ok()) return scenario.status();
  PlacementCapture capture;
  sim::RunOptions options;
  options.observer = &capture;
  absl::StatusOr<sim::RunResult> run = sim::RunScenario(*scenario, options);
  if (!run.ok()) return run.status();
  if (!capture.placement.has_value()) return absl::InternalError("no NUMA host in the run");
  return *capture.placement;
}

std::vector<int> Nodes(const NumaPlacement& p) {
  std::vector<int> nodes;
  for (const RegionPlacement& r : p.regions) nodes.push_back(r.node);
  return nodes;
}

TieringKnobs PoolKnobs(std::vector<uint64_t> sub_memory) {
  TieringKnobs k;
  k.memory_bytes = 64 * kMiB;
  k.sub_memory_bytes = std::move(sub_memory);
  return k;
}

TEST(OneNumaPolicy, SamePlacementInBothWorlds) {
  for (const int nic : {0, 1, 2}) {
    Topology t = FourNodes();
    t.nic_node = nic;
    for (size_t foreign = 0; foreign <= 3; ++foreign) {
      SCOPED_TRACE(absl::StrCat("nic ", nic, ", ", foreign, " foreign region(s)"));
      const TieringKnobs k = PoolKnobs(std::vector<uint64_t>(foreign, 32 * kMiB));
      absl::StatusOr<NumaPlacement> store = PlanNumaPlacement(t, k, {});
      ASSERT_TRUE(store.ok()) << store.status();
      absl::StatusOr<NumaPlacement> simulated = SimulatorPlacement(t, k);
      ASSERT_TRUE(simulated.ok()) << simulated.status();
      EXPECT_EQ(Nodes(*simulated), Nodes(*store));
      EXPECT_EQ(simulated->head_nodes, store->head_nodes);
      EXPECT_EQ(simulated->serving_node, store->serving_node);
    }
  }
  // Hand-computed for the ring 0-1-2-3-0 from node 0: 1 and 3 at 20 (lower
  // id first), 2 at 30 -- not the ascending-id order the simulator used to
  // take.
  const absl::StatusOr<NumaPlacement> ring =
      SimulatorPlacement(FourNodes(), PoolKnobs({32 * kMiB, 32 * kMiB, 32 * kMiB}));
  ASSERT_TRUE(ring.ok()) << ring.status();
  EXPECT_EQ(Nodes(*ring), (std::vector<int>{0, 1, 3, 2}));
}

TEST(OneNumaPolicy, TheSimulatorRefusesWhatTheStoreRefuses) {
  const Topology t = FourNodes();
  // Four foreign regions, three other nodes: the simulator used to let the
  // last node absorb the extra one.
  const TieringKnobs extra = PoolKnobs({2 * kMiB, 2 * kMiB, 2 * kMiB, 2 * kMiB});
  const absl::StatusOr<NumaPlacement> store = PlanNumaPlacement(t, extra, {});
  ASSERT_EQ(store.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store.status().message(),
            "--sub-memory describes 4 foreign region(s) but the topology has 3 other NUMA "
            "node(s) with memory");
  absl::StatusOr<NumaPlacement> simulated = SimulatorPlacement(t, extra);
  ASSERT_EQ(simulated.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(simulated.status().message(),
            "one.json:7:19: $.topology.domains[0].hosts[0].numa_nodes: $.knobs.sub_memory "
            "describes 4 foreign region(s) but host store has 3 other NUMA node(s) with memory");

  // More head bytes than node 1 has (459 MiB).
  const TieringKnobs big = PoolKnobs({kGiB});
  ASSERT_EQ(PlanNumaPlacement(t, big, {}).status().code(), absl::StatusCode::kInvalidArgument);
  simulated = SimulatorPlacement(t, big);
  ASSERT_EQ(simulated.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(simulated.status().message().find(
                "$.topology.domains[0].hosts[0].numa_nodes: $.knobs.memory/$.knobs.sub_memory: "
                "1024 MiB of head regions on NUMA node 1, which has only 459 MiB"),
            std::string::npos)
      << simulated.status();
}

// ------------------------------------------------------------------- pacing

using Decision = std::pair<PromotionOutcome, PromotionPacing>;

std::string Describe(const std::vector<Decision>& decisions) {
  std::string out;
  for (const auto& [outcome, pacing] : decisions) {
    absl::StrAppend(&out, PromotionOutcomeName(outcome), "->", PacingActionName(pacing.action), "(",
                    pacing.wait_ns, " ns) ");
  }
  return out;
}

// TestMin geometry (64 KiB blocks of 8 KiB heads): `preferred_blocks`
// preferred blocks of cold heads (1 read each), then `hot_blocks` foreign
// blocks of hot heads (5 reads each), in two foreign regions of 4 blocks.
struct PoolShape {
  uint64_t preferred_blocks = 1;
  int hot_blocks = 1;
  TieringKnobs Knobs() const {
    TieringKnobs k = TieringKnobs::TestMin();
    k.memory_bytes = preferred_blocks * k.block_bytes;
    k.sub_memory_bytes = {4 * k.block_bytes, 4 * k.block_bytes};
    k.no_inversion_wait_ms = 5;
    k.decay_interval_ms = 3'600'000;  // no decay during the test
    return k;
  }
};

// The runtime's first `count` decisions (NumaPromotionService on the
// four-node placement, logical regions).
std::vector<Decision> RuntimeDecisions(const PoolShape& shape, const TieringKnobs& knobs,
                                       size_t count) {
  absl::StatusOr<NumaPlacement> placement = PlanNumaPlacement(FourNodes(), knobs, {});
  EXPECT_TRUE(placement.ok()) << placement.status();
  if (!placement.ok()) return {};
  SteadyEnv env;
  VectorHeadMemory memory(RegionSizes(PlanRegions(knobs)));
  absl::StatusOr<std::unique_ptr<TierManager>> manager =
      TierManager::Create(&env.env, knobs, &memory);
  EXPECT_TRUE(manager.ok()) << manager.status();
  if (!manager.ok()) return {};
  const int heads = static_cast<int>(knobs.heads_per_block());
  const int cold = static_cast<int>(shape.preferred_blocks) * heads;
  PutHeads(**manager, "cold", cold, 0);
  PutHeads(**manager, "hot", shape.hot_blocks * heads, 1000);
  ReadHeads(**manager, "cold", cold, 0, 1);
  ReadHeads(**manager, "hot", shape.hot_blocks * heads, 1000, 5);

  std::mutex mu;
  std::vector<Decision> decisions;
  PromotionServiceOptions options;
  for (const RegionPlacement& r : placement->regions) options.region_nodes.push_back(r.node);
  options.serving_node = placement->serving_node;
  options.pacing_observer = [&](PromotionOutcome outcome, const PromotionPacing& pacing) {
    std::lock_guard<std::mutex> lock(mu);
    decisions.emplace_back(outcome, pacing);
  };
  NumaPromotionService service(&env.env, manager->get(), options);
  EXPECT_TRUE(service.Start().ok());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (decisions.size() >= count ||
          (!decisions.empty() && decisions.back().second.action == PacingAction::kStop)) {
        break;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  service.Stop();
  std::lock_guard<std::mutex> lock(mu);
  if (decisions.size() > count) decisions.resize(count);
  return decisions;
}

// The simulator's first `count` decisions (NumaHostModel on a four-node host,
// the same stores and reads, simulated time).
std::vector<Decision> SimulatorDecisions(const PoolShape& shape, const TieringKnobs& knobs,
                                         size_t count) {
  // The four-node host as a scenario describes it.
  const Topology t = FourNodes();
  sim::ScenarioHost host;
  host.name = "store";
  for (const NumaNode& n : t.nodes) {
    host.numa_nodes.push_back(sim::ScenarioNumaNode{
        .id = n.id, .capacity_bytes = static_cast<int64_t>(n.capacity_bytes)});
  }
  host.numa_distances = t.distances;
  host.nic_numa_node = t.nic_node;
  sim::SimEnv sim_env(1);
  absl::StatusOr<std::unique_ptr<sim::NumaHostModel>> model =
      sim::NumaHostModel::Create(sim_env.env(), knobs, host, sim::NumaCosts());
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return {};
  std::vector<Decision> decisions;
  (*model)->set_pacing_observer([&](PromotionOutcome outcome, const PromotionPacing& pacing) {
    decisions.emplace_back(outcome, pacing);
  });
  const uint64_t head = knobs.ram_head_bytes;
  const int heads = static_cast<int>(knobs.heads_per_block());
  const int cold = static_cast<int>(shape.preferred_blocks) * heads;
  auto name = [](const std::string& prefix, int i) {
    return ObjectName{"numa-test", absl::StrCat(prefix, "-", i)};
  };
  for (int i = 0; i < cold; ++i) (*model)->Store(name("cold", i), head);
  for (int i = 0; i < shape.hot_blocks * heads; ++i) (*model)->Store(name("hot", i), head);
  for (int i = 0; i < cold; ++i) (*model)->Read(name("cold", i), head, 0);
  for (int r = 0; r < 5; ++r) {
    for (int i = 0; i < shape.hot_blocks * heads; ++i) (*model)->Read(name("hot", i), head, 0);
  }
  (*model)->Start();
  for (int step = 0; step < 10'000 && decisions.size() < count; ++step) {
    if (!decisions.empty() && decisions.back().second.action == PacingAction::kStop) break;
    EXPECT_TRUE(sim_env.engine().RunUntil(sim_env.NowNs() + MsToNs(1)).ok());
  }
  if (decisions.size() > count) decisions.resize(count);
  return decisions;
}

TEST(OneNumaPolicy, SamePacingAfterExchangeAndWithoutInversion) {
  const PoolShape shape;
  const TieringKnobs knobs = shape.Knobs();
  const std::vector<Decision> expected = {
      {PromotionOutcome::kExchanged, {PacingAction::kRoundNow, 0}},
      {PromotionOutcome::kNoInversion, {PacingAction::kWait, MsToNs(5)}},
      {PromotionOutcome::kNoInversion, {PacingAction::kWait, MsToNs(5)}},
  };
  const std::vector<Decision> simulated = SimulatorDecisions(shape, knobs, 3);
  const std::vector<Decision> runtime = RuntimeDecisions(shape, knobs, 3);
  EXPECT_EQ(simulated, expected) << Describe(simulated);
  EXPECT_EQ(runtime, expected) << Describe(runtime);
}

TEST(OneNumaPolicy, SamePacingWhenPromotionIsDisabled) {
  const PoolShape shape;
  TieringKnobs knobs = shape.Knobs();
  knobs.no_numa_promotion = true;
  const std::vector<Decision> expected = {{PromotionOutcome::kDisabled, {PacingAction::kStop, 0}}};
  const std::vector<Decision> simulated = SimulatorDecisions(shape, knobs, 2);
  const std::vector<Decision> runtime = RuntimeDecisions(shape, knobs, 2);
  EXPECT_EQ(simulated, expected) << Describe(simulated);
  EXPECT_EQ(runtime, expected) << Describe(runtime);
}

TEST(OneNumaPolicy, SamePacingAtTheExchangeCap) {
  PoolShape shape;
  shape.preferred_blocks = 2;
  shape.hot_blocks = 2;
  TieringKnobs knobs = shape.Knobs();
  knobs.exchanges_per_second_max = 1;
  const std::vector<Decision> simulated = SimulatorDecisions(shape, knobs, 2);
  const std::vector<Decision> runtime = RuntimeDecisions(shape, knobs, 2);
  for (const std::vector<Decision>* world : {&simulated, &runtime}) {
    SCOPED_TRACE(Describe(*world));
    ASSERT_EQ(world->size(), 2u);
    EXPECT_EQ((*world)[0], (Decision{PromotionOutcome::kExchanged, {PacingAction::kRoundNow, 0}}));
    // The second exchange waits for the cap's second, less the time the
    // first round took (simulated scan and exchange costs, or real time).
    EXPECT_EQ((*world)[1].first, PromotionOutcome::kRateLimited);
    EXPECT_EQ((*world)[1].second.action, PacingAction::kWait);
    EXPECT_GT((*world)[1].second.wait_ns, MsToNs(500));
    EXPECT_LE((*world)[1].second.wait_ns, MsToNs(1'000));
  }
}

}  // namespace
}  // namespace heatsink::runtime
