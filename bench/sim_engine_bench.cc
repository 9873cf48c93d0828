// Benchmarks of the simulator's engine and network model, each reported as a
// ratio against a baseline measured in the same run (thread CPU time):
//   BM_EngineVsHeap     events/s of sim::Engine (callbacks in a slab, lazy
//                       cancellation) vs a bare (time, seq) std::priority_queue
//                       loop doing the same trivial work; target ratio <= 3.
//                       "/hooked" adds the after-event hook and stop predicate
//                       the scenario driver uses. Depths of 10^3, 64,000 and
//                       10^6 waiting events (a bulk put of 10^6 objects has an
//                       event per object waiting at once); the engine's time
//                       includes scheduling the first `depth` events.
//   BM_NetworkChurn     10k flows churning over 64 hosts (8 domains x 8):
//                       wall time per flow event (start, end of setup,
//                       completion) with selective rate updates vs
//                       re-solving every flow on every change.
#include <time.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <queue>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "core/base/check.h"
#include "core/env/rng.h"
#include "sim/engine.h"
#include "sim/network.h"

namespace heatsink::sim {
namespace {

// This thread's CPU time: the machine is shared, and wall time would charge
// other processes' work to whichever loop happened to run beside them.
struct BenchClock {
  using time_point = double;
  static double now() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  }
};

double SecondsSince(double start) { return BenchClock::now() - start; }

// Delays in [1, 1000] ns drawn once, so both loops see the same schedule.
std::vector<DurationNs> MakeDelays() {
  Rng rng(17);
  std::vector<DurationNs> delays(4096);
  for (DurationNs& d : delays) d = 1 + static_cast<DurationNs>(rng.Uniform(1000));
  return delays;
}

// The trivial work of one event: count it and schedule the next one.
uint64_t HeapLoop(int64_t depth, int64_t events, const std::vector<DurationNs>& delays) {
  using Entry = std::pair<TimeNs, uint64_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue;
  uint64_t seq = 0;
  for (int64_t i = 0; i < depth; ++i) queue.emplace(delays[i & 4095], seq++);
  uint64_t count = 0;
  while (static_cast<int64_t>(count) < events) {
    const TimeNs now = queue.top().first;
    queue.pop();
    ++count;
    queue.emplace(now + delays[count & 4095], seq++);
  }
  return count;
}

struct TickState {
  Engine* engine;
  const std::vector<DurationNs>* delays;
  uint64_t count = 0;
};

struct Tick {
  TickState* state;
  void operator()() && {
    ++state->count;
    state->engine->ScheduleAfter((*state->delays)[state->count & 4095], Tick{state});
  }
};

uint64_t EngineLoop(int64_t depth, int64_t events, const std::vector<DurationNs>& delays,
                    bool hooked) {
  Engine engine;
  TickState state{&engine, &delays};
  for (int64_t i = 0; i < depth; ++i) engine.ScheduleAt(delays[i & 4095], Tick{&state});
  if (hooked) {
    uint64_t hook_calls = 0;
    engine.SetAfterEventHook([&hook_calls]() -> absl::Status {
      ++hook_calls;
      return absl::OkStatus();
    });
    engine.SetStopPredicate([&state, events] { return static_cast<int64_t>(state.count) >= events; });
    auto result = engine.Run();
    HS_CHECK(result.ok() && *result == StopReason::kPredicate);
    HS_CHECK(hook_calls == state.count);
  } else {
    while (static_cast<int64_t>(state.count) < events) engine.Step();
  }
  return state.count;
}

void BM_EngineVsHeap(benchmark::State& state) {
  const int64_t depth = state.range(0);
  const bool hooked = state.range(1) != 0;
  const int64_t events = 2'000'000;
  const std::vector<DurationNs> delays = MakeDelays();
  double heap_seconds = 0, engine_seconds = 0;
  for (auto _ : state) {
    auto start = BenchClock::now();
    benchmark::DoNotOptimize(HeapLoop(depth, events, delays));
    heap_seconds += SecondsSince(start);
    start = BenchClock::now();
    benchmark::DoNotOptimize(EngineLoop(depth, events, delays, hooked));
    engine_seconds += SecondsSince(start);
  }
  const double total = static_cast<double>(events) * static_cast<double>(state.iterations());
  state.counters["heap_ns_per_event"] = heap_seconds * 1e9 / total;
  state.counters["engine_ns_per_event"] = engine_seconds * 1e9 / total;
  state.counters["engine_events_per_s"] = total / engine_seconds;
  state.counters["ratio_engine_vs_heap"] = engine_seconds / heap_seconds;
  state.SetLabel(hooked ? "hooked" : "bare");
}
BENCHMARK(BM_EngineVsHeap)
    ->ArgsProduct({{1'000, 64'000, 1'000'000}, {0, 1}})
    ->ArgNames({"depth", "hooked"})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

NetworkTopology SixtyFourHosts() {
  NetworkTopology t;
  for (int d = 0; d < 8; ++d) {
    DomainSpec domain{absl::StrCat("d", d), {}};
    for (int h = 0; h < 8; ++h) {
      HostSpec host;
      host.name = absl::StrCat("d", d, "h", h);
      host.nics.push_back(NicSpec{25'000'000'000, 25'000'000'000});
      domain.hosts.push_back(std::move(host));
    }
    t.domains.push_back(std::move(domain));
  }
  for (int a = 0; a < 8; ++a) {
    for (int b = a + 1; b < 8; ++b) {
      t.trunks.push_back(TrunkSpec{absl::StrCat("d", a), absl::StrCat("d", b), 100'000'000'000,
                                   10'000, 300});
    }
  }
  return t;
}

struct ChurnResult {
  double seconds = 0;
  uint64_t flow_events = 0;
  uint64_t flows_recomputed = 0;
  uint64_t rate_updates = 0;
};

// Keeps `concurrent` flows alive; each completion starts the next flow until
// `flows` have started. `cross_percent` of flows pick a destination in a
// random domain (possibly their own); the rest stay in their domain.
ChurnResult Churn(bool selective, int concurrent, int flows, int cross_percent) {
  Engine engine;
  Rng rng(23);
  NetworkKnobs knobs;
  knobs.selective_update = selective;
  auto network = Network::Create(&engine, &rng, SixtyFourHosts(), knobs);
  HS_CHECK_OK(network.status());
  Network& net = **network;
  Rng workload(29);
  int started = 0;
  std::function<void()> start_one = [&] {
    if (started >= flows) return;
    ++started;
    FlowSpec spec;
    spec.src_host = static_cast<int>(workload.Uniform(64));
    const bool cross = workload.Uniform(100) < static_cast<uint64_t>(cross_percent);
    const int domain = cross ? static_cast<int>(workload.Uniform(8)) : spec.src_host / 8;
    spec.dst_host = domain * 8 + static_cast<int>(workload.Uniform(8));
    spec.bytes = 65'536 + static_cast<int64_t>(workload.Uniform(16 << 20));
    auto id = net.StartFlow(spec, [&](absl::Status s) {
      HS_CHECK_OK(s);
      start_one();
    });
    HS_CHECK_OK(id.status());
  };
  const auto start = BenchClock::now();
  for (int i = 0; i < concurrent; ++i) start_one();
  HS_CHECK_OK(engine.Run().status());
  ChurnResult result;
  result.seconds = SecondsSince(start);
  HS_CHECK(net.Counters().flows_completed == static_cast<uint64_t>(flows));
  result.flow_events = 3 * static_cast<uint64_t>(flows);  // start, setup done, completion
  result.flows_recomputed = net.flows_recomputed_total();
  result.rate_updates = net.rate_updates();
  return result;
}

void BM_NetworkChurn(benchmark::State& state) {
  const int concurrent = static_cast<int>(state.range(0));
  const int cross_percent = static_cast<int>(state.range(1));
  const int flows = 10'000;
  ChurnResult selective_total, full_total;
  for (auto _ : state) {
    const ChurnResult s = Churn(true, concurrent, flows, cross_percent);
    const ChurnResult f = Churn(false, concurrent, flows, cross_percent);
    selective_total.seconds += s.seconds;
    selective_total.flow_events += s.flow_events;
    selective_total.flows_recomputed += s.flows_recomputed;
    selective_total.rate_updates += s.rate_updates;
    full_total.seconds += f.seconds;
    full_total.flow_events += f.flow_events;
    full_total.flows_recomputed += f.flows_recomputed;
    full_total.rate_updates += f.rate_updates;
  }
  state.counters["selective_us_per_flow_event"] =
      selective_total.seconds * 1e6 / static_cast<double>(selective_total.flow_events);
  state.counters["full_us_per_flow_event"] =
      full_total.seconds * 1e6 / static_cast<double>(full_total.flow_events);
  state.counters["ratio_selective_vs_full"] = selective_total.seconds / full_total.seconds;
  state.counters["selective_flows_per_update"] =
      static_cast<double>(selective_total.flows_recomputed) /
      static_cast<double>(selective_total.rate_updates);
  state.counters["full_flows_per_update"] =
      static_cast<double>(full_total.flows_recomputed) / static_cast<double>(full_total.rate_updates);
}
BENCHMARK(BM_NetworkChurn)
    ->ArgsProduct({{64, 512}, {0, 20}})
    ->ArgNames({"concurrent", "cross_pct"})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace
}  // namespace heatsink::sim

BENCHMARK_MAIN();
