// Failover with etcd, with the real processes on loopback: one etcd member,
// three heatsink-master processes campaigning (--etcd, lease TTL 3 s), two
// heatsink-store processes and the clients following the leader key
// (--master etcd://...). Covers kill -9 of the leader under heatsink-load,
// SIGSTOP of the leader (it never answers a write again and exits with 3),
// SIGSTOP of etcd (the leader steps down; a leader is elected again after
// SIGCONT), and malformed etcd addresses (exit 2 naming the flag).
//
// The one timed bound (docs/runtime.md, "Failover with etcd"): a standby
// leads within the lease TTL plus the documented margin of 1 s after the
// leader dies or loses etcd; the tests allow kSlack more for a loaded 2-core
// machine. HEATSINK_FAILOVER_OBJECTS=N adds N small objects before the kill
// (the figures of docs/performance.md); each must be readable afterwards.
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "runtime/client/heatsink_client.h"
#include "runtime/etcd/etcd_client.h"
#include "runtime/rpc/grpc_master_client.h"
#include "tests/runtime/rpc/etcd_process.h"
#include "tests/runtime/rpc/process_test_util.h"
#include "tests/runtime/rpc/processes_fixture.h"

namespace heatsink::runtime {
namespace {

using test::EtcdProcess;
using test::FreePort;
using test::HttpGet;
using test::MetricValue;
using test::Pattern;
using test::Process;
using test::ReadLines;
using test::WaitFor;

constexpr int64_t kLeaseTtlSec = 3;
// docs/runtime.md: a standby leads within TTL + 1 s of the leader's last
// acknowledged keep-alive (etcd expires leases every 500 ms, standbys poll
// every 200 ms); a leader cut off from etcd steps down within TTL.
constexpr absl::Duration kFailoverMargin = absl::Seconds(1);
// Room for a loaded 2-core CI machine.
constexpr absl::Duration kSlack = absl::Seconds(6);
constexpr char kPrefix[] = "/failover";

RpcOptions CallsOf(int64_t call_timeout_ms) {
  RpcOptions rpc;
  rpc.call_timeout_ms = call_timeout_ms;
  return rpc;
}

struct Written {
  std::string key;
  uint64_t hash;
  Version version;
};

class EtcdFailoverTest : public test::ProcessesTest {
 protected:
  // Every store lived through the failover (a crashed store would lose
  // its objects).
  void ExpectStoresAlive() {
    for (size_t i = 0; i < stores_.size(); ++i) {
      EXPECT_TRUE(stores_[i]->Alive()) << "store " << i << " exited with " << stores_[i]->Wait();
    }
  }

  void TearDown() override {
    // A failure prints the tail of every process's log (CI keeps nothing else).
    if (HasFailure()) {
      for (const auto& entry : test::fs::directory_iterator(dir_)) {
        if (entry.path().extension() != ".log") continue;
        const std::vector<std::string> lines = ReadLines(entry.path());
        std::printf("---- %s (last 25 of %zu lines)\n", entry.path().filename().c_str(),
                    lines.size());
        for (size_t i = lines.size() > 25 ? lines.size() - 25 : 0; i < lines.size(); ++i) {
          std::printf("%s\n", lines[i].c_str());
        }
      }
    }
    load_.reset();
    stores_.clear();
    masters_.clear();
    etcd_.reset();
    test::ProcessesTest::TearDown();
  }

