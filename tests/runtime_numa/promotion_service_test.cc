// Covers NumaPromotionService, the ADR-0019 threads around a TierManager, on
// logical regions (VectorHeadMemory) placed on the four-node topology:
//   - one worker per node holding head regions, the coordinator and the decay
//     thread bound to the serving node, each region scanned by its own node's
//     worker;
//   - the coordinator exchanges the hottest foreign block into the preferred
//     region, keeps the bytes and every score with its key, and stops
//     exchanging once nothing is inverted;
//   - the decay thread keeps its schedule on the Env clock (a ManualClock
//     moves it, no sleeping) and serves RequestDecay, each pass multiplying
//     every score once by --decay, while promotion runs;
//   - --no-numa-promotion keeps decay and never moves a block;
//   - a thread that cannot be bound fails Start with the binder's message and
//     leaves nothing running.
#include "runtime/numa/promotion_service.h"

#include <chrono>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "core/env/manual_env.h"
#include "core/env/time.h"
#include "core/env/vector_head_memory.h"
#include "gtest/gtest.h"
#include "runtime/numa/placement.h"
#include "runtime/numa/topology.h"
#include "tests/runtime_numa/four_node_topology.h"
#include "tests/runtime_numa/tiering_fixture.h"

namespace heatsink::runtime {
namespace {

using testing::Key;
using testing::PutHeads;
using testing::ReadHeads;
using testing::SteadyEnv;

// Records which node each thread asked for; optionally refuses one node.
class RecordingBinder final : public ThreadBinder {
 public:
  explicit RecordingBinder(int refuse_node = -1) : refuse_node_(refuse_node) {}
  absl::Status BindCurrentThread(int node) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++binds_[node];
    if (node == refuse_node_) return absl::InvalidArgumentError("node refused by the test");
    return absl::OkStatus();
  }
  std::map<int, int> binds() {
    std::lock_guard<std::mutex> lock(mu_);
    return binds_;
  }

