// Foreground first with the real processes (issue 35, docs/runtime.md
// "Foreground first"): heatsink-master (enforce) and two heatsink-store
// processes on loopback, store A in domain a and store B in domain b. The
// test puts large objects and many small ones on A, then runs a steady
// foreground load of small reads straight from A's TCP data endpoint
// (ReadRemote: the store's serving latency, without the master's lookup),
// with no copy (the baseline, before and after the copies), and while A is
// the source of large
// dynamic copies to B (admitted by lookups of the large keys from domain b,
// the path every dynamic copy takes). The read latencies are split by
// whether the master had a copy in flight when the read started (its
// dynamic_replication_cross_domain_copies_in_flight gauge, sampled every few
// milliseconds). It prints both p99s and their ratio and records them as
// test properties; the target is a ratio within 1.2, asserted only with a
// generous bound (5) so a loaded 2-core machine cannot make it flaky.
//
// HEATSINK_FOREGROUND_TEST_STORE_SETS (space-separated name=value) adds
// --set flags to both stores, to compare by hand, e.g.
// "copy_yield_max_ms=0 copy_socket_priority=0 copy_dscp=0 copy_thread_nice=0"
// for unpaced copies; HEATSINK_FOREGROUND_TEST_NICE_B=1 starts store B under
// `nice -n 19` (on one host B's receiving competes with A's readers for the
// same cores, which a real target on another host does not).
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "runtime/client/heatsink_client.h"
#include "runtime/rpc/grpc_master_client.h"
#include "runtime/transport/tcp_data_mover.h"
#include "tests/runtime/rpc/process_test_util.h"
#include "tests/runtime/rpc/processes_fixture.h"