  // etcd, three masters (one leads), two stores following the leader.
  void StartCluster() {
    etcd_ = std::make_unique<EtcdProcess>(dir_);
    ASSERT_TRUE(etcd_->ready()) << "etcd did not answer (" << etcd_->last_error() << "); see "
                               << (dir_ / "etcd.log");
    for (int i = 0; i < 3; ++i) StartCandidate(i);
    ASSERT_TRUE(WaitFor([&] { return Leader() >= 0; })) << "no master leads";
    master_address_ = etcd_->Url(kPrefix);
    stores_.push_back(StartStore(1, "host-a", "a", {}, "store_a"));
    stores_.push_back(StartStore(2, "host-b", "b", {}, "store_b"));
    absl::StatusOr<std::unique_ptr<GrpcMasterClient>> rpc =
        GrpcMasterClient::Connect(&clock_, master_address_, CallsOf(2000));
    ASSERT_TRUE(rpc.ok()) << rpc.status();
    rpc_ = *std::move(rpc);
    // Both stores registered and reported: the first leader's recovery is
    // over, puts are taken.
    ASSERT_TRUE(WaitFor([&] {
      return MetricValue(HttpGet(MetricsOf(Leader()), "/metrics"), "heatsink_master_recovering") ==
                 0 &&
             MetricValue(HttpGet(MetricsOf(Leader()), "/metrics"), "heatsink_master_segments") == 2;
    }));
  }

  void StartCandidate(int i) {
    if (ports_.size() <= static_cast<size_t>(i)) ports_.push_back(FreePort());
    const std::string address = absl::StrCat("127.0.0.1:", ports_[i]);
    const test::fs::path address_file = dir_ / absl::StrCat("master", i, ".address");
    test::fs::remove(address_file);
    std::vector<std::string> argv = {std::string(HEATSINK_TOOLS_DIR) + "/heatsink-master",
                                     "--listen", address, "--advertise", address,
                                     "--etcd", etcd_->Url(kPrefix),
                                     "--etcd-lease-ttl-sec", absl::StrCat(kLeaseTtlSec),
                                     "--metrics-listen", "127.0.0.1:0",
                                     "--address-file", address_file.string(),
                                     "--set", "restart_expected_stores=2",
                                     "--set", "sweep_interval_ms=100"};
    auto process = std::make_unique<Process>(
        argv, std::vector<std::string>{},
        dir_ / absl::StrCat("master", i, "-", ++starts_, ".log"));
    if (masters_.size() <= static_cast<size_t>(i)) masters_.resize(i + 1);
    masters_[i] = std::move(process);
  }

  // The index of the master the leader key names, or -1.
  int Leader() {
    absl::StatusOr<std::optional<EtcdKeyValue>> kv = etcd_->client().Get(LeaderKey(kPrefix));
    if (!kv.ok() || !kv->has_value()) return -1;
    for (size_t i = 0; i < ports_.size(); ++i) {
      if ((*kv)->value == absl::StrCat("127.0.0.1:", ports_[i])) return static_cast<int>(i);
    }
    return -1;
  }
  // The metrics address of master `i` once it serves ("" before).
  std::string MetricsOf(int i) {
    if (i < 0) return "";
    const std::vector<std::string> lines =
        ReadLines(dir_ / absl::StrCat("master", i, ".address"));
    return lines.size() == 2 ? lines[1] : "";
  }