 private:
  const int refuse_node_;
  std::mutex mu_;
  std::map<int, int> binds_;
};

template <typename Pred>
bool WaitUntil(Pred pred, std::chrono::seconds limit = std::chrono::seconds(30)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

// TestMin geometry (64 KiB blocks of 8 KiB heads): a preferred region of
// `preferred_blocks` blocks and two foreign regions, placed on the four-node
// topology (nodes 0, 1, 3).
struct LogicalPool {
  explicit LogicalPool(uint64_t preferred_blocks = 2, bool no_promotion = false) {
    knobs = TieringKnobs::TestMin();
    knobs.memory_bytes = preferred_blocks * knobs.block_bytes;
    knobs.sub_memory_bytes = {4 * knobs.block_bytes, 4 * knobs.block_bytes};
    knobs.no_inversion_wait_ms = 5;
    knobs.decay_interval_ms = 3'600'000;  // only RequestDecay, unless a test says otherwise
    knobs.no_numa_promotion = no_promotion;
  }
  void Build() {
    TopologyOptions source;
    source.xml_text = testing::kFourNodeTopologyXml;
    absl::StatusOr<Topology> t = LoadTopology(source);
    ASSERT_TRUE(t.ok()) << t.status();
    absl::StatusOr<NumaPlacement> p = PlanNumaPlacement(*t, knobs, {});
    ASSERT_TRUE(p.ok()) << p.status();
    placement = *p;
    memory = std::make_unique<VectorHeadMemory>(RegionSizes(PlanRegions(knobs)));
    absl::StatusOr<std::unique_ptr<TierManager>> created =
        TierManager::Create(&env.env, knobs, memory.get());
    ASSERT_TRUE(created.ok()) << created.status();
    manager = *std::move(created);
  }
  PromotionServiceOptions Options(ThreadBinder* binder) const {
    PromotionServiceOptions o;
    for (const RegionPlacement& r : placement.regions) o.region_nodes.push_back(r.node);
    o.serving_node = placement.serving_node;
    o.binder = binder;
    return o;
  }
  int heads() const { return static_cast<int>(knobs.heads_per_block()); }

  TieringKnobs knobs;
  SteadyEnv env;
  NumaPlacement placement;
  std::unique_ptr<VectorHeadMemory> memory;
  std::unique_ptr<TierManager> manager;
};

TEST(NumaPromotionService, OneWorkerPerNodeAndThreadsOnTheServingNode) {
  LogicalPool pool;
  ASSERT_NO_FATAL_FAILURE(pool.Build());
  RecordingBinder binder;
  NumaPromotionService service(&pool.env.env, pool.manager.get(), pool.Options(&binder));
  ASSERT_TRUE(service.Start().ok());
  EXPECT_EQ(service.worker_nodes(), (std::vector<int>{0, 1, 3}));
  // Empty pool: every round scans every region and finds no inversion.
  ASSERT_TRUE(WaitUntil([&] { return service.stats().rounds >= 3; }));
  service.Stop();
  // Node 0: its worker, the coordinator and the decay thread.
  EXPECT_EQ(binder.binds(), (std::map<int, int>{{0, 3}, {1, 1}, {3, 1}}));
  const PromotionServiceStats stats = service.stats();
  EXPECT_EQ(stats.exchanges, 0);
  EXPECT_GE(stats.no_inversion, 3);
  // Each node's worker scanned exactly its own region, once per round.
  ASSERT_EQ(stats.region_scans_by_node.size(), 3u);
  EXPECT_EQ(stats.region_scans_by_node.at(0), stats.rounds);
  EXPECT_EQ(stats.region_scans_by_node.at(1), stats.rounds);
  EXPECT_EQ(stats.region_scans_by_node.at(3), stats.rounds);
}

TEST(NumaPromotionService, ExchangesHotForeignBlocksIntoThePreferredRegion) {
  LogicalPool pool(/*preferred_blocks=*/2);
  ASSERT_NO_FATAL_FAILURE(pool.Build());
  TierManager& m = *pool.manager;
  const int heads = pool.heads();
  // Two cold blocks fill the preferred region; a lukewarm and a hot block
  // land in foreign region 1, and one more hot block in region 2.
  ASSERT_NO_FATAL_FAILURE(PutHeads(m, "cold", 2 * heads, 0));
  ASSERT_NO_FATAL_FAILURE(PutHeads(m, "warm", heads, 1000));
  ASSERT_NO_FATAL_FAILURE(PutHeads(m, "filler", 3 * heads, 3000));  // rest of region 1
  ASSERT_NO_FATAL_FAILURE(PutHeads(m, "hot", heads, 2000));
  ASSERT_EQ(m.Lookup(Key("warm", 0))->region, 1);
  ASSERT_EQ(m.Lookup(Key("hot", 0))->region, 2);
  ASSERT_NO_FATAL_FAILURE(ReadHeads(m, "cold", 2 * heads, 0, 1));
  ASSERT_NO_FATAL_FAILURE(ReadHeads(m, "warm", heads, 1000, 3));
  ASSERT_NO_FATAL_FAILURE(ReadHeads(m, "hot", heads, 2000, 5));

  NumaPromotionService service(&pool.env.env, pool.manager.get(), pool.Options(nullptr));
  ASSERT_TRUE(service.Start().ok());
  ASSERT_TRUE(WaitUntil([&] { return service.stats().exchanges >= 2; }));
  // Both cold blocks are out; nothing is inverted any more.
  ASSERT_TRUE(WaitUntil([&] { return service.stats().no_inversion >= 2; }));
  service.Stop();
  EXPECT_EQ(service.stats().exchanges, 2);
  for (int i = 0; i < heads; ++i) {
    EXPECT_EQ(m.Lookup(Key("hot", i))->region, 0) << i;
    EXPECT_EQ(m.Lookup(Key("warm", i))->region, 0) << i;
    EXPECT_DOUBLE_EQ(*m.Score(Key("hot", i)), 5.0);
    EXPECT_DOUBLE_EQ(*m.Score(Key("warm", i)), 3.0);
  }
  for (int i = 0; i < 2 * heads; ++i) {
    EXPECT_NE(m.Lookup(Key("cold", i))->region, 0) << i;
    EXPECT_DOUBLE_EQ(*m.Score(Key("cold", i)), 1.0);
  }
  // The bytes followed their keys.
  ASSERT_NO_FATAL_FAILURE(ReadHeads(m, "hot", heads, 2000, 1));
  ASSERT_NO_FATAL_FAILURE(ReadHeads(m, "warm", heads, 1000, 1));
  ASSERT_NO_FATAL_FAILURE(ReadHeads(m, "cold", 2 * heads, 0, 1));
  EXPECT_TRUE(m.CheckInvariants().ok());
  EXPECT_EQ(m.stats().exchanges, 2);
  EXPECT_EQ(m.stats().exchange_bytes, static_cast<int64_t>(4 * pool.knobs.block_bytes));
}

TEST(NumaPromotionService, DecayRunsOnRequestWhilePromotionRuns) {
  LogicalPool pool(/*preferred_blocks=*/1);
  ASSERT_NO_FATAL_FAILURE(pool.Build());
  TierManager& m = *pool.manager;
  const int heads = pool.heads();
  ASSERT_NO_FATAL_FAILURE(PutHeads(m, "local", heads, 0));
  ASSERT_NO_FATAL_FAILURE(PutHeads(m, "remote", heads, 500));
  ASSERT_NO_FATAL_FAILURE(ReadHeads(m, "local", heads, 0, 8));
  ASSERT_NO_FATAL_FAILURE(ReadHeads(m, "remote", heads, 500, 4));
  RecordingBinder binder;
  NumaPromotionService service(&pool.env.env, pool.manager.get(), pool.Options(&binder));
  ASSERT_TRUE(service.Start().ok());
  ASSERT_TRUE(WaitUntil([&] { return service.stats().rounds >= 2; }));
  service.RequestDecay();
  ASSERT_TRUE(WaitUntil([&] { return service.stats().decay_passes == 1; }));
  service.RequestDecay();
  ASSERT_TRUE(WaitUntil([&] { return service.stats().decay_passes == 2; }));
  const int64_t rounds_after_decay = service.stats().rounds;
  // Promotion resumes after the passes.
  ASSERT_TRUE(WaitUntil([&] { return service.stats().rounds > rounds_after_decay + 1; }));
  service.Stop();
  // Each score was multiplied by 0.5 exactly twice; no block was inverted.
  for (int i = 0; i < heads; ++i) {
    EXPECT_DOUBLE_EQ(*m.Score(Key("local", i)), 2.0);
    EXPECT_DOUBLE_EQ(*m.Score(Key("remote", i)), 1.0);
  }
  const PromotionServiceStats stats = service.stats();
  EXPECT_EQ(stats.exchanges, 0);
  EXPECT_EQ(m.stats().decay_passes, 2);
  // Each worker decayed its own regions, once per pass.
  EXPECT_EQ(stats.region_decays_by_node, (std::map<int, int64_t>{{0, 2}, {1, 2}, {3, 2}}));
}

// The schedule is Env time, moved by a ManualClock: no pass before the due
// time, one at it, and after a jump past several due times one pass with the
// next one due on the original grid (missed passes are skipped, not run late,
// and the grid does not restart at the late pass). Every finished round wakes
// the decay thread, so "some rounds later" means it has seen the clock.
TEST(NumaPromotionService, DecayKeepsItsScheduleOnTheEnvClock) {
  constexpr int64_t kIntervalMs = 60'000;  // the ADR's minute
  LogicalPool pool;
  pool.knobs.decay_interval_ms = kIntervalMs;
  ManualClock clock(SecToNs(100));
  pool.env.env.clock = &clock;
  ASSERT_NO_FATAL_FAILURE(pool.Build());
  NumaPromotionService service(&pool.env.env, pool.manager.get(), pool.Options(nullptr));
  ASSERT_TRUE(service.Start().ok());  // passes due at 160 s, 220 s, 280 s, ...
  const auto after_rounds = [&](int64_t n) {
    const int64_t seen = service.stats().rounds;
    return WaitUntil([&] { return service.stats().rounds >= seen + n; });
  };

  clock.AdvanceBy(MsToNs(kIntervalMs) - 1);
  ASSERT_TRUE(after_rounds(3));
  EXPECT_EQ(service.stats().decay_passes, 0);
  clock.AdvanceBy(1);  // 160 s
  ASSERT_TRUE(WaitUntil([&] { return service.stats().decay_passes == 1; }));

  clock.AdvanceBy(SecToNs(150));  // 310 s: 220 s and 280 s were missed
  ASSERT_TRUE(WaitUntil([&] { return service.stats().decay_passes == 2; }));
  ASSERT_TRUE(after_rounds(3));
  EXPECT_EQ(service.stats().decay_passes, 2);
  // Next due at 340 s, on the grid: not 370 s (a minute after the late pass).
  clock.AdvanceBy(SecToNs(30) - 1);
  ASSERT_TRUE(after_rounds(3));
  EXPECT_EQ(service.stats().decay_passes, 2);
  clock.AdvanceBy(1);
  ASSERT_TRUE(WaitUntil([&] { return service.stats().decay_passes == 3; }));
  service.Stop();
  EXPECT_EQ(service.stats().decay_passes, 3);
  EXPECT_EQ(pool.manager->stats().decay_passes, 3);
}

TEST(NumaPromotionService, NoNumaPromotionKeepsDecayAndNeverMovesABlock) {
  LogicalPool pool(/*preferred_blocks=*/1, /*no_promotion=*/true);
  ASSERT_NO_FATAL_FAILURE(pool.Build());
  TierManager& m = *pool.manager;
  const int heads = pool.heads();
  ASSERT_NO_FATAL_FAILURE(PutHeads(m, "local", heads, 0));
  ASSERT_NO_FATAL_FAILURE(PutHeads(m, "remote", heads, 500));
  ASSERT_NO_FATAL_FAILURE(ReadHeads(m, "remote", heads, 500, 4));
  NumaPromotionService service(&pool.env.env, pool.manager.get(), pool.Options(nullptr));
  ASSERT_TRUE(service.Start().ok());
  ASSERT_TRUE(WaitUntil([&] { return service.stats().promotion_disabled; }));
  service.RequestDecay();
  ASSERT_TRUE(WaitUntil([&] { return service.stats().decay_passes == 1; }));
  service.Stop();
  EXPECT_EQ(service.stats().rounds, 0);
  EXPECT_EQ(m.stats().exchanges, 0);
  EXPECT_EQ(m.Lookup(Key("remote", 0))->region, 1);
  EXPECT_DOUBLE_EQ(*m.Score(Key("remote", 0)), 2.0);
}

TEST(NumaPromotionService, BindingFailureFailsStart) {
  LogicalPool pool;
  ASSERT_NO_FATAL_FAILURE(pool.Build());
  RecordingBinder binder(/*refuse_node=*/3);
  NumaPromotionService service(&pool.env.env, pool.manager.get(), pool.Options(&binder));
  const absl::Status status = service.Start();
  ASSERT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("node 3"), absl::string_view::npos) << status;
  EXPECT_EQ(service.stats().rounds, 0);
  EXPECT_EQ(service.stats().decay_passes, 0);
  service.Stop();  // idempotent after a failed start
}

TEST(NumaPromotionService, RegionNodesMustMatchTheManager) {
  LogicalPool pool;
  ASSERT_NO_FATAL_FAILURE(pool.Build());
  PromotionServiceOptions options = pool.Options(nullptr);
  options.region_nodes.pop_back();
  NumaPromotionService service(&pool.env.env, pool.manager.get(), options);
  EXPECT_EQ(service.Start().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace heatsink::runtime
