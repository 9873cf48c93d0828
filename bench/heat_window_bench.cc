// Heat window benchmarks, each against a baseline measured in the same run:
//
//   * Record throughput, 1 and 2 threads, against a bare
//     absl::flat_hash_map<std::string, int64_t> increment of the same key
//     sequence (one map per thread: no locking, no window, no bound; the
//     cheapest thing that could count reads at all). Ratio = heat window
//     reads/s / baseline reads/s at the same thread count.
//   * Memory per tracked key at 50k and 1M keys: the window's own accounting
//     (fixed bytes per key, key bytes per key) and the resident-set growth of
//     the process per key (which also includes the allocator's per-block
//     overhead), against the resident-set growth of the bare map holding the
//     same keys.
//
// A final table prints every ratio. Run: heatsink-heat-window-bench

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/resident_bytes.h"
#include "benchmark/benchmark.h"
#include "core/env/rng.h"
#include "core/replication/heat_window.h"

namespace heatsink {
namespace {

constexpr int64_t kDistinctKeys = 40'000;  // fits the default 50k window: lookups, not churn
constexpr size_t kSequenceLength = 1 << 20;
constexpr absl::string_view kTenant = "tenant-a";

// Mooncake-like keys: a model prefix and a hex block hash (~40 bytes).
std::string KeyName(int64_t i) {
  return absl::StrFormat("llama-70b/prefix-%016x", Mix64(static_cast<uint64_t>(i)));
}

const std::vector<std::string>& Keys() {
  static const auto* keys = [] {
    auto* v = new std::vector<std::string>();
    v->reserve(kDistinctKeys);
    for (int64_t i = 0; i < kDistinctKeys; ++i) v->push_back(KeyName(i));
    return v;
  }();
  return *keys;
}

// A fixed pseudo-random access sequence (skewed: a quarter of reads go to 1%
// of the keys), shared by the baseline and the window.
const std::vector<uint32_t>& Sequence() {
  static const auto* seq = [] {
    auto* v = new std::vector<uint32_t>();
    v->reserve(kSequenceLength);
    Rng rng(2024);
    for (size_t i = 0; i < kSequenceLength; ++i) {
      v->push_back(static_cast<uint32_t>(rng.Bernoulli(1, 4) ? rng.Uniform(kDistinctKeys / 100)
                                                             : rng.Uniform(kDistinctKeys)));
    }
    return v;
  }();
  return *seq;
}

void BM_BaselineFlatHashMapIncrement(benchmark::State& state) {
  const auto& keys = Keys();
  const auto& seq = Sequence();
  absl::flat_hash_map<std::string, int64_t> counts;
  size_t i = static_cast<size_t>(state.thread_index()) * 7919;
  for (auto _ : state) {
    const absl::string_view key = keys[seq[i++ & (kSequenceLength - 1)]];
    auto it = counts.find(key);
    if (it != counts.end()) {
      ++it->second;
    } else {
      counts.emplace(std::string(key), 1);
    }
  }
  benchmark::DoNotOptimize(counts.size());
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_BaselineFlatHashMapIncrement)->Threads(1)->Threads(2)->UseRealTime();

HeatWindow* g_window = nullptr;

void BM_HeatWindowRecord(benchmark::State& state) {
  const auto& keys = Keys();
  const auto& seq = Sequence();
  if (state.thread_index() == 0) {
    g_window = new HeatWindow(HeatWindow::Options{});  // defaults: 10 s, 10 sub-buckets, 50k
  }
  size_t i = static_cast<size_t>(state.thread_index()) * 7919;
  TimeNs now = 0;
  int64_t crossed = 0;
  for (auto _ : state) {  // the loop start is a barrier: g_window is set
    const HeatRecord r =
        g_window->Record(now, HeatKeyView{kTenant, keys[seq[i++ & (kSequenceLength - 1)]], ""});
    crossed += r.crossed ? 1 : 0;
    now += 1'000;  // one read per microsecond per thread
  }
  benchmark::DoNotOptimize(crossed);
  state.SetItemsProcessed(state.iterations());
  if (state.thread_index() == 0) {
    state.counters["tracked_keys"] = static_cast<double>(g_window->stats().tracked_keys);
    delete g_window;
    g_window = nullptr;
  }
}
BENCHMARK(BM_HeatWindowRecord)->Threads(1)->Threads(2)->UseRealTime();

void BM_BaselineMapMemory(benchmark::State& state) {
  const int64_t n = state.range(0);
  double per_key = 0;
  for (auto _ : state) {
    const int64_t before = ResidentBytes();
    auto counts = std::make_unique<absl::flat_hash_map<std::string, int64_t>>();
    for (int64_t i = 0; i < n; ++i) counts->emplace(KeyName(i), 1);
    per_key = static_cast<double>(ResidentBytes() - before) / static_cast<double>(n);
    benchmark::DoNotOptimize(counts->size());
  }
  state.counters["rss_bytes_per_key"] = per_key;
}
BENCHMARK(BM_BaselineMapMemory)
    ->Arg(50'000)
    ->Arg(1'000'000)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

void BM_HeatWindowMemory(benchmark::State& state) {
  const int64_t n = state.range(0);
  HeatWindowMemory m;
  double rss_per_key = 0;
  for (auto _ : state) {
    const int64_t before = ResidentBytes();
    HeatWindow::Options o;
    o.entries_max = n;
    auto window = std::make_unique<HeatWindow>(o);
    // 1.5x the limit so every shard fills; all reads inside one window.
    for (int64_t i = 0; i < n + n / 2; ++i) {
      const std::string key = KeyName(i);
      (void)window->Record(i, HeatKeyView{kTenant, key, ""});
    }
    rss_per_key = static_cast<double>(ResidentBytes() - before) /
                  static_cast<double>(window->stats().tracked_keys);
    m = window->Memory();
  }
  const double tracked = static_cast<double>(m.tracked_keys);
  state.counters["tracked_keys"] = tracked;
  state.counters["fixed_bytes_per_key"] = static_cast<double>(m.fixed_bytes) / tracked;
  state.counters["key_bytes_per_key"] = static_cast<double>(m.key_bytes) / tracked;
  state.counters["rss_bytes_per_key"] = rss_per_key;
}
BENCHMARK(BM_HeatWindowMemory)
    ->Arg(50'000)
    ->Arg(1'000'000)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// Collects every run so the final table can divide by its baseline.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.run_type != Run::RT_Iteration) continue;
      Entry& e = entries_[run.benchmark_name()];
      const auto items = run.counters.find("items_per_second");
      if (items != run.counters.end()) e.items_per_second = items->second.value;
      for (const auto& [name, counter] : run.counters) e.counters[name] = counter.value;
    }
    ConsoleReporter::ReportRuns(runs);
  }