  // Puts 24 objects of mixed sizes (some with two replicas) and `extra`
  // small ones, and waits until every change reached the stores' manifests.
  std::vector<Written> PutObjects(int extra) {
    std::vector<Written> written;
    HeatsinkClientOptions once;
    once.client_id = ClientId(100);
    HeatsinkClientOptions twice = once;
    twice.client_id = ClientId(101);
    twice.replica_num = 2;
    HeatsinkClient writer(rpc_.get(), once);
    HeatsinkClient writer2(rpc_.get(), twice);
    for (int i = 0; i < 24; ++i) {
      const std::string key = absl::StrCat("obj-", i);
      const std::string bytes = Pattern(100 + i, (i % 4 == 0) ? (256 << 10) + 7 * i : 1000 + 997 * i);
      const absl::Status put = (i % 3 == 0 ? writer2 : writer).Put(key, bytes);
      EXPECT_TRUE(put.ok()) << key << ": " << put;
      absl::StatusOr<GetReplicaListResponse> list = writer.Lookup(key);
      EXPECT_TRUE(list.ok()) << list.status();
      if (list.ok()) written.push_back({key, StableHash(bytes), list->version});
    }
    std::vector<std::thread> threads;
    std::atomic<int> failed{0};
    std::vector<std::vector<Written>> small(4);
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        HeatsinkClientOptions options;
        options.client_id = ClientId(300 + t);
        HeatsinkClient client(rpc_.get(), options);
        for (int i = t; i < extra; i += 4) {
          const std::string key = absl::StrCat("small-", i);
          const std::string bytes(64 + (i % 7) * 64, static_cast<char>('a' + i % 26));
          if (!client.Put(key, bytes).ok()) {
            ++failed;
            continue;
          }
          small[t].push_back({key, StableHash(bytes), Version()});
        }
      });
    }
    for (std::thread& th : threads) th.join();
    EXPECT_EQ(failed.load(), 0);
    for (std::vector<Written>& part : small) {
      for (Written& w : part) {
        absl::StatusOr<GetReplicaListResponse> list = writer.Lookup(w.key);
        EXPECT_TRUE(list.ok()) << w.key << ": " << list.status();
        if (list.ok()) w.version = list->version;
        written.push_back(std::move(w));
      }
    }
    EXPECT_TRUE(WaitFor([&] {
      return MetricValue(HttpGet(MetricsOf(Leader()), "/metrics"),
                         "heatsink_master_manifest_changes_pending") == 0;
    }));
    return written;
  }

  // Every object readable through the leader key with its bytes and
  // version, read by four threads; UNAVAILABLE is retried (a store not
  // reported yet), NOT_FOUND never happens. Returns how many were read back.
  int ReadAll(const std::vector<Written>& written) {
    std::atomic<int> read{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        HeatsinkClientOptions options;
        options.client_id = ClientId(400 + t);
        HeatsinkClient reader(rpc_.get(), options);
        for (size_t i = t; i < written.size(); i += 4) {
          const Written& w = written[i];
          absl::StatusOr<GetResult> got;
          EXPECT_TRUE(WaitFor([&] {
            got = reader.Get(w.key);
            EXPECT_FALSE(absl::IsNotFound(got.status())) << w.key << ": " << got.status();
            return !absl::IsUnavailable(got.status());
          }, absl::Seconds(20)));
          if (!got.ok()) {
            ADD_FAILURE() << w.key << ": " << got.status();
            continue;
          }
          EXPECT_EQ(StableHash(got->bytes), w.hash) << w.key;
          EXPECT_EQ(got->version, w.version) << w.key;
          ++read;
        }
      });
    }
    for (std::thread& th : threads) th.join();
    return read.load();
  }

  // The first successful read of `key` after `since`; prints it.
  absl::Time FirstRead(HeatsinkClient& reader, const std::string& key, absl::Time since,
                       const char* what) {
    int refused = 0;
    absl::Time first = absl::InfiniteFuture();
    EXPECT_TRUE(WaitFor([&] {
      absl::StatusOr<GetResult> got = reader.Get(key);
      if (got.ok()) {
        first = absl::Now();
        return true;
      }
      EXPECT_FALSE(absl::IsNotFound(got.status())) << got.status();
      ++refused;
      return false;
    }));
    std::printf("first successful read %.0f ms after %s (%d refused reads before)\n",
                absl::ToDoubleMilliseconds(first - since), what, refused);
    return first;
  }

  std::unique_ptr<EtcdProcess> etcd_;
  std::vector<int> ports_;
  std::vector<std::unique_ptr<Process>> masters_;
  std::vector<std::unique_ptr<Process>> stores_;
  std::unique_ptr<Process> load_;
  std::unique_ptr<GrpcMasterClient> rpc_;
  int starts_ = 0;
};

HeatsinkClientOptions Reader() {
  HeatsinkClientOptions options;
  options.client_id = ClientId(200);
  return options;
}

