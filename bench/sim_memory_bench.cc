// Memory per object in the simulator (issue: realistic object populations):
//   BM_MemoryPerObject/N  a bulk put of N objects of 1 KiB on 4 hosts (reads
//                         turned down to 1/s, dynamic replication enforce,
//                         the NUMA model on), run for 2 simulated seconds.
//                         Reports, per object:
//                           end_heap_bytes_per_object  heap in use at the end
//                             of the run (every put landed; the master's
//                             objects, heat, the NUMA model's index and the
//                             driver's tables) minus the heap before it;
//                           peak_heap_bytes_per_object the highest heap in
//                             use during the run (sampled every 65,536 events
//                             and at the end) minus the heap before it: what
//                             the puts in flight add on top;
//                           end_resident_bytes_per_object the process's
//                             resident memory at the end of the run minus
//                             before it (both after malloc_trim), per object:
//                             what the machine holds, where the heap figure
//                             also counts reserved pages never touched (the
//                             heat window's table, sized by its entry limit);
//                         and, as the baseline measured in the same run, the
//                         same figures for 10^5 objects:
//                         ratio_end_vs_100k (1 when the cost per object does
//                         not grow with the population). Target: at most 400
//                         bytes per object.
// Heap bytes are glibc's arena bytes in use plus its mmap-ed blocks.
#include <malloc.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "bench/resident_bytes.h"
#include "benchmark/benchmark.h"
#include "core/base/check.h"
#include "sim/runner.h"
#include "sim/scenario.h"

namespace heatsink::sim {
namespace {

double HeapBytesInUse() {
  const struct mallinfo2 info = mallinfo2();
  return static_cast<double>(info.uordblks) + static_cast<double>(info.hblkhd);
}

std::string BulkPutScenario(int64_t objects) {
  return absl::StrCat(R"({
  "name": "bulk-put", "seed": 1, "duration_s": 2, "time_step_ms": 1000,
  "topology": {"domains": [{"name": "rack-a", "hosts": [
    {"name": "store", "count": 4, "nic_send_gbps": 25, "nic_receive_gbps": 25,
     "segments": [{"name": "mem", "capacity_bytes": "16GiB"}],
     "clients": [{"name": "reader-0"}, {"name": "reader-1"}]}]}]},
  "workloads": [{"type": "zipf", "name": "z", "objects": )",
                      objects, R"(, "object_size_bytes": "1KiB",
    "skew": 0.99, "rate_per_s": 1, "readers_per_domain": 8, "settle_ms": 500}]
})");
}

// Samples the heap once every put has landed, while the world still exists.
class EndSampler : public RunObserver {
 public:
  absl::Status AtEnd(const RunWorld& /*world*/) override {
    end_heap = HeapBytesInUse();
    end_resident = static_cast<double>(ResidentBytes());
    return absl::OkStatus();
  }
  double end_heap = 0;
  double end_resident = 0;
};

struct Footprint {
  double end_bytes = 0;  // above the heap before the run
  double peak_bytes = 0;
  double end_resident_bytes = 0;  // above the resident memory before the run
  int64_t puts = 0;
};

Footprint Measure(int64_t objects) {
  absl::StatusOr<Scenario> scenario =
      ParseScenario(BulkPutScenario(objects), "bulk-put.json", ".", SimulatorLoadOptions());
  HS_CHECK_OK(scenario.status());
  RunOptions options;
  options.keep_scenario_echo = false;
  EndSampler end;
  options.observer = &end;
  const double resident_before = static_cast<double>(ResidentBytes());
  const double before = HeapBytesInUse();
  double peak = before;
  options.progress = [&peak](TimeNs, TimeNs, uint64_t) {
    peak = std::max(peak, HeapBytesInUse());
  };
  absl::StatusOr<RunResult> run = RunScenario(*scenario, options);
  HS_CHECK_OK(run.status());
  peak = std::max(peak, end.end_heap);
  const auto it = run->metrics.find("sim_puts_total");
  HS_CHECK(it != run->metrics.end());
  HS_CHECK_MSG(it->second == objects, "not every put landed");
  return Footprint{end.end_heap - before, peak - before, end.end_resident - resident_before,
                   objects};
}

void BM_MemoryPerObject(benchmark::State& state) {
  const int64_t objects = state.range(0);
  Footprint f;
  Footprint base;
  for (auto _ : state) {
    base = Measure(100'000);
    f = objects == 100'000 ? base : Measure(objects);
  }
  const double n = static_cast<double>(objects);
  state.counters["end_heap_bytes_per_object"] = f.end_bytes / n;
  state.counters["peak_heap_bytes_per_object"] = f.peak_bytes / n;
  state.counters["end_resident_bytes_per_object"] = f.end_resident_bytes / n;
  state.counters["end_heap_bytes_per_object_100k"] = base.end_bytes / 1e5;
  state.counters["ratio_end_vs_100k"] = (f.end_bytes / n) / (base.end_bytes / 1e5);
}
BENCHMARK(BM_MemoryPerObject)->Arg(100'000)->Arg(1'000'000)->Iterations(1)->Unit(
    benchmark::kSecond);

}  // namespace
}  // namespace heatsink::sim

BENCHMARK_MAIN();
