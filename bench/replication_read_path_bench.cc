// The read-path cost of dynamic replication: GetReplicaList through
// ReplicatedMasters that hold the same 100k objects and differ only in
// dynamic_replication_mode (off, observe, enforce; and a floor, below), on
// the same seeded key order, in the same run, with 1 and 2 reader threads.
//
// Each iteration reads one batch of keys through each master in turn (the
// order of the masters rotates every iteration) and times each batch in
// thread CPU time. Two key orders (the benchmark's argument):
//   0 "churn": half the reads go to 256 hot keys, half uniformly to all 100k
//     objects, twice the heat window's 50k entries: most reads of a cold key
//     replace a window entry (the window's worst case);
//   1 "working_set": half to the 256 hot keys, half uniformly to 10k keys,
//     which all stay tracked (the steady state).
// In both the hot keys cross the hit count, triggers are queued and
// (observe, enforce) admission runs; enforce grants leases and creates
// REPLICA_COPY tasks. Background work runs outside the
// timed batches: thread 0 advances each master's clock by 10 ms per
// iteration and runs what is due (admission, lease expiry, the sweep).
//
// A fourth master, also with mode off, gives the floor of any exact per-read
// heat count kept apart from the object metadata: after each of its reads the
// benchmark adds 1, with one relaxed atomic add, to a 56-byte per-key entry
// (the heat window's slot size) in an array of its own, found by the key's
// index with no lookup at all. A heat window does at least this much per read
// (it must also check that the entry still holds the key, move to the
// current sub-bucket and test the hit count), so floor_vs_off bounds what
// enforce_vs_off can reach on this machine.
//
// Counters (averaged over threads):
//   off_ns_per_read, observe_ns_per_read, enforce_ns_per_read, floor_ns_per_read
//   observe_vs_off, enforce_vs_off, floor_vs_off: read throughput relative to
//     mode off (off_ns / column_ns); the target is enforce_vs_off >= 0.95.
#include <time.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "benchmark/benchmark.h"
#include "core/env/manual_env.h"
#include "core/env/rng.h"
#include "core/replication/replicated_master.h"