namespace heatsink::runtime {
namespace {

using test::HttpGet;
using test::MetricValue;
using test::Pattern;
using test::Process;
using test::ProcessesTest;
using test::SpreadReaderOnHostB;
using test::WaitFor;
using test::WriterInDomainA;

using Clock = std::chrono::steady_clock;

constexpr int kSmallObjects = 64;
constexpr uint64_t kSmallBytes = 64 << 10;
constexpr int kLargeObjects = 6;
constexpr uint64_t kLargeBytes = 64 << 20;
constexpr int kReaderThreads = 2;

struct Sample {
  Clock::time_point start;
  int64_t latency_ns = 0;
};

// A small object's bytes on store A.
struct SmallObject {
  std::string endpoint;
  SegmentId segment;
  uint64_t offset = 0;
};

int64_t P99(std::vector<int64_t> latencies) {
  if (latencies.empty()) return 0;
  std::sort(latencies.begin(), latencies.end());
  const size_t rank = (latencies.size() * 99 + 99) / 100;  // ceil(0.99 n)
  return latencies[std::min(rank, latencies.size()) - 1];
}

// Intervals during which the master had a cross-domain copy in flight.
class CopyWindows {
 public:
  void Add(Clock::time_point from, Clock::time_point to) {
    std::lock_guard<std::mutex> lock(mu_);
    windows_.emplace_back(from, to);
  }
  bool Contains(Clock::time_point t) const {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [from, to] : windows_) {
      if (t >= from && t <= to) return true;
    }
    return false;
  }
  int64_t total_ms() const {
    std::lock_guard<std::mutex> lock(mu_);
    int64_t ms = 0;
    for (const auto& [from, to] : windows_) {
      ms += std::chrono::duration_cast<std::chrono::milliseconds>(to - from).count();
    }
    return ms;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::pair<Clock::time_point, Clock::time_point>> windows_;
};

std::vector<std::string> StoreSets() {
  std::vector<std::string> args;
  const char* sets = std::getenv("HEATSINK_FOREGROUND_TEST_STORE_SETS");
  if (sets == nullptr) return args;
  for (absl::string_view set : absl::StrSplit(sets, ' ', absl::SkipEmpty())) {
    args.push_back("--set");
    args.push_back(std::string(set));
  }
  return args;
}

TEST_F(ProcessesTest, ForegroundReadsKeepTheirTailWhileTheirStoreIsACopySource) {
  store_segment_mib_ = "512";
  std::unique_ptr<Process> master = StartMaster({"dynamic_replication_mode=enforce"});
  ASSERT_FALSE(master_address_.empty());
  // Each foreground read opens its own connection; a store whose
  // connection threads lag on a loaded machine must not refuse them for
  // connections_max (the limit is not what this test measures).
  std::vector<std::string> sets = {"--set", "connections_max=256"};
  for (std::string& set : StoreSets()) sets.push_back(std::move(set));
  std::vector<std::string> sets_a = sets;
  sets_a.insert(sets_a.end(), {"--metrics-listen", "127.0.0.1:0"});
  std::unique_ptr<Process> store_a = StartStore(1, "host-a", "a", {}, "store_a", sets_a);
  // Store A's metrics address, from its log.
  std::string metrics_a;
  ASSERT_TRUE(WaitFor([&] {
    std::ifstream log(dir_ / "store_a.log");
    std::string line;
    while (std::getline(log, line)) {
      const size_t at = line.find("metrics on port ");
      if (at != std::string::npos) {
        metrics_a = absl::StrCat("127.0.0.1:", line.substr(at + 16));
        return true;
      }
    }
    return false;
  }));
  if (std::getenv("HEATSINK_FOREGROUND_TEST_NICE_B") != nullptr) {
    store_command_prefix_ = {"/usr/bin/nice", "-n", "19"};
  }
  std::unique_ptr<Process> store_b = StartStore(2, "host-b", "b", {}, "store_b", sets);
  store_command_prefix_.clear();
  absl::StatusOr<std::unique_ptr<GrpcMasterClient>> rpc =
      GrpcMasterClient::Connect(&clock_, master_address_, RpcOptions{});
  ASSERT_TRUE(rpc.ok());
  const std::pair<SegmentId, SegmentId> segments = SegmentsOfStores1And2(**rpc);
  const SegmentId segment_a = segments.first;
  const SegmentId segment_b = segments.second;
  ASSERT_TRUE(segment_a.valid() && segment_b.valid());

  // The objects, all on A.
  HeatsinkClient writer(rpc->get(), WriterInDomainA(segment_a));
  std::vector<SmallObject> small;
  for (int i = 0; i < kSmallObjects; ++i) {
    const std::string key = absl::StrCat("small-", i);
    ASSERT_TRUE(writer.Put(key, Pattern(100 + i, kSmallBytes)).ok());
    absl::StatusOr<GetReplicaListResponse> list = writer.Lookup(key);
    ASSERT_TRUE(list.ok() && list->replicas.size() == 1) << list.status();
    const ReplicaDescriptor& replica = list->replicas[0];
    ASSERT_EQ(replica.segment_id, segment_a);
    small.push_back({replica.location->transport_endpoint, replica.segment_id, replica.offset});
  }
  // Their bytes do not matter here (a filled buffer is far cheaper than a
  // drawn pattern in a debug build).
  std::string large(kLargeBytes, '\0');
  for (int i = 0; i < kLargeObjects; ++i) {
    std::fill(large.begin(), large.end(), static_cast<char>('A' + i));
    ASSERT_TRUE(writer.Put(absl::StrCat("large-", i), large).ok());
  }

  // The foreground load: closed-loop small reads from A, on its own threads.
  std::atomic<bool> stop{false};
  std::atomic<int64_t> failed_reads{0};
  std::mutex samples_mu;
  std::vector<Sample> samples;
  std::string first_failure;  // guarded by samples_mu
  const TcpTransportKnobs knobs;
  auto load = [&](int thread) {
    Rng rng(static_cast<uint64_t>(thread) + 1);
    std::vector<Sample> mine;
    while (!stop.load()) {
      const SmallObject& object = small[rng.Next64() % small.size()];
      const Clock::time_point start = Clock::now();
      absl::StatusOr<std::string> bytes =
          ReadRemote(object.endpoint, object.segment, object.offset, kSmallBytes, knobs);
      const Clock::time_point end = Clock::now();
      if (!bytes.ok()) {
        if (failed_reads.fetch_add(1) == 0) {
          std::lock_guard<std::mutex> lock(samples_mu);
          first_failure = bytes.status().ToString();
        }
        continue;
      }
      mine.push_back(
          {start, std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count()});
    }
    std::lock_guard<std::mutex> lock(samples_mu);
    samples.insert(samples.end(), mine.begin(), mine.end());
  };

  // The copy monitor: when the master has a cross-domain copy in flight.
  CopyWindows windows;
  std::atomic<bool> any_copy{false};
  auto monitor = [&] {
    bool in_flight = false;
    Clock::time_point since;
    while (!stop.load()) {
      const Clock::time_point now = Clock::now();
      const int64_t gauge =
          MetricValue(HttpGet(metrics_address_, "/metrics"),
                      "heatsink_dynamic_replication_cross_domain_copies_in_flight");
      if (gauge > 0 && !in_flight) {
        in_flight = true;
        since = now;
        any_copy.store(true);
      } else if (gauge == 0 && in_flight) {
        in_flight = false;
        windows.Add(since, Clock::now());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (in_flight) windows.Add(since, Clock::now());
  };

  const Clock::time_point baseline_start = Clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < kReaderThreads; ++t) threads.emplace_back(load, t);
  threads.emplace_back(monitor);
  std::this_thread::sleep_for(std::chrono::milliseconds(2000));
  const Clock::time_point baseline_end = Clock::now();

  // Heat: lookups of every large key from domain b admit one copy each into
  // B (no byte of them is read).
  HeatsinkClient reader(rpc->get(), SpreadReaderOnHostB());
  for (int round = 0; round < 6; ++round) {
    for (int i = 0; i < kLargeObjects; ++i) {
      ASSERT_TRUE(reader.Lookup(absl::StrCat("large-", i)).ok());
    }
  }
  auto copied = [&] {
    for (int i = 0; i < kLargeObjects; ++i) {
      absl::StatusOr<GetReplicaListResponse> list = writer.Lookup(absl::StrCat("large-", i));
      if (!list.ok() || list->replicas.size() < 2) return false;
    }
    return true;
  };
  const bool all_copied = WaitFor(copied, absl::Seconds(15));
  // More baseline after the copies (the machine's load drifts: a baseline on
  // both sides of the copies is fairer than one before them).
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the gauge's last sample
  const Clock::time_point after_start = Clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const Clock::time_point after_end = Clock::now();
  stop.store(true);
  for (std::thread& thread : threads) thread.join();
  ASSERT_TRUE(all_copied) << "the large objects were not copied to B";
  EXPECT_TRUE(any_copy.load()) << "the monitor never saw a copy in flight";
  EXPECT_EQ(failed_reads.load(), 0) << first_failure;

  std::vector<int64_t> baseline, during;
  for (const Sample& sample : samples) {
    const bool before = sample.start >= baseline_start && sample.start < baseline_end;
    const bool after = sample.start >= after_start && sample.start < after_end;
    if ((before || after) && !windows.Contains(sample.start)) {
      baseline.push_back(sample.latency_ns);
    } else if (windows.Contains(sample.start)) {
      during.push_back(sample.latency_ns);
    }
  }
  ASSERT_GE(baseline.size(), 100u);
  ASSERT_GE(during.size(), 100u) << "too few reads overlapped the copies (" << windows.total_ms()
                                 << " ms of copies)";
  const std::string a_metrics = HttpGet(metrics_a, "/metrics");
  const int64_t yields = MetricValue(a_metrics, "heatsink_store_copy_yields_total");
  const int64_t yields_timed_out =
      MetricValue(a_metrics, "heatsink_store_copy_yields_timed_out_total");
  const int64_t p99_baseline = P99(baseline);
  const int64_t p99_during = P99(during);
  const double ratio = static_cast<double>(p99_during) / static_cast<double>(p99_baseline);
  std::printf(
      "foreground p99: %.1f us without copies (%zu reads), %.1f us while A is a copy source "
      "(%zu reads over %lld ms of copies, %d x %llu MiB), ratio %.2f; store A's copy chunks "
      "waited %lld times, %lld cut short\n",
      p99_baseline / 1e3, baseline.size(), p99_during / 1e3, during.size(),
      static_cast<long long>(windows.total_ms()), kLargeObjects,
      static_cast<unsigned long long>(kLargeBytes >> 20), ratio, static_cast<long long>(yields),
      static_cast<long long>(yields_timed_out));
  RecordProperty("p99_no_copy_ns", std::to_string(p99_baseline));
  RecordProperty("p99_during_copy_ns", std::to_string(p99_during));
  RecordProperty("p99_ratio", absl::StrFormat("%.3f", ratio));
  RecordProperty("copy_window_ms", std::to_string(windows.total_ms()));
  // The target is 1.2; only a generous bound is asserted (shared CI cores).
  EXPECT_LT(ratio, 5.0);

  rpc->reset();
  for (Process* process : {store_a.get(), store_b.get(), master.get()}) {
    process->Signal(SIGTERM);
    EXPECT_EQ(process->Wait(), 0);
  }
}

}  // namespace
}  // namespace heatsink::runtime