TEST_F(EtcdFailoverTest, KillNineOfTheLeaderLosesNoObjectAndReadsResume) {
  HS_REQUIRE_ETCD();
  int extra = 0;
  if (const char* env = std::getenv("HEATSINK_FAILOVER_OBJECTS"); env != nullptr) {
    ASSERT_TRUE(absl::SimpleAtoi(env, &extra)) << env;
  }
  store_segment_mib_ = extra > 0 ? "128" : "16";
  ASSERT_NO_FATAL_FAILURE(StartCluster());
  const std::vector<Written> written = PutObjects(extra);
  ASSERT_EQ(written.size(), 24u + static_cast<size_t>(extra));
  const int leader = Leader();
  ASSERT_GE(leader, 0);

  // heatsink-load reads its hot keys through the leader key throughout.
  load_ = std::make_unique<Process>(
      std::vector<std::string>{std::string(HEATSINK_TOOLS_DIR) + "/heatsink-load", "--master",
                               master_address_, "--mode", "storm", "--keys", "4", "--threads",
                               "2", "--value-bytes", "4096", "--duration-ms", "14000",
                               "--client-id-base", "5000000"},
      std::vector<std::string>{}, dir_ / "load.log");
  HeatsinkClient reader(rpc_.get(), Reader());
  ASSERT_TRUE(WaitFor([&] { return reader.Get("hot-3").ok(); })) << "heatsink-load wrote nothing";
  ASSERT_TRUE(WaitFor([&] {
    return MetricValue(HttpGet(MetricsOf(leader), "/metrics"),
                       "heatsink_master_manifest_changes_pending") == 0;
  }));
  const std::string before = HttpGet(MetricsOf(leader), "/metrics");
  const int64_t objects_before = MetricValue(before, "heatsink_master_objects");
  EXPECT_EQ(objects_before, 24 + extra + 4);  // and heatsink-load's hot keys
  const int64_t epoch_before = MetricValue(before, "heatsink_master_leader_epoch");
  EXPECT_GT(epoch_before, 0);

  masters_[leader]->Signal(SIGKILL);
  const absl::Time killed = absl::Now();
  EXPECT_EQ(masters_[leader]->Wait(), 128 + SIGKILL);
  int next = -1;
  ASSERT_TRUE(WaitFor([&] {
    next = Leader();
    return next >= 0 && next != leader;
  }, absl::Seconds(kLeaseTtlSec) + kFailoverMargin + kSlack));
  const absl::Duration took = absl::Now() - killed;
  std::printf("master %d leads %.0f ms after kill -9 of master %d (TTL %lld s)\n", next,
              absl::ToDoubleMilliseconds(took), leader, static_cast<long long>(kLeaseTtlSec));
  FirstRead(reader, "obj-0", killed, "kill -9 of the leader");
  ASSERT_TRUE(WaitFor([&] {
    return MetricValue(HttpGet(MetricsOf(next), "/metrics"), "heatsink_master_recovering") == 0;
  }));
  std::printf("both stores reported %.0f ms after the kill\n",
              absl::ToDoubleMilliseconds(absl::Now() - killed));
  EXPECT_EQ(ReadAll(written), static_cast<int>(written.size()));
  const std::string after = HttpGet(MetricsOf(next), "/metrics");
  std::printf("objects recovered %lld of %lld\n",
              static_cast<long long>(MetricValue(after, "heatsink_master_objects")),
              static_cast<long long>(objects_before));
  EXPECT_EQ(MetricValue(after, "heatsink_master_objects"), objects_before);
  EXPECT_GT(MetricValue(after, "heatsink_master_leader_epoch"), epoch_before);
  // Puts go on with the new leader.
  HeatsinkClientOptions writer_options;
  writer_options.client_id = ClientId(100);
  HeatsinkClient writer(rpc_.get(), writer_options);
  EXPECT_TRUE(writer.Put("after-failover", "x").ok());

  // heatsink-load read on through the failover.
  EXPECT_EQ(load_->Wait(), 0);
  bool reads = false;
  for (const std::string& line : ReadLines(dir_ / "load.log")) {
    std::printf("heatsink-load: %s\n", line.c_str());
    int64_t ops = 0;
    if (line.rfind("ops=", 0) == 0 && absl::SimpleAtoi(line.substr(4, line.find(' ') - 4), &ops)) {
      reads = ops > 0;
    }
  }
  EXPECT_TRUE(reads);
  EXPECT_TRUE(LogSays("load.log", "unavailable_until_read_ms"))
      << "heatsink-load saw no failover";
  ExpectStoresAlive();
}

