// The read-path cost of dynamic replication: GetReplicaList through
// ReplicatedMasters that hold the same 100k objects and differ only in
// dynamic_replication_mode (off, observe, enforce), on the same seeded key
// order, in the same run, with 1 and 2 reader threads.
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
// REPLICA_COPY tasks. Background work runs outside the timed batches, on
// two threads of its own kind: a drain thread drains every master's read
// buffer every 0.5 ms (DynamicReplication::DrainReads, timed in its own
// thread CPU time: the heat window's work, moved off the read path; in
// production the drain timer and the high-water mark post it to the
// executor, whose threads do not wait behind other background work), and
// thread 0, once per iteration, advances each master's clock by 10 ms and
// runs what is due (drain timers, admission, lease expiry, the sweep; timed
// as "other background").
//
// Counters of BM_GetReplicaListByMode (averaged over threads):
//   off_ns_per_read, observe_ns_per_read, enforce_ns_per_read: foreground
//     CPU per read;
//   observe_vs_off, enforce_vs_off: read throughput relative to mode off
//     (off_ns / column_ns); the target is enforce_vs_off >= 0.95;
//   enforce_drain_ns_per_read: the drains' CPU divided by the reads of all
//     threads; enforce_other_bg_ns_per_read: the rest of the background work;
//     enforce_cpu_ns_per_read, off_cpu_ns_per_read: foreground + drain +
//     other background, per read;
//   enforce_reads_dropped, observe_reads_dropped: reads dropped by a full
//     read buffer since the program started (must stay 0).
//
// BM_ReadLatency times every read of the working-set order on its own with
// the steady clock, off and enforce interleaved batch by batch as above, and
// reports each mode's foreground p50 and p99 in ns (the two clock reads, the
// same in both modes, are included).
#include <time.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
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
// The columns: off, observe, enforce.
constexpr std::array<DynamicReplicationMode, 3> kModes = {DynamicReplicationMode::kOff,
                                                          DynamicReplicationMode::kObserve,
                                                          DynamicReplicationMode::kEnforce};
constexpr size_t kEnforce = 2;

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
      (void)rm->RegisterClient(RegisterClientRequest{ClientId(s), host, ""});
      MountSegmentRequest req{SegmentId(s), absl::StrFormat("seg%d", s),
                              host,         "",
                              capacity,     absl::StrFormat("tcp://10.0.0.%d:12345", s),
                              true,         ""};
      (void)rm->MountSegment(ClientId(s), req);
    }
    for (size_t i = 0; i < kObjects; ++i) {
      PutStartRequest put{ObjectName{"", KeyOf(i)}, kObjectBytes, 1, {}};
      absl::StatusOr<PutStartResponse> s = rm->PutStart(ClientId(100), put);
      if (!s.ok() || !rm->PutEnd(ClientId(100), PutEndRequest{put.name, s->version}).ok()) {
        std::fprintf(stderr, "put failed at %zu\n", i);
        std::abort();
      }
    }
  }
  ManualEnv env;
  std::unique_ptr<ReplicatedMaster> rm;
};

// Reads made and drain CPU spent so far, per master.
struct DrainSnapshot {
  std::array<int64_t, kModes.size()> reads{};
  std::array<int64_t, kModes.size()> drain_ns{};
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
  // Summed over the reader threads (one add per batch) and by the drain
  // thread.
  std::array<std::atomic<int64_t>, kModes.size()> reads{};
  std::array<std::atomic<int64_t>, kModes.size()> drain_ns{};

  DrainSnapshot Snapshot() const {
    DrainSnapshot s;
    for (size_t m = 0; m < kModes.size(); ++m) {
      s.reads[m] = reads[m].load();
      s.drain_ns[m] = drain_ns[m].load();
    }
    return s;
  }
  void StartDrainThread() {
    drainer = std::thread([this]() {
      while (!stop.load()) {
        for (size_t m = 0; m < kModes.size(); ++m) {
          const int64_t t0 = ThreadCpuNs();
          worlds[m]->rm->replication().DrainReads();
          drain_ns[m] += ThreadCpuNs() - t0;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(500));
      }
    });
  }
  std::atomic<bool> stop{false};
  std::thread drainer;
};

