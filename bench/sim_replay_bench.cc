// Benchmarks of whole simulated runs (sim/runner.h), the simulator's user
// job, each with its baseline measured in the same run (thread CPU time):
//   BM_ConversationReplay8x8  the full public conversation trace (12,031
//                             requests) replayed P/D over 8 domains x 8 hosts
//                             in enforce mode with domain-aware placement;
//                             reports the seconds per replay (target < 2 s on
//                             this machine) and, as the baseline, the same
//                             replay with dynamic replication off
//                             (ratio_enforce_vs_off).
//   BM_TraceLengthScaling     the same topology replaying the first tenth of
//                             the trace (1x) and the whole trace (10x):
//                             ratio_time_10x_vs_1x (target <= 11), the events
//                             of each, so growth per event shows too, and the
//                             peak heap each run adds (heap bytes in use,
//                             sampled every 65,536 events and at the end,
//                             minus those in use before it):
//                             peak_heap_mib_1x/10x, ratio_memory_10x_vs_1x.
// Every replay runs the real core (master, dynamic replication, store
// workers, tiering) through the driver, exactly as `heatsink-sim run` does,
// without writing output files.
#include <malloc.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "benchmark/benchmark.h"
#include "core/base/check.h"
#include "sim/malloc_tuning.h"
#include "sim/runner.h"
#include "sim/scenario.h"

namespace heatsink::sim {
namespace {

// This thread's CPU time (the machine is shared).
double ThreadSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// The shipped traces: next to this source (when __FILE__ is absolute), or
// under the working directory or one of its parents (run from the
// repository root or a build directory).
std::string TraceDir() {
  namespace fs = std::filesystem;
  std::vector<fs::path> candidates = {fs::path(__FILE__).parent_path().parent_path()};
  for (fs::path dir = fs::current_path(); !dir.empty(); dir = dir.parent_path()) {
    candidates.push_back(dir);
    if (dir == dir.parent_path()) break;
  }
  for (const fs::path& root : candidates) {
    const fs::path traces = root / "scenarios" / "traces";
    if (fs::exists(traces / "conversation_trace.jsonl")) return traces.string();
  }
  HS_CHECK_MSG(false,
               "scenarios/traces/conversation_trace.jsonl not found; run from the "
               "repository or a build directory inside it");
  return "";
}

// 8 domains x 8 hosts; every host has a 16 GiB segment, one client, one
// prefill and one decode instance. Prefill by prefix hash, decode round robin
// over all decode instances, so shared prefix blocks are read across domains.
std::string ReplayScenario(int64_t request_limit) {
  std::string domains;
  for (int d = 0; d < 8; ++d) {
    absl::StrAppend(&domains, d == 0 ? "" : ",", R"({"name": "d)", d, R"(", "hosts": [{"name": "h)",
                    d,
                    R"(", "count": 8, "segments": [{"name": "mem", "capacity_bytes": "16GiB"}],
        "clients": [{"name": "c"}], "prefill_instances": [{"name": "p"}],
        "decode_instances": [{"name": "d"}]}]})");
  }
  return absl::StrCat(R"({
  "name": "replay-8x8",
  "duration_s": 400,
  "time_step_ms": 5000,
  "topology": {"domains": [)",
                      domains, R"(],
    "default_trunk": {"bandwidth_gbps": 200, "latency_us": 100, "oversubscription": 2}},
  "knobs": {"dynamic_replication_domain_aware": true, "replica_selection_policy": "spread"},
  "workloads": [{"type": "trace", "name": "conversation",
    "path": "conversation_trace.jsonl", "replay_speed": 10, "request_limit": )",
                      request_limit, R"(,
    "prefill": {"policy": "hash"}, "decode": {"policy": "round_robin"},
    "kv_bytes_per_token": 2048}]
})");
}

struct Replay {
  double seconds = 0;
  int64_t events = 0;
  int64_t reads = 0;
  int64_t copies = 0;
  double peak_heap_bytes = 0;  // above the heap in use before the run
};

