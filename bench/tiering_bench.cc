// Tiering core benchmarks (ADR-0019), each against a baseline measured in the
// same run:
//
//   * Increment cost per million keys: the bare dense-slot CAS increment
//     against `v[i] += 1.0` on a plain std::vector<double> in the same order;
//     and a logical read's full path (OpenRead + CompleteRead: index lookup,
//     pin, CAS increment, unpin) against a flat_hash_map<TierKey, double>
//     lookup-and-add of the same keys, over all 1M keys (memory bound) and
//     over a cache-resident working set of 4096 keys.
//   * Decay cost per million keys: a decay pass over 1M dense-owned scores and
//     over 1M index-owned (arena) scores, against `v[i] *= 0.5` on a plain
//     vector of the same size.
//   * Ranking scan time per GiB of heads: ScanRegion over a fully occupied
//     256 GiB preferred region (1M fixed heads of 256 KiB), against a plain
//     sum over a vector of as many doubles.
//   * Exchange of two 2 MiB blocks -- the memory swap alone and the whole
//     promotion step (scan, re-validation, swap, metadata, head locations) --
//     against one memcpy of 4 MiB. Target: <= 2x.
//
// The large pools use memory with no bytes behind it (the benchmarks above
// touch only scores and metadata); the exchange uses real heap memory.
// A final table prints every ratio. Run: heatsink-tiering-bench
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "benchmark/benchmark.h"
#include "bench/seconds_reporter.h"
#include "core/base/check.h"
#include "core/env/head_memory.h"
#include "core/env/manual_env.h"
#include "core/env/rng.h"
#include "core/env/vector_head_memory.h"
#include "core/tiering/tier_manager.h"

namespace heatsink {
namespace {

constexpr int64_t kKeys = 1'000'000;

// Sizes and range checks only: the benchmarks that use it never look at bytes.
class NoBytesHeadMemory final : public HeadMemory {
 public:
  explicit NoBytesHeadMemory(std::vector<uint64_t> sizes) : sizes_(std::move(sizes)) {}
  int region_count() const override { return static_cast<int>(sizes_.size()); }
  uint64_t region_bytes(int region) const override { return sizes_[region]; }
  absl::Status Read(int region, uint64_t offset, absl::Span<uint8_t> out) const override {
    return CheckMemoryRange(region, region_count(), sizes_[region], offset, out.size());
  }
  absl::Status Write(int region, uint64_t offset, absl::Span<const uint8_t> in) override {
    return CheckMemoryRange(region, region_count(), sizes_[region], offset, in.size());
  }
  absl::Status Swap(const MemoryRange&, const MemoryRange&) override { return absl::OkStatus(); }