  void PrintRatios() const {
    std::printf("\n=== heat window vs baseline (same run) ===\n");
    for (const char* threads : {"threads:1", "threads:2"}) {
      const Entry* base = Find(absl::StrCat("BM_BaselineFlatHashMapIncrement/real_time/", threads));
      const Entry* hw = Find(absl::StrCat("BM_HeatWindowRecord/real_time/", threads));
      if (base == nullptr || hw == nullptr || base->items_per_second == 0) continue;
      std::printf(
          "Record %s: heat window %.2f M reads/s, flat_hash_map %.2f M reads/s, ratio %.3f\n",
          threads, hw->items_per_second / 1e6, base->items_per_second / 1e6,
          hw->items_per_second / base->items_per_second);
    }
    for (const char* keys : {"50000", "1000000"}) {
      const Entry* base = Find(absl::StrCat("BM_BaselineMapMemory/", keys, "/iterations:1"));
      const Entry* hw = Find(absl::StrCat("BM_HeatWindowMemory/", keys, "/iterations:1"));
      if (base == nullptr || hw == nullptr) continue;
      const double base_rss = base->counters.at("rss_bytes_per_key");
      const double hw_rss = hw->counters.at("rss_bytes_per_key");
      std::printf(
          "Memory at %s keys: heat window %.1f fixed + %.1f key bytes/key (accounted), %.1f "
          "bytes/key RSS; flat_hash_map %.1f bytes/key RSS; RSS ratio %.3f\n",
          keys, hw->counters.at("fixed_bytes_per_key"), hw->counters.at("key_bytes_per_key"),
          hw_rss, base_rss, base_rss > 0 ? hw_rss / base_rss : 0.0);
    }
  }

 private:
  struct Entry {
    double items_per_second = 0;
    std::map<std::string, double> counters;
  };
  const Entry* Find(const std::string& name) const {
    const auto it = entries_.find(name);
    return it == entries_.end() ? nullptr : &it->second;
  }
  std::map<std::string, Entry> entries_;
};

}  // namespace
}  // namespace heatsink

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  heatsink::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.PrintRatios();
  benchmark::Shutdown();
  return 0;
}