// Heap bytes in use now: the allocator's arena bytes in use plus its
// mmap-ed blocks (glibc).
double HeapBytesInUse() {
  const struct mallinfo2 info = mallinfo2();
  return static_cast<double>(info.uordblks) + static_cast<double>(info.hblkhd);
}

Replay RunReplay(int64_t request_limit, const std::string& mode) {
  absl::StatusOr<Scenario> scenario = ParseScenario(
      ReplayScenario(request_limit), "replay-8x8.json", TraceDir(), SimulatorLoadOptions());
  HS_CHECK_OK(scenario.status());
  RunOptions options;
  options.overrides.push_back({"dynamic_replication_mode", mode});
  options.keep_scenario_echo = false;
  const double heap_before = HeapBytesInUse();
  double heap_peak = heap_before;
  options.progress = [&heap_peak](TimeNs, TimeNs, uint64_t) {
    heap_peak = std::max(heap_peak, HeapBytesInUse());
  };
  const double start = ThreadSeconds();
  absl::StatusOr<RunResult> run = RunScenario(*scenario, options);
  const double seconds = ThreadSeconds() - start;
  HS_CHECK_OK(run.status());
  return Replay{seconds, run->events_simulated, run->reads, run->copies_completed,
                heap_peak - heap_before};
}

constexpr int64_t kFullTrace = 12'031;

void BM_ConversationReplay8x8(benchmark::State& state) {
  Replay enforce;
  Replay off;
  for (auto _ : state) {
    off = RunReplay(kFullTrace, "off");
    enforce = RunReplay(kFullTrace, "enforce");
    state.SetIterationTime(enforce.seconds);
  }
  state.counters["enforce_seconds"] = enforce.seconds;
  state.counters["off_seconds"] = off.seconds;
  state.counters["ratio_enforce_vs_off"] = enforce.seconds / off.seconds;
  state.counters["events"] = static_cast<double>(enforce.events);
  state.counters["events_per_s"] = static_cast<double>(enforce.events) / enforce.seconds;
  state.counters["reads"] = static_cast<double>(enforce.reads);
  state.counters["copies"] = static_cast<double>(enforce.copies);
}
BENCHMARK(BM_ConversationReplay8x8)->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);

void BM_TraceLengthScaling(benchmark::State& state) {
  Replay one;
  Replay ten;
  for (auto _ : state) {
    one = RunReplay(kFullTrace / 10, "enforce");
    ten = RunReplay(kFullTrace, "enforce");
    state.SetIterationTime(ten.seconds);
  }
  state.counters["seconds_1x"] = one.seconds;
  state.counters["seconds_10x"] = ten.seconds;
  state.counters["ratio_time_10x_vs_1x"] = ten.seconds / one.seconds;
  state.counters["events_1x"] = static_cast<double>(one.events);
  state.counters["events_10x"] = static_cast<double>(ten.events);
  state.counters["ratio_events_10x_vs_1x"] =
      static_cast<double>(ten.events) / static_cast<double>(one.events);
  constexpr double kMiB = 1024.0 * 1024.0;
  state.counters["peak_heap_mib_1x"] = one.peak_heap_bytes / kMiB;
  state.counters["peak_heap_mib_10x"] = ten.peak_heap_bytes / kMiB;
  state.counters["ratio_memory_10x_vs_1x"] = ten.peak_heap_bytes / one.peak_heap_bytes;
}
BENCHMARK(BM_TraceLengthScaling)->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);

}  // namespace
}  // namespace heatsink::sim

int main(int argc, char** argv) {
  // The allocator settings heatsink-sim runs with (sim/malloc_tuning.h).
  heatsink::sim::ReexecWithMallocTunables(argv);
  // The simulator is single-threaded: Abseil's lock-order bookkeeping (on in
  // Debian's build) only costs time here.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