TEST_F(EtcdFailoverTest, AStoppedLeaderNeverAnswersAWriteAfterLosingItsLease) {
  HS_REQUIRE_ETCD();
  ASSERT_NO_FATAL_FAILURE(StartCluster());
  const std::vector<Written> written = PutObjects(0);
  const int leader = Leader();
  ASSERT_GE(leader, 0);
  masters_[leader]->Signal(SIGSTOP);
  const absl::Time stopped = absl::Now();
  int next = -1;
  ASSERT_TRUE(WaitFor([&] {
    next = Leader();
    return next >= 0 && next != leader;
  }, absl::Seconds(kLeaseTtlSec) + kFailoverMargin + kSlack));
  std::printf("master %d leads %.0f ms after SIGSTOP of master %d\n", next,
              absl::ToDoubleMilliseconds(absl::Now() - stopped), leader);
  HeatsinkClient reader(rpc_.get(), Reader());
  FirstRead(reader, "obj-1", stopped, "SIGSTOP of the leader");

  // The old leader runs again: a write sent to it directly, at once, is
  // refused (not_leader, or no answer at all once it exited).
  absl::StatusOr<std::unique_ptr<GrpcMasterClient>> direct =
      GrpcMasterClient::Connect(&clock_, absl::StrCat("127.0.0.1:", ports_[leader]), CallsOf(3000));
  ASSERT_TRUE(direct.ok());
  PutStartRequest put;
  put.name = ObjectName{"", "written-to-the-old-leader"};
  put.size_bytes = 100;
  std::optional<absl::StatusOr<PutStartResponse>> answer;
  masters_[leader]->Signal(SIGCONT);
  (*direct)->PutStart(ClientId(100), put,
                      [&](absl::StatusOr<PutStartResponse> r) { answer = std::move(r); });
  ASSERT_TRUE(WaitFor([&] { return answer.has_value(); }));
  EXPECT_FALSE(answer->ok()) << "the deposed leader answered a write";
  EXPECT_TRUE(absl::IsUnavailable(answer->status())) << answer->status();
  std::printf("the old leader's answer to PutStart: %s\n", answer->status().ToString().c_str());
  // It steps down: exit code 3.
  EXPECT_EQ(masters_[leader]->Wait(), 3);
  EXPECT_TRUE(LogSays(absl::StrCat("master", leader, "-", leader + 1, ".log"), "stepping down"));
  // The write never landed anywhere. A key the new leader has not seen is
  // "master_recovering" (UNAVAILABLE) until every store reported, so ask
  // once recovery is over.
  ASSERT_TRUE(WaitFor([&] {
    return MetricValue(HttpGet(MetricsOf(next), "/metrics"), "heatsink_master_recovering") == 0;
  }));
  HeatsinkClient checker(rpc_.get(), Reader());
  const absl::Status lookup = checker.Lookup("written-to-the-old-leader").status();
  EXPECT_TRUE(absl::IsNotFound(lookup)) << lookup;
  EXPECT_EQ(ReadAll(written), static_cast<int>(written.size()));
  ExpectStoresAlive();
}