 private:
  std::vector<uint64_t> sizes_;
};

TierKey BenchKey(int64_t i) { return TierKey{ObjectName{"bench", absl::StrCat("obj-", i)}, 0}; }

// A TierManager with kKeys keys: fixed heads (default 2 MiB blocks of 256 KiB
// heads, 256 GiB preferred region) or 100-byte arena objects.
struct BigPool {
  explicit BigPool(bool arena) {
    knobs.memory_bytes = 256 * kGiB;
    knobs.sub_memory_bytes = {knobs.block_bytes};  // one foreign block: promotion enabled
    knobs.index_keys_max = 2 * kKeys;
    HS_CHECK_OK(knobs.Validate());
    memory = std::make_unique<NoBytesHeadMemory>(RegionSizes(PlanRegions(knobs)));
    auto created = TierManager::Create(env.env(), knobs, memory.get());
    HS_CHECK_OK(created.status());
    tm = *std::move(created);
    const std::vector<uint8_t> value(arena ? 100 : knobs.ram_head_bytes, 0);
    keys.reserve(kKeys);
    for (int64_t i = 0; i < kKeys; ++i) {
      keys.push_back(BenchKey(i));
      HS_CHECK_OK(tm->Put(keys.back(), value));
    }
    // A fixed pseudo-random visiting order, shared with the baselines.
    order.resize(kKeys);
    std::iota(order.begin(), order.end(), 0);
    Rng rng(7);
    for (int64_t i = kKeys - 1; i > 0; --i) {
      std::swap(order[i], order[rng.Uniform(static_cast<uint64_t>(i + 1))]);
    }
  }
  TieringKnobs knobs;
  ManualEnv env;
  std::unique_ptr<NoBytesHeadMemory> memory;
  std::unique_ptr<TierManager> tm;
  std::vector<TierKey> keys;
  std::vector<uint32_t> order;
};

BigPool& FixedPool() {
  static BigPool* pool = new BigPool(/*arena=*/false);
  return *pool;
}
BigPool& ArenaPool() {
  static BigPool* pool = new BigPool(/*arena=*/true);
  return *pool;
}

void BM_BaselineVectorIncrement(benchmark::State& state) {
  const BigPool& pool = FixedPool();
  std::vector<double> v(kKeys, 0.0);
  for (auto _ : state) {
    for (uint32_t i : pool.order) v[i] += 1.0;
    benchmark::ClobberMemory();
  }
  benchmark::DoNotOptimize(v.data());
  state.SetItemsProcessed(state.iterations() * kKeys);
}
BENCHMARK(BM_BaselineVectorIncrement)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_DenseSlotIncrement(benchmark::State& state) {
  DenseScoreArray scores(kKeys);
  for (int64_t i = 0; i < kKeys; ++i) HS_CHECK_OK(scores.Publish(i, 0.0));
  const BigPool& pool = FixedPool();
  for (auto _ : state) {
    for (uint32_t i : pool.order) benchmark::DoNotOptimize(scores.Add(i, 1.0));
  }
  state.SetItemsProcessed(state.iterations() * kKeys);
}
BENCHMARK(BM_DenseSlotIncrement)->Unit(benchmark::kMillisecond)->UseRealTime();

// The read path's fair baseline: find the key in a hash map keyed by the same
// TierKey and add to a double beside it. `working_set` keys: all 1M (memory
// bound: every lookup misses the caches) or a cache-resident 4096.
void BM_BaselineHashMapIncrement(benchmark::State& state) {
  const BigPool& pool = FixedPool();
  static auto* map = [&pool] {
    auto* m = new absl::flat_hash_map<TierKey, double>();
    m->reserve(kKeys);
    for (const TierKey& k : pool.keys) m->emplace(k, 0.0);
    return m;
  }();
  const int64_t working_set = state.range(0);
  for (auto _ : state) {
    for (int64_t n = 0; n < kKeys; ++n) {
      (*map)[pool.keys[pool.order[n % working_set]]] += 1.0;
    }
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kKeys);
}
BENCHMARK(BM_BaselineHashMapIncrement)->Arg(kKeys)->Arg(4096)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_LogicalReadIncrement(benchmark::State& state) {
  BigPool& pool = FixedPool();
  const int64_t working_set = state.range(0);
  for (auto _ : state) {
    for (int64_t n = 0; n < kKeys; ++n) {
      absl::StatusOr<ReadToken> t = pool.tm->OpenRead(pool.keys[pool.order[n % working_set]]);
      pool.tm->CompleteRead(*std::move(t));
    }
  }
  state.SetItemsProcessed(state.iterations() * kKeys);
}
BENCHMARK(BM_LogicalReadIncrement)->Arg(kKeys)->Arg(4096)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_BaselineVectorDecay(benchmark::State& state) {
  std::vector<double> v(kKeys, 1.0);
  for (auto _ : state) {
    for (double& x : v) x *= 0.5;
    benchmark::ClobberMemory();
    if (v[0] < 1e-200) std::fill(v.begin(), v.end(), 1.0);
  }
  benchmark::DoNotOptimize(v.data());
  state.SetItemsProcessed(state.iterations() * kKeys);
}
BENCHMARK(BM_BaselineVectorDecay)->Unit(benchmark::kMillisecond)->UseRealTime();

void DecayBench(benchmark::State& state, BigPool& pool) {
  for (auto _ : state) HS_CHECK_OK(pool.tm->RunDecayPass());
  state.SetItemsProcessed(state.iterations() * kKeys);
}
void BM_DecayPassDenseScores(benchmark::State& state) { DecayBench(state, FixedPool()); }
void BM_DecayPassIndexScores(benchmark::State& state) { DecayBench(state, ArenaPool()); }
BENCHMARK(BM_DecayPassDenseScores)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_DecayPassIndexScores)->Unit(benchmark::kMillisecond)->UseRealTime();

double GibOfHeads() {
  const BigPool& pool = FixedPool();
  return static_cast<double>(kKeys * pool.knobs.ram_head_bytes) / static_cast<double>(kGiB);
}

void BM_BaselineVectorSum(benchmark::State& state) {
  std::vector<double> v(kKeys, 1.0);
  for (auto _ : state) {
    double sum = 0;
    for (double x : v) sum += x;
    benchmark::DoNotOptimize(sum);
  }
  state.counters["gib_of_heads"] = GibOfHeads();
}
BENCHMARK(BM_BaselineVectorSum)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_RankingScanRegion(benchmark::State& state) {
  BigPool& pool = FixedPool();
  absl::StatusOr<PromotionRound> round = pool.tm->TryBeginPromotion();
  HS_CHECK_OK(round.status());
  uint64_t eligible = 0;
  for (auto _ : state) {
    const RegionSummary s = round->ScanRegion(0);
    eligible = s.blocks_eligible;
    benchmark::DoNotOptimize(s.extremum.score);
  }
  round->Finish();
  HS_CHECK(eligible * pool.knobs.heads_per_block() == static_cast<uint64_t>(kKeys));
  state.counters["gib_of_heads"] = GibOfHeads();
}
BENCHMARK(BM_RankingScanRegion)->Unit(benchmark::kMillisecond)->UseRealTime();

// Two real 2 MiB blocks: one preferred, one foreign, each of 8 heads.
struct ExchangePool {
  ExchangePool() {
    knobs.memory_bytes = knobs.block_bytes;
    knobs.sub_memory_bytes = {knobs.block_bytes};
    memory = std::make_unique<VectorHeadMemory>(RegionSizes(PlanRegions(knobs)));
    auto created = TierManager::Create(env.env(), knobs, memory.get());
    HS_CHECK_OK(created.status());
    tm = *std::move(created);
    std::vector<uint8_t> value(knobs.ram_head_bytes);
    for (int i = 0; i < 16; ++i) {
      std::fill(value.begin(), value.end(), static_cast<uint8_t>(i));
      keys.push_back(BenchKey(i));
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
        tm->CompleteRead(*std::move(t));
      }
    }
  }
  TieringKnobs knobs;
  ManualEnv env;
  std::unique_ptr<VectorHeadMemory> memory;
  std::unique_ptr<TierManager> tm;
  std::vector<TierKey> keys;
};

