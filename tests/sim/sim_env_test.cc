// Covers sim/sim_env: the seed tree (one root seed split into named
// subsystem seeds through Rng::Fork), the seed log, and that the Env handed
// to core runs on the engine's clock and executor.
#include "sim/sim_env.h"

#include "gtest/gtest.h"

namespace heatsink::sim {
namespace {

TEST(SimEnv, SplitsRootSeedIntoNamedSubsystems) {
  SimEnv sim(42);
  const Rng root(42);
  const std::vector<SeedEntry> seeds = sim.Seeds();
  ASSERT_EQ(seeds.size(), 5u);
  EXPECT_EQ(seeds[0], (SeedEntry{"root", 42}));
  EXPECT_EQ(seeds[1], (SeedEntry{"workload", root.SubSeed("workload")}));
  EXPECT_EQ(seeds[2], (SeedEntry{"network", root.SubSeed("network")}));
  EXPECT_EQ(seeds[3], (SeedEntry{"faults", root.SubSeed("faults")}));
  EXPECT_EQ(seeds[4], (SeedEntry{"master", root.SubSeed("master")}));
  for (size_t i = 1; i < seeds.size(); ++i) {
    for (size_t j = i + 1; j < seeds.size(); ++j) EXPECT_NE(seeds[i].seed, seeds[j].seed);
  }
  EXPECT_EQ(sim.network_rng().seed(), root.SubSeed("network"));
}

TEST(SimEnv, SubsystemStreamsAreIndependentAndReproducible) {
  SimEnv a(7), b(7);
  // Draws in one subsystem never shift another.
  for (int i = 0; i < 10; ++i) a.workload_rng().Next64();
  EXPECT_EQ(a.network_rng().Next64(), b.network_rng().Next64());
  Rng& extra = a.SubsystemRng("numa");
  EXPECT_EQ(&extra, &a.SubsystemRng("numa"));
  EXPECT_EQ(a.Seeds().back(), (SeedEntry{"numa", Rng(7).SubSeed("numa")}));
  EXPECT_EQ(a.Seeds().size(), 6u);
}

TEST(SimEnv, CoreEnvRunsOnTheEngine) {
  SimEnv sim(1);
  Env* env = sim.env();
  EXPECT_EQ(env->rng, &sim.master_rng());
  TimeNs seen = -1;
  env->executor->PostAfter(MsToNs(3), [&] { seen = env->NowNs(); });
  ASSERT_TRUE(sim.engine().RunUntil(MsToNs(10)).ok());
  EXPECT_EQ(seen, MsToNs(3));
  EXPECT_EQ(env->NowNs(), MsToNs(10));
}

}  // namespace
}  // namespace heatsink::sim
