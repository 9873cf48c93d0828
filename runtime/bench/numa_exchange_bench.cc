// Promotion exchange on mbind'ed head memory (ADR-0019), against a baseline
// measured in the same run on the same memory:
//
//   * baseline: one memcpy of 4 MiB from the foreign region into the
//     preferred region (the bytes of two 2 MiB blocks crossing once);
//   * NumaHeadMemory::Swap of two 2 MiB blocks (preferred <-> foreign): the
//     bytes an exchange moves, each range staying on its node's pages;
//   * a whole promotion step on a TierManager over that memory: scan,
//     reduce, re-validation under the exclusive tier lock, swap, block
//     metadata and head locations. Target: <= 2x the baseline (the pause);
//   * the same step in a store's head pool (segment_head_pool.h), where the
//     exchange moves the two blocks' pages between nodes instead of bytes
//     between addresses (no page moves on a one-node host).
//
// Placement: region 0 on the serving node (the NIC's), region 1 on the
// nearest other node with memory, or on the serving node too when the host
// has one node (the numbers are then a same-node exchange; run it on a
// multi-socket host for cross-node figures). The final table prints the
// ratios and the exchange throughput. Run: heatsink-numa-exchange-bench
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "bench/seconds_reporter.h"
#include "benchmark/benchmark.h"
#include "core/base/check.h"
#include "core/env/env.h"
#include "core/env/rng.h"
#include "core/tiering/tier_manager.h"
#include "runtime/env/steady_clock.h"
#include "runtime/numa/numa_head_memory.h"
#include "runtime/numa/placement.h"
#include "runtime/numa/segment_head_pool.h"
#include "runtime/numa/topology.h"