void BM_BaselineMemcpy4MiB(benchmark::State& state) {
  const size_t bytes = 4 * kMiB;
  std::vector<uint8_t> src(bytes, 1), dst(bytes, 0);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::ClobberMemory();
  }
  benchmark::DoNotOptimize(dst.data());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes));
}
BENCHMARK(BM_BaselineMemcpy4MiB)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_MemorySwapTwo2MiBBlocks(benchmark::State& state) {
  VectorHeadMemory memory({2 * kMiB, 2 * kMiB});
  std::vector<uint8_t> ones(2 * kMiB, 1);
  HS_CHECK_OK(memory.Write(1, 0, ones));
  for (auto _ : state) {
    HS_CHECK_OK(memory.Swap(MemoryRange{0, 0, 2 * kMiB}, MemoryRange{1, 0, 2 * kMiB}));
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(4 * kMiB));
}
BENCHMARK(BM_MemorySwapTwo2MiBBlocks)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_PromotionStepExchange(benchmark::State& state) {
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
BENCHMARK(BM_PromotionStepExchange)->Unit(benchmark::kMicrosecond)->UseRealTime();

class RatioReporter : public SecondsReporter {
 public:
  void PrintRatios() const {
    std::printf("\n=== tiering vs baselines (same run) ===\n");
    const double per_million = 1e6 / static_cast<double>(kKeys);
    auto ms = [&](const char* name) { return Seconds(name) * per_million * 1e3; };
    const double base_inc = ms("BM_BaselineVectorIncrement");
    std::printf("increment per 1M keys: plain vector %.3f ms | dense CAS %.3f ms (%.2fx)\n",
                base_inc, ms("BM_DenseSlotIncrement"), ms("BM_DenseSlotIncrement") / base_inc);
    for (const char* set : {"1000000", "4096"}) {
      const std::string base = absl::StrCat("BM_BaselineHashMapIncrement/", set);
      const std::string read = absl::StrCat("BM_LogicalReadIncrement/", set);
      std::printf("logical read per 1M reads over %s keys: hash map += %.3f ms | OpenRead + "
                  "CompleteRead %.3f ms (%.2fx)\n",
                  set, ms(base.c_str()), ms(read.c_str()), ms(read.c_str()) / ms(base.c_str()));
    }
    const double base_decay = ms("BM_BaselineVectorDecay");
    std::printf("decay per 1M keys: plain vector %.3f ms | dense-owned pass %.3f ms (%.2fx) | "
                "index-owned pass %.3f ms (%.2fx)\n",
                base_decay, ms("BM_DecayPassDenseScores"),
                ms("BM_DecayPassDenseScores") / base_decay, ms("BM_DecayPassIndexScores"),
                ms("BM_DecayPassIndexScores") / base_decay);
    const double gib = GibOfHeads();
    const double base_scan = Seconds("BM_BaselineVectorSum") / gib * 1e3;
    const double scan = Seconds("BM_RankingScanRegion") / gib * 1e3;
    std::printf("ranking scan per GiB of heads: plain sum %.4f ms | ScanRegion %.4f ms (%.2fx)\n",
                base_scan, scan, scan / base_scan);
    const double copy = Seconds("BM_BaselineMemcpy4MiB") * 1e6;
    const double swap = Seconds("BM_MemorySwapTwo2MiBBlocks") * 1e6;
    const double step = Seconds("BM_PromotionStepExchange") * 1e6;
    std::printf("exchange of two 2 MiB blocks: memcpy 4 MiB %.1f us | memory swap %.1f us "
                "(%.2fx) | promotion step %.1f us (%.2fx; target <= 2x)\n",
                copy, swap, swap / copy, step, step / copy);
  }

};

}  // namespace
}  // namespace heatsink

int main(int argc, char** argv) {
  // Debian's Abseil is built with Mutex deadlock detection on, which records
  // every lock acquisition in a global graph; a production process turns it
  // off, and so does this benchmark (the flag --keep_deadlock_detection keeps
  // it, to see its cost).
  bool keep = false;
  for (int i = 1; i < argc; ++i) keep |= std::string(argv[i]) == "--keep_deadlock_detection";
  if (!keep) absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::string(argv[i]) != "--keep_deadlock_detection") args.push_back(argv[i]);
  }
  argc = static_cast<int>(args.size());
  argv = args.data();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  heatsink::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.PrintRatios();
  benchmark::Shutdown();
  return 0;
}
