// Cost per flow event of the simulator's network model as the number of
// concurrent flows grows, each size reported as a ratio against 10^3
// concurrent flows measured in the same run (thread CPU time):
//   BM_NetworkScale/flows:N/trunk:0  N flows leaving one host over its one NIC
//                                    for 8 hosts of its domain.
//   BM_NetworkScale/flows:N/trunk:1  N flows from 4 hosts of domain A to 4
//                                    hosts of domain B over one trunk.
// Each completion starts the next flow (random size, 64 KiB .. 1 MiB), so N
// flows stay alive. A flow event is a start, an end of setup or a completion
// (three per flow); the figure is CPU time per event once N flows are moving.
// Route classes keep it near flat (target: ratio <= 2 at 10^6).
#include <time.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "core/base/check.h"
#include "core/env/rng.h"
#include "sim/engine.h"
#include "sim/network.h"

namespace heatsink::sim {
namespace {

// This thread's CPU time: the machine is shared.
double ThreadSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

constexpr DurationNs kTrunkLatencyNs = 10'000;

// Domains A and B of 9 hosts each, one 25 GB/s NIC per host, one A-B trunk.
NetworkTopology TwoDomainsOfNine() {
  NetworkTopology t;
  for (const char* d : {"A", "B"}) {
    DomainSpec domain{d, {}};
    for (int h = 0; h < 9; ++h) {
      HostSpec host;
      host.name = absl::StrCat(d, h);
      host.nics.push_back(NicSpec{25'000'000'000, 25'000'000'000});
      domain.hosts.push_back(std::move(host));
    }
    t.domains.push_back(std::move(domain));
  }
  t.trunks.push_back(TrunkSpec{"A", "B", 100'000'000'000, kTrunkLatencyNs, 100});
  return t;
}

struct ScaleResult {
  double seconds = 0;
  uint64_t flow_events = 0;
};

// Fills `concurrent` flows, then measures `measured` completions (each
// starting its successor).
ScaleResult Scale(int64_t concurrent, bool trunk, int64_t measured) {
  Engine engine(EngineKnobs{.events_pending_max = 8'000'000});
  Rng rng(23);
  NetworkKnobs knobs;
  knobs.flows_max = 4'000'000;
  auto network = Network::Create(&engine, &rng, TwoDomainsOfNine(), knobs);
  HS_CHECK_OK(network.status());
  Network& net = **network;
  Rng workload(29);
  int64_t completed = 0;
  std::function<void()> start_one = [&] {
    FlowSpec spec;
    if (trunk) {
      spec.src_host = static_cast<int>(workload.Uniform(4));     // A0..A3
      spec.dst_host = 9 + static_cast<int>(workload.Uniform(4));  // B0..B3
    } else {
      spec.src_host = 0;                                          // A0
      spec.dst_host = 1 + static_cast<int>(workload.Uniform(8));  // A1..A8
    }
    spec.bytes = 65'536 + static_cast<int64_t>(workload.Uniform(1 << 20));
    auto id = net.StartFlow(spec, [&](absl::Status s) {
      HS_CHECK_OK(s);
      ++completed;
      start_one();
    });
    HS_CHECK_OK(id.status());
  };
  for (int64_t i = 0; i < concurrent; ++i) start_one();
  // Every flow is set up and rated (at the end of its setup: overhead plus
  // the trunk's latency) before the clock starts.
  const DurationNs setup_ns = knobs.transfer_overhead_ns + (trunk ? kTrunkLatencyNs : 0);
  HS_CHECK_OK(engine.RunUntil(setup_ns).status());
  HS_CHECK(completed == 0 && net.flows_alive() == concurrent);
  engine.SetStopPredicate([&] { return completed >= measured; });
  const double start = ThreadSeconds();
  HS_CHECK_OK(engine.Run().status());
  ScaleResult result;
  result.seconds = ThreadSeconds() - start;
  result.flow_events = 3 * static_cast<uint64_t>(completed);
  return result;
}

void BM_NetworkScale(benchmark::State& state) {
  const int64_t concurrent = state.range(0);
  const bool trunk = state.range(1) != 0;
  const int64_t measured = 200'000;
  ScaleResult baseline_total, total;
  for (auto _ : state) {
    const ScaleResult baseline = Scale(1'000, trunk, measured);
    const ScaleResult r = Scale(concurrent, trunk, measured);
    baseline_total.seconds += baseline.seconds;
    baseline_total.flow_events += baseline.flow_events;
    total.seconds += r.seconds;
    total.flow_events += r.flow_events;
  }
  const double ns = total.seconds * 1e9 / static_cast<double>(total.flow_events);
  const double baseline_ns =
      baseline_total.seconds * 1e9 / static_cast<double>(baseline_total.flow_events);
  state.counters["ns_per_flow_event"] = ns;
  state.counters["ns_per_flow_event_at_1e3"] = baseline_ns;
  state.counters["ratio_vs_1e3"] = ns / baseline_ns;
  state.SetLabel(trunk ? "two-domain trunk" : "one NIC");
}
BENCHMARK(BM_NetworkScale)
    ->ArgsProduct({{1'000, 10'000, 100'000, 1'000'000}, {0, 1}})
    ->ArgNames({"flows", "trunk"})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace
}  // namespace heatsink::sim

BENCHMARK_MAIN();