namespace heatsink {
namespace {

constexpr size_t kObjects = 100'000;
constexpr size_t kHotKeys = 256;
constexpr size_t kWorkingSet = 10'000;
constexpr size_t kOrderLength = size_t{1} << 18;
constexpr size_t kBatch = 512;
constexpr uint64_t kObjectBytes = 64;
constexpr uint64_t kSegments = 16;
// The columns: off, observe, enforce, and the floor (mode off plus one atomic
// add per read, see above).
constexpr std::array<DynamicReplicationMode, 4> kModes = {
    DynamicReplicationMode::kOff, DynamicReplicationMode::kObserve,
    DynamicReplicationMode::kEnforce, DynamicReplicationMode::kOff};
constexpr size_t kFloorColumn = 3;

// A per-key entry the size of a heat-window slot.
struct FloorEntry {
  std::atomic<uint32_t> reads{0};
  char rest[52] = {};
};
static_assert(sizeof(FloorEntry) == 56);

int64_t ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::string KeyOf(size_t i) {
  return absl::StrFormat("blk-%016x-%09d", Mix64(i), static_cast<int>(i));
}

struct World {
  explicit World(DynamicReplicationMode mode) : env(1) {
    MasterKnobs knobs = MasterKnobs::Production();
    knobs.client_live_ttl_sec = 1'000'000;
    ReplicationKnobs replication = ReplicationKnobs::Production();
    replication.dynamic_replication_mode = mode;
    absl::StatusOr<std::unique_ptr<ReplicatedMaster>> m =
        ReplicatedMaster::Create(env.env(), knobs, replication, nullptr);
    if (!m.ok()) {
      std::fprintf(stderr, "setup failed: %s\n", m.status().ToString().c_str());
      std::abort();
    }
    rm = *std::move(m);
    const uint64_t capacity = kObjects * kObjectBytes * 4 / kSegments;
    for (uint64_t s = 1; s <= kSegments; ++s) {
      const std::string host = absl::StrFormat("host%d", s);
      (void)rm->master().RegisterClient(RegisterClientRequest{ClientId(s), host, ""});
      MountSegmentRequest req{SegmentId(s), absl::StrFormat("seg%d", s),
                              host,         "",
                              capacity,     absl::StrFormat("tcp://10.0.0.%d:12345", s),
                              true,         ""};
      (void)rm->master().MountSegment(ClientId(s), req);
    }
    for (size_t i = 0; i < kObjects; ++i) {
      PutStartRequest put{ObjectName{"", KeyOf(i)}, kObjectBytes, 1, {}};
      absl::StatusOr<PutStartResponse> s = rm->master().PutStart(ClientId(100), put);
      if (!s.ok() ||
          !rm->master().PutEnd(ClientId(100), PutEndRequest{put.name, s->version}).ok()) {
        std::fprintf(stderr, "put failed at %zu\n", i);
        std::abort();
      }
    }
  }
  ManualEnv env;
  std::unique_ptr<ReplicatedMaster> rm;
};

struct Fixture {
  Fixture() {
    for (DynamicReplicationMode mode : kModes) worlds.push_back(std::make_unique<World>(mode));
    requests.reserve(kObjects);
    for (size_t i = 0; i < kObjects; ++i) {
      requests.push_back(GetReplicaListRequest{ObjectName{"", KeyOf(i)}, ClientId(7), ""});
    }
    for (const size_t cold_keys : {kObjects, kWorkingSet}) {
      Rng rng(42);
      std::vector<uint32_t>& order = orders.emplace_back();
      order.reserve(kOrderLength);
      for (size_t i = 0; i < kOrderLength; ++i) {
        const bool hot = rng.Uniform(2) == 0;
        order.push_back(static_cast<uint32_t>(rng.Uniform(hot ? kHotKeys : cold_keys)));
      }
    }
  }
  std::vector<std::unique_ptr<World>> worlds;
  std::vector<GetReplicaListRequest> requests;
  std::vector<std::vector<uint32_t>> orders;  // churn, working_set
  std::unique_ptr<FloorEntry[]> floor = std::make_unique<FloorEntry[]>(kObjects);
};

Fixture& GetFixture() {
  static Fixture* const fixture = new Fixture();
  return *fixture;
}

void BM_GetReplicaListByMode(benchmark::State& state) {
  Fixture& f = GetFixture();
  const std::vector<uint32_t>& order = f.orders[static_cast<size_t>(state.range(0))];
  const size_t thread = static_cast<size_t>(state.thread_index());
  size_t pos = (thread * 104'729 * kBatch) % kOrderLength;
  std::array<int64_t, kModes.size()> ns{};
  int64_t batches = 0;
  for (auto _ : state) {
    for (size_t k = 0; k < kModes.size(); ++k) {
      const size_t m = (k + static_cast<size_t>(batches)) % kModes.size();
      MasterService& master = f.worlds[m]->rm->master();
      const int64_t t0 = ThreadCpuNs();
      const bool floor = m == kFloorColumn;
      for (size_t i = 0; i < kBatch; ++i) {
        const uint32_t key = order[(pos + i) % kOrderLength];
        auto r = master.GetReplicaList(f.requests[key]);
        benchmark::DoNotOptimize(r);
        if (floor) f.floor[key].reads.fetch_add(1, std::memory_order_relaxed);
      }
      ns[m] += ThreadCpuNs() - t0;
    }
    pos = (pos + kBatch) % kOrderLength;
    ++batches;
    if (thread == 0) {
      for (auto& w : f.worlds) w->env.AdvanceBy(MsToNs(10));
    }
  }
  const double reads = static_cast<double>(batches) * kBatch;
  state.SetItemsProcessed(static_cast<int64_t>(reads) * static_cast<int64_t>(kModes.size()));
  if (reads == 0) return;
  const auto avg = benchmark::Counter::kAvgThreads;
  state.counters["off_ns_per_read"] = benchmark::Counter(ns[0] / reads, avg);
  state.counters["observe_ns_per_read"] = benchmark::Counter(ns[1] / reads, avg);
  state.counters["enforce_ns_per_read"] = benchmark::Counter(ns[2] / reads, avg);
  state.counters["floor_ns_per_read"] = benchmark::Counter(ns[kFloorColumn] / reads, avg);
  state.counters["observe_vs_off"] =
      benchmark::Counter(static_cast<double>(ns[0]) / static_cast<double>(ns[1]), avg);
  state.counters["enforce_vs_off"] =
      benchmark::Counter(static_cast<double>(ns[0]) / static_cast<double>(ns[2]), avg);
  state.counters["floor_vs_off"] =
      benchmark::Counter(static_cast<double>(ns[0]) / static_cast<double>(ns[kFloorColumn]), avg);
  if (thread == 0) {
    const DynamicReplicationStats s = f.worlds[2]->rm->replication().Stats();
    state.counters["enforce_leases_granted"] = static_cast<double>(s.leases_granted);
    state.counters["observe_would_propose"] = static_cast<double>(
        f.worlds[1]->rm->metrics().Value("dynamic_replication_would_propose_total"));
  }
}
BENCHMARK(BM_GetReplicaListByMode)
    ->ArgName("working_set")
    ->Arg(0)
    ->Arg(1)
    ->Threads(1)
    ->Threads(2)
    ->UseRealTime()
    ->MinTime(2.0);

}  // namespace
}  // namespace heatsink

int main(int argc, char** argv) {
  // Debian's Abseil is built with mutex deadlock detection on, which adds a
  // graph lookup to every lock; the production processes turn it off, so the
  // benchmark measures without it too (in every mode alike).
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