namespace heatsink::runtime {
namespace {

// Where the two regions go on this host.
struct BenchNodes {
  int preferred = 0;
  int foreign = 0;
};

BenchNodes PickNodes() {
  absl::StatusOr<Topology> topology = LoadTopology({});
  HS_CHECK_OK(topology.status());
  BenchNodes nodes;
  nodes.preferred = topology->nic_node;
  nodes.foreign = nodes.preferred;
  int best = -1;
  for (const NumaNode& n : topology->nodes) {
    if (n.id == nodes.preferred || n.capacity_bytes == 0) continue;
    const int d = NodeDistance(*topology, nodes.preferred, n.id);
    if (best < 0 || d < best) {
      best = d;
      nodes.foreign = n.id;
    }
  }
  return nodes;
}

const BenchNodes& Nodes() {
  static const BenchNodes nodes = PickNodes();
  return nodes;
}

std::unique_ptr<NumaHeadMemory> TwoRegions(uint64_t bytes) {
  std::vector<RegionPlacement> regions(2);
  regions[0].region = 0;
  regions[0].node = Nodes().preferred;
  regions[0].bytes = bytes;
  regions[0].preferred = true;
  regions[1].region = 1;
  regions[1].node = Nodes().foreign;
  regions[1].bytes = bytes;
  absl::StatusOr<std::unique_ptr<NumaHeadMemory>> memory =
      NumaHeadMemory::Create(regions, NumaMemoryOptions{});
  HS_CHECK_OK(memory.status());
  return *std::move(memory);
}

void BM_BaselineMemcpy4MiB(benchmark::State& state) {
  const uint64_t bytes = 4 * kMiB;
  std::unique_ptr<NumaHeadMemory> memory = TwoRegions(bytes);
  std::memset(memory->data(1), 1, bytes);
  for (auto _ : state) {
    std::memcpy(memory->data(0), memory->data(1), bytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes));
}
BENCHMARK(BM_BaselineMemcpy4MiB)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_NumaSwapTwo2MiBBlocks(benchmark::State& state) {
  std::unique_ptr<NumaHeadMemory> memory = TwoRegions(2 * kMiB);
  std::memset(memory->data(1), 1, 2 * kMiB);
  for (auto _ : state) {
    HS_CHECK_OK(memory->Swap(MemoryRange{0, 0, 2 * kMiB}, MemoryRange{1, 0, 2 * kMiB}));
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(4 * kMiB));
}
BENCHMARK(BM_NumaSwapTwo2MiBBlocks)->Unit(benchmark::kMicrosecond)->UseRealTime();

// One preferred and one foreign 2 MiB block of 8 heads each, on mbind memory.
struct ExchangePool {
  ExchangePool() : rng(1) {
    env.clock = &clock;
    env.rng = &rng;
    knobs.memory_bytes = knobs.block_bytes;
    knobs.sub_memory_bytes = {knobs.block_bytes};
    HS_CHECK_OK(knobs.Validate());
    memory = TwoRegions(knobs.block_bytes);
    auto created = TierManager::Create(&env, knobs, memory.get());
    HS_CHECK_OK(created.status());
    tm = *std::move(created);
    std::vector<uint8_t> value(knobs.ram_head_bytes);
    for (int i = 0; i < 16; ++i) {
      std::memset(value.data(), i, value.size());
      keys.push_back(TierKey{ObjectName{"bench", absl::StrCat("head-", i)}, 0});
      HS_CHECK_OK(tm->Put(keys.back(), value));
    }
  }
  // Reads the foreign block's keys until it is strictly hotter than the
  // preferred one, so the next step has an inversion to resolve.
  void MakeForeignHotter() {
    double local = 0, foreign = 0;
    for (const TierKey& k : keys) {
      const KeyInfo info = *tm->Lookup(k);
      (info.region == 0 ? local : foreign) += info.score;
    }
    const int reads = static_cast<int>((local - foreign) / 8) + 1;
    for (const TierKey& k : keys) {
      if (tm->Lookup(k)->region == 0) continue;
      for (int r = 0; r < reads; ++r) {
        absl::StatusOr<ReadToken> t = tm->OpenRead(k);
        HS_CHECK_OK(t.status());
        tm->CompleteRead(*std::move(t));
      }
    }
  }
  SteadyClock clock;
  Rng rng;
  Env env;
  TieringKnobs knobs;
  std::unique_ptr<NumaHeadMemory> memory;
  std::unique_ptr<TierManager> tm;
  std::vector<TierKey> keys;
};

void BM_NumaPromotionStepExchange(benchmark::State& state) {
  ExchangePool pool;
  for (auto _ : state) {
    state.PauseTiming();
    pool.MakeForeignHotter();
    state.ResumeTiming();
    const PromotionResult r = pool.tm->PromotionStep();
    HS_CHECK(r.outcome == PromotionOutcome::kExchanged);
  }
  HS_CHECK_OK(pool.tm->CheckInvariants());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(4 * kMiB));
}
BENCHMARK(BM_NumaPromotionStepExchange)->Unit(benchmark::kMicrosecond)->UseRealTime();

// The store's head pool (segment_head_pool.h): the same promotion step, but
// the exchange moves the two blocks' pages between the regions' nodes
// (mbind MPOL_MF_MOVE) instead of copying bytes, so no address changes. On
// a one-node host both regions are on one node and no page moves: the figure
// is then the step without the migration.
void BM_StoreHeadPoolPromotionStep(benchmark::State& state) {
  absl::StatusOr<Topology> topology = LoadTopology({});
  HS_CHECK_OK(topology.status());
  LinuxThreadBinder binder(&*topology);
  SteadyClock clock;
  Rng rng(1);
  Env env;
  env.clock = &clock;
  env.rng = &rng;
  SegmentHeadPoolOptions options;
  options.knobs.memory_bytes = options.knobs.block_bytes;
  options.knobs.sub_memory_bytes = {options.knobs.block_bytes};
  options.placement.serving_node = Nodes().preferred;
  options.placement.regions.resize(2);
  for (int r = 0; r < 2; ++r) {
    options.placement.regions[r].region = r;
    options.placement.regions[r].node = r == 0 ? Nodes().preferred : Nodes().foreign;
    options.placement.regions[r].bytes = options.knobs.block_bytes;
    options.placement.regions[r].preferred = r == 0;
  }
  options.segment_ids = {SegmentId(1)};
  options.binder = &binder;
  absl::StatusOr<std::unique_ptr<SegmentHeadPool>> pool = SegmentHeadPool::Create(&env, options);
  HS_CHECK_OK(pool.status());
  const uint64_t block = options.knobs.block_bytes;
  for (auto _ : state) {
    state.PauseTiming();
    // Read the foreign block until it is strictly hotter than the local one.
    double local = 0, foreign = 0;
    for (uint64_t off = 0; off < 2 * block; off += options.knobs.ram_head_bytes) {
      const TierKey key =
          SegmentHeadPool::ChunkKey(SegmentId(1), off / options.knobs.ram_head_bytes);
      const KeyInfo info = *(*pool)->manager().Lookup(key);
      (info.region == 0 ? local : foreign) += info.score;
    }
    const int reads = static_cast<int>((local - foreign) / 8) + 1;
    for (uint64_t off = 0; off < 2 * block; off += block) {
      const TierKey key =
          SegmentHeadPool::ChunkKey(SegmentId(1), off / options.knobs.ram_head_bytes);
      if ((*pool)->manager().Lookup(key)->region == 0) continue;
      for (int r = 0; r < reads; ++r) (*pool)->OnSegmentRead(SegmentId(1), off, block);
    }
    state.ResumeTiming();
    const PromotionResult r = (*pool)->manager().PromotionStep();
    HS_CHECK(r.outcome == PromotionOutcome::kExchanged);
  }
  HS_CHECK_OK((*pool)->manager().CheckInvariants());
  if (Nodes().preferred == Nodes().foreign) {
    state.SetLabel("one node: no page moves");
  } else {
    state.SetLabel("pages move between nodes");
    state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(2 * block));
  }
}
BENCHMARK(BM_StoreHeadPoolPromotionStep)->Unit(benchmark::kMicrosecond)->UseRealTime();