TEST_F(EtcdFailoverTest, AStoppedEtcdMakesTheLeaderStepDownAndALeaderReturnsAfter) {
  HS_REQUIRE_ETCD();
  ASSERT_NO_FATAL_FAILURE(StartCluster());
  const std::vector<Written> written = PutObjects(0);
  const int leader = Leader();
  ASSERT_GE(leader, 0);
  etcd_->Signal(SIGSTOP);
  const absl::Time stopped = absl::Now();
  // Keep-alives time out; the leader stops serving and exits within the TTL.
  int code = -1;
  ASSERT_TRUE(WaitFor([&] {
    code = masters_[leader]->Wait();
    return code >= 0;
  }, absl::Seconds(kLeaseTtlSec) + kFailoverMargin + kSlack));
  const absl::Duration took = absl::Now() - stopped;
  std::printf("master %d stepped down %.0f ms after SIGSTOP of etcd (TTL %lld s)\n", leader,
              absl::ToDoubleMilliseconds(took), static_cast<long long>(kLeaseTtlSec));
  EXPECT_EQ(code, 3);
  EXPECT_LT(took, absl::Seconds(kLeaseTtlSec) + kFailoverMargin + kSlack);
  // A supervisor would start it again; here it comes back as a standby.
  StartCandidate(leader);
  etcd_->Signal(SIGCONT);
  const absl::Time resumed = absl::Now();
  ASSERT_TRUE(WaitFor([&] { return Leader() >= 0 && !MetricsOf(Leader()).empty(); },
                      absl::Seconds(kLeaseTtlSec) * 2 + kFailoverMargin + kSlack));
  std::printf("master %d leads %.0f ms after SIGCONT of etcd\n", Leader(),
              absl::ToDoubleMilliseconds(absl::Now() - resumed));
  HeatsinkClient reader(rpc_.get(), Reader());
  FirstRead(reader, "obj-2", resumed, "SIGCONT of etcd");
  EXPECT_EQ(ReadAll(written), static_cast<int>(written.size()));
  ExpectStoresAlive();
}

// Malformed etcd addresses: each binary exits 2 naming the flag, before
// contacting anything.
TEST_F(EtcdFailoverTest, MalformedEtcdAddressesExitTwoNamingTheFlag) {
  struct Case {
    std::vector<std::string> argv;
    std::string flag;
  };
  const std::string tools = HEATSINK_TOOLS_DIR;
  const std::vector<Case> cases = {
      {{tools + "/heatsink-master", "--etcd", "etcd://:2379/p", "--advertise", "127.0.0.1:1"},
       "--etcd"},
      {{tools + "/heatsink-master", "--etcd", "127.0.0.1:0"}, "--etcd"},
      {{tools + "/heatsink-master", "--etcd", "127.0.0.1:2379"}, "--advertise"},
      {{tools + "/heatsink-master", "--etcd", "127.0.0.1:2379", "--advertise", "nowhere"},
       "--advertise"},
      {{tools + "/heatsink-master", "--advertise", "127.0.0.1:1"}, "--advertise"},
      {{tools + "/heatsink-master", "--etcd", "127.0.0.1:2379", "--advertise", "127.0.0.1:1",
        "--etcd-lease-ttl-sec", "0"},
       "--etcd-lease-ttl-sec"},
      {{tools + "/heatsink-store", "--master", "etcd://127.0.0.1:2379,/p"}, "--master"},
      {{tools + "/heatsink-store", "--master", "etcd:/127.0.0.1:2379"}, "--master"},
      {{tools + "/heatsink-load", "--master", "etcd://h:x/p", "--duration-ms", "1"}, "--master"},
      {{tools + "/heatsink-load", "--master", "etcd://h:1/p/", "--duration-ms", "1"}, "--master"},
  };
  int i = 0;
  for (const Case& c : cases) {
    const std::string log = absl::StrCat("bad", i++, ".log");
    Process p(c.argv, {}, dir_ / log);
    EXPECT_EQ(p.Wait(), 2) << c.argv[0] << " " << c.argv[2];
    EXPECT_TRUE(LogSays(log, c.flag + ":")) << c.argv[0] << " " << c.argv[2] << " did not name "
                                             << c.flag;
  }
}

}  // namespace
}  // namespace heatsink::runtime