// Created by the first benchmark that runs; its drain thread is stopped
// before main returns.
std::atomic<Fixture*> created_fixture{nullptr};

Fixture& GetFixture() {
  static Fixture* const fixture = []() {
    Fixture* f = new Fixture();
    f->StartDrainThread();
    created_fixture = f;
    return f;
  }();
  return *fixture;
}

void StopDrainThread() {
  if (Fixture* f = created_fixture.load(); f != nullptr) {
    f->stop = true;
    f->drainer.join();
  }
}

// Thread 0's share of the background work.
void AdvanceAll(Fixture& f, std::array<int64_t, kModes.size()>& other_ns) {
  for (size_t m = 0; m < kModes.size(); ++m) {
    const int64_t t0 = ThreadCpuNs();
    f.worlds[m]->env.AdvanceBy(MsToNs(10));
    other_ns[m] += ThreadCpuNs() - t0;
  }
}

int64_t ReadsDropped(World& w) {
  return w.rm->SyncMetrics().Value("dynamic_replication_heat_reads_dropped_total");
}

void BM_GetReplicaListByMode(benchmark::State& state) {
  Fixture& f = GetFixture();
  const std::vector<uint32_t>& order = f.orders[static_cast<size_t>(state.range(0))];
  const size_t thread = static_cast<size_t>(state.thread_index());
  size_t pos = (thread * 104'729 * kBatch) % kOrderLength;
  std::array<int64_t, kModes.size()> ns{};
  std::array<int64_t, kModes.size()> other_ns{};
  DrainSnapshot start;
  if (thread == 0) start = f.Snapshot();
  int64_t batches = 0;
  for (auto _ : state) {
    for (size_t k = 0; k < kModes.size(); ++k) {
      const size_t m = (k + static_cast<size_t>(batches)) % kModes.size();
      ReplicatedMaster& master = *f.worlds[m]->rm;
      const int64_t t0 = ThreadCpuNs();
      for (size_t i = 0; i < kBatch; ++i) {
        const uint32_t key = order[(pos + i) % kOrderLength];
        auto r = master.GetReplicaList(f.requests[key]);
        benchmark::DoNotOptimize(r);
      }
      ns[m] += ThreadCpuNs() - t0;
      f.reads[m] += static_cast<int64_t>(kBatch);
    }
    pos = (pos + kBatch) % kOrderLength;
    ++batches;
    if (thread == 0) AdvanceAll(f, other_ns);
  }
  // After the stop barrier every thread's reads are counted; the drain
  // thread is at most 0.5 ms behind.
  std::array<double, kModes.size()> drain_ns_per_read{};
  if (thread == 0) {
    const DrainSnapshot end = f.Snapshot();
    for (size_t m = 0; m < kModes.size(); ++m) {
      const int64_t reads_all = end.reads[m] - start.reads[m];
      if (reads_all > 0) {
        drain_ns_per_read[m] =
            static_cast<double>(end.drain_ns[m] - start.drain_ns[m]) / static_cast<double>(reads_all);
      }
    }
  }
  const double reads = static_cast<double>(batches) * kBatch;
  state.SetItemsProcessed(static_cast<int64_t>(reads) * static_cast<int64_t>(kModes.size()));
  if (reads == 0) return;
  // Every thread runs the same number of iterations, so a figure only
  // thread 0 reports (the background work), divided by its own reads and
  // averaged over the threads, is per read of all threads.
  const auto avg = benchmark::Counter::kAvgThreads;
  auto per_read = [&](double ns_total) { return benchmark::Counter(ns_total / reads, avg); };
  state.counters["off_ns_per_read"] = per_read(static_cast<double>(ns[0]));
  state.counters["observe_ns_per_read"] = per_read(static_cast<double>(ns[1]));
  state.counters["enforce_ns_per_read"] = per_read(static_cast<double>(ns[2]));
  state.counters["observe_vs_off"] =
      benchmark::Counter(static_cast<double>(ns[0]) / static_cast<double>(ns[1]), avg);
  state.counters["enforce_vs_off"] =
      benchmark::Counter(static_cast<double>(ns[0]) / static_cast<double>(ns[2]), avg);
  // The drain figure is already per read of all threads: thread 0 reports
  // it times the thread count, so that the average over threads is it.
  const double threads = static_cast<double>(state.threads());
  auto drain = [&](size_t m) { return benchmark::Counter(drain_ns_per_read[m] * threads, avg); };
  state.counters["enforce_drain_ns_per_read"] = drain(kEnforce);
  state.counters["enforce_other_bg_ns_per_read"] =
      per_read(static_cast<double>(other_ns[kEnforce]));
  state.counters["enforce_cpu_ns_per_read"] = benchmark::Counter(
      (static_cast<double>(ns[kEnforce] + other_ns[kEnforce])) / reads +
          drain_ns_per_read[kEnforce] * threads,
      avg);
  state.counters["off_cpu_ns_per_read"] = benchmark::Counter(
      (static_cast<double>(ns[0] + other_ns[0])) / reads + drain_ns_per_read[0] * threads, avg);
  if (thread == 0) {
    const DynamicReplicationStats s = f.worlds[kEnforce]->rm->replication().Stats();
    state.counters["enforce_leases_granted"] = static_cast<double>(s.leases_granted);
    state.counters["observe_would_propose"] = static_cast<double>(
        f.worlds[1]->rm->SyncMetrics().Value("dynamic_replication_would_propose_total"));
    state.counters["enforce_reads_dropped"] = static_cast<double>(ReadsDropped(*f.worlds[kEnforce]));
    state.counters["observe_reads_dropped"] = static_cast<double>(ReadsDropped(*f.worlds[1]));
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

// Per-read foreground latency of off and enforce on the working-set order,
// batches interleaved as above.
void BM_ReadLatency(benchmark::State& state) {
  Fixture& f = GetFixture();
  constexpr std::array<size_t, 2> kColumns = {0, kEnforce};
  const std::vector<uint32_t>& order = f.orders[1];
  const size_t thread = static_cast<size_t>(state.thread_index());
  size_t pos = (thread * 104'729 * kBatch) % kOrderLength;
  std::array<std::vector<int64_t>, 2> latency_ns;
  for (auto& v : latency_ns) v.reserve(size_t{1} << 22);
  std::array<int64_t, kModes.size()> other_ns{};
  int64_t batches = 0;
  for (auto _ : state) {
    for (size_t k = 0; k < kColumns.size(); ++k) {
      const size_t c = (k + static_cast<size_t>(batches)) % kColumns.size();
      ReplicatedMaster& master = *f.worlds[kColumns[c]]->rm;
      std::vector<int64_t>& out = latency_ns[c];
      for (size_t i = 0; i < kBatch; ++i) {
        const uint32_t key = order[(pos + i) % kOrderLength];
        const auto t0 = std::chrono::steady_clock::now();
        auto r = master.GetReplicaList(f.requests[key]);
        const auto t1 = std::chrono::steady_clock::now();
        benchmark::DoNotOptimize(r);
        if (out.size() < out.capacity()) {
          out.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
        }
      }
    }
    pos = (pos + kBatch) % kOrderLength;
    ++batches;
    if (thread == 0) AdvanceAll(f, other_ns);
  }
  state.SetItemsProcessed(batches * static_cast<int64_t>(kBatch * kColumns.size()));
  const auto avg = benchmark::Counter::kAvgThreads;
  const char* const names[2] = {"off", "enforce"};
  for (size_t c = 0; c < kColumns.size(); ++c) {
    std::vector<int64_t>& v = latency_ns[c];
    if (v.empty()) return;
    std::sort(v.begin(), v.end());
    auto at = [&](double q) {
      return static_cast<double>(v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))]);
    };
    state.counters[absl::StrFormat("%s_p50_ns", names[c])] = benchmark::Counter(at(0.50), avg);
    state.counters[absl::StrFormat("%s_p99_ns", names[c])] = benchmark::Counter(at(0.99), avg);
  }
}
BENCHMARK(BM_ReadLatency)->Threads(1)->Threads(2)->UseRealTime()->MinTime(2.0);

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
  heatsink::StopDrainThread();
  benchmark::Shutdown();
  return 0;
}