class RatioReporter : public SecondsReporter {
 public:
  void PrintRatios() const {
    const double copy = Seconds("BM_BaselineMemcpy4MiB") * 1e6;
    const double swap = Seconds("BM_NumaSwapTwo2MiBBlocks") * 1e6;
    const double step = Seconds("BM_NumaPromotionStepExchange") * 1e6;
    if (copy <= 0) return;
    std::printf("\n=== exchange on mbind memory: preferred node %d, foreign node %d ===\n",
                Nodes().preferred, Nodes().foreign);
    std::printf("memcpy 4 MiB %.1f us | swap of two 2 MiB blocks %.1f us (%.2fx) | promotion "
                "step %.1f us (%.2fx; target <= 2x)\n",
                copy, swap, swap / copy, step, step > 0 ? step / copy : 0.0);
    const double pool = Seconds("BM_StoreHeadPoolPromotionStep") * 1e6;
    if (pool > 0) {
      std::printf("store head pool promotion step (pages move, addresses stay) %.1f us (%.2fx)%s\n",
                  pool, pool / copy,
                  Nodes().preferred == Nodes().foreign ? " -- one node here: no page moved" : "");
    }
    if (step > 0) {
      std::printf("exchange throughput: %.0f exchanges/s, %.2f GB/s of block bytes moved\n",
                  1e6 / step, 4.0 * kMiB / (step * 1e3));
    }
  }

};

}  // namespace
}  // namespace heatsink::runtime

int main(int argc, char** argv) {
  // As a production process does: no Mutex deadlock-detection graph.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  heatsink::runtime::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.PrintRatios();
  benchmark::Shutdown();
  return 0;
}
