// Covers the production processes end to end, as separate processes on
// loopback with ports chosen at run time: heatsink-master (enforce mode,
// domain-aware, /metrics on) and three heatsink-store processes in two
// domains: "a" (one from --domain, one from HEATSINK_STORE_DOMAIN) and "b"
// (from MOONCAKE_STORE_DOMAIN). The test process writes an object through the
// client library over the stores' TCP endpoints, reads it from domain "b"
// over the stores' gRPC data service until a dynamic replica appears in "b",
// checks every byte read, checks that /metrics shows the admission and copy
// counters, then kills the source store with SIGKILL, restarts it under the
// same client id and sees it re-register and serve a new put. The kill -9
// fault test runs with three stores too, and an observe-mode run counts
// would-propose and creates no replica; two head-pool stores carry the hot
// object's scores with its copy; heatsink-load's Zipf load reads the hot keys
// it wrote last. Every process gets SIGTERM at the end
// and must exit 0. The master's kill -9 and restart is in
// master_restart_process_test.cc; the fixture in processes_fixture.h.
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "runtime/client/heatsink_client.h"
#include "runtime/rpc/grpc_master_client.h"
#include "runtime/rpc/grpc_store_client.h"
#include "runtime/store/store_node.h"
#include "runtime/transport/socket.h"
#include "tests/runtime/rpc/process_test_util.h"
#include "tests/runtime/rpc/processes_fixture.h"

namespace heatsink::runtime {
namespace {

namespace fs = std::filesystem;
using test::Pattern;
using test::ProcessesTest;
using test::SpreadReaderOnHostB;
using test::WriterInDomainA;
using test::HttpGet;
using test::MetricValue;
using test::Process;
using test::ReadLines;
using test::WaitFor;

TEST_F(ProcessesTest, MasterAndStoresReplicateHotDataAndSurviveAStoreRestart) {
  std::unique_ptr<Process> master =
      StartMaster({"dynamic_replication_mode=enforce", "client_live_ttl_sec=2"},
                  {"--decisions", (dir_ / "decisions.jsonl").string()});
  ASSERT_FALSE(master_address_.empty());

  std::unique_ptr<Process> store_a = StartStore(1, "host-a", "a", {}, "store_a");
  std::unique_ptr<Process> store_b =
      StartStore(2, "host-b", "", {"MOONCAKE_STORE_DOMAIN=b"}, "store_b");
  std::unique_ptr<Process> store_c =
      StartStore(3, "host-c", "", {"HEATSINK_STORE_DOMAIN=a"}, "store_c");

  absl::StatusOr<std::unique_ptr<GrpcMasterClient>> rpc =
      GrpcMasterClient::Connect(&clock_, master_address_, RpcOptions{});
  ASSERT_TRUE(rpc.ok());
  ASSERT_TRUE(WaitFor([&] {
    absl::StatusOr<std::vector<SegmentView>> segments = (*rpc)->ListSegments();
    return segments.ok() && segments->size() == 3;
  }));
  absl::StatusOr<std::vector<SegmentView>> segments = (*rpc)->ListSegments();
  ASSERT_TRUE(segments.ok());
  SegmentId segment_a, segment_b, segment_c;
  for (const SegmentView& s : *segments) {
    EXPECT_FALSE(s.location.data_service_endpoint.empty());
    (s.location.owner == ClientId(1)   ? segment_a
     : s.location.owner == ClientId(2) ? segment_b
                                       : segment_c) = s.location.id;
    EXPECT_EQ(s.location.domain, s.location.owner == ClientId(2) ? "b" : "a");
  }
  ASSERT_TRUE(segment_a.valid() && segment_b.valid() && segment_c.valid());

  HeatsinkClient writer(rpc->get(), WriterInDomainA(segment_a));
  const std::string bytes = Pattern(9, (1 << 20) + 5);
  ASSERT_TRUE(writer.Put("hot", bytes).ok());

  const HeatsinkClientOptions reader_options = SpreadReaderOnHostB();
  absl::StatusOr<std::unique_ptr<GrpcObjectDataPath>> grpc_data =
      GrpcObjectDataPath::Create(GrpcDataPathOptions{});
  ASSERT_TRUE(grpc_data.ok());
  HeatsinkClient reader(rpc->get(), grpc_data->get(), reader_options);
  int64_t reads = 0;
  bool local = false;
  ASSERT_TRUE(WaitFor([&] {
    absl::StatusOr<GetResult> got = reader.Get("hot");
    EXPECT_TRUE(got.ok()) << got.status();
    if (!got.ok()) return true;
    ++reads;
    EXPECT_EQ(StableHash(got->bytes), StableHash(bytes));
    local = got->segment == segment_b;
    return local;
  }));
  EXPECT_TRUE(local) << "no read was served from domain b after " << reads << " reads";

  const std::string metrics = HttpGet(metrics_address_, "/metrics");
  EXPECT_GE(MetricValue(metrics, "heatsink_dynamic_replication_admissions_accepted_total"), 1)
      << metrics;
  EXPECT_GE(MetricValue(metrics, "heatsink_dynamic_replication_copy_tasks_completed_total"), 1);
  EXPECT_GE(MetricValue(metrics, "heatsink_dynamic_replication_replicas"), 1);
  EXPECT_GE(MetricValue(metrics, "heatsink_rpc_get_replica_list_calls_total"), reads);
  EXPECT_GE(ReadLines(dir_ / "decisions.jsonl").size(), 1u);
  // The reads came over store b's gRPC data service.
  const std::vector<std::string> b_lines = ReadLines(dir_ / "store_b.endpoint");
  ASSERT_EQ(b_lines.size(), 3u);
  absl::StatusOr<v1::StatResponse> b_stat = (*grpc_data)->Stat(b_lines[2]);
  ASSERT_TRUE(b_stat.ok()) << b_stat.status();
  EXPECT_GE(b_stat->reads_completed(), 1u);

  // SIGKILL the source store: the master reaps it (client_live_ttl_sec) and
  // its segment; the replica in "b" keeps the object readable.
  store_a->Signal(SIGKILL);
  EXPECT_EQ(store_a->Wait(), 128 + SIGKILL);
  ASSERT_TRUE(WaitFor([&] {
    absl::StatusOr<std::vector<SegmentView>> s = (*rpc)->ListSegments();
    return s.ok() && s->size() == 2;
  }));
  absl::StatusOr<GetResult> survived = reader.Get("hot");
  ASSERT_TRUE(survived.ok()) << survived.status();
  EXPECT_EQ(survived->segment, segment_b);
  EXPECT_EQ(survived->bytes, bytes);

  // The restarted store registers again under its id and takes new puts.
  store_a = StartStore(1, "host-a", "a", {}, "store_a2");
  ASSERT_TRUE(WaitFor([&] {
    absl::StatusOr<std::vector<SegmentView>> s = (*rpc)->ListSegments();
    return s.ok() && s->size() == 3;
  }));
  const std::string again = Pattern(10, 5000);
  ASSERT_TRUE(writer.Put("after-restart", again).ok());
  absl::StatusOr<GetResult> got = reader.Get("after-restart");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->segment, segment_a);
  EXPECT_EQ(got->bytes, again);

  // SIGTERM: a store unmounts its segments on the way out.
  store_b->Signal(SIGTERM);
  EXPECT_EQ(store_b->Wait(), 0);
  absl::StatusOr<std::vector<SegmentView>> left = (*rpc)->ListSegments();
  ASSERT_TRUE(left.ok());
  ASSERT_EQ(left->size(), 2u);
  EXPECT_EQ((*left)[0].location.id, segment_a);
  EXPECT_EQ((*left)[1].location.id, segment_c);
  rpc->reset();
  store_a->Signal(SIGTERM);
  store_c->Signal(SIGTERM);
  EXPECT_EQ(store_a->Wait(), 0);
  EXPECT_EQ(store_c->Wait(), 0);
  master->Signal(SIGTERM);
  EXPECT_EQ(master->Wait(), 0);
}

}  // namespace

// Two stores started with --data-mover ucx (UCX_TLS=tcp,self and
// UCX_NET_DEVICES=lo come from the test presets): hot reads from domain b
// admit a copy, which store a writes into store b's registered segment with
// UCX RMA puts; the reader then reads b's replica with the right bytes.
// Stores a and b copy over UCX; `store_b_flags` and `store_a_flags` are
// added to their command lines. A hot object written in domain a is
// replicated into b's segment and read there; both stores then stop cleanly.
void test::ProcessesTest::CopyOverUcxAndReadInDomainB(const std::vector<std::string>& store_b_flags,
                                                const std::vector<std::string>& store_a_flags) {
  std::unique_ptr<Process> master = StartMaster({"dynamic_replication_mode=enforce"});
  ASSERT_FALSE(master_address_.empty());
  const std::vector<std::string> ucx = {"--data-mover", "ucx", "--ucx-put-chunk-mib", "1"};
  std::vector<std::string> ucx_a = ucx;
  ucx_a.insert(ucx_a.end(), store_a_flags.begin(), store_a_flags.end());
  std::unique_ptr<Process> store_a = StartStore(1, "host-a", "a", {}, "store_a", ucx_a);
  std::vector<std::string> ucx_b = ucx;
  ucx_b.insert(ucx_b.end(), store_b_flags.begin(), store_b_flags.end());
  std::unique_ptr<Process> store_b = StartStore(2, "host-b", "b", {}, "store_b", ucx_b);
  absl::StatusOr<std::unique_ptr<GrpcMasterClient>> rpc =
      GrpcMasterClient::Connect(&clock_, master_address_, RpcOptions{});
  ASSERT_TRUE(rpc.ok());
  const std::pair<SegmentId, SegmentId> segments = SegmentsOfStores1And2(**rpc);
  const SegmentId segment_a = segments.first;
  const SegmentId segment_b = segments.second;
  HeatsinkClient writer(rpc->get(), WriterInDomainA(segment_a));
  const std::string bytes = Pattern(11, (3 << 20) + 17);
  ASSERT_TRUE(writer.Put("hot", bytes).ok());
  const HeatsinkClientOptions reader_options = SpreadReaderOnHostB();
  HeatsinkClient reader(rpc->get(), reader_options);
  bool local = false;
  ASSERT_TRUE(WaitFor([&] {
    absl::StatusOr<GetResult> got = reader.Get("hot");
    EXPECT_TRUE(got.ok()) << got.status();
    if (!got.ok()) return true;
    EXPECT_EQ(StableHash(got->bytes), StableHash(bytes));
    local = got->segment == segment_b;
    return local;
  }));
  EXPECT_TRUE(local) << "no read was served from domain b";
  rpc->reset();
  store_a->Signal(SIGTERM);
  store_b->Signal(SIGTERM);
  EXPECT_EQ(store_a->Wait(), 0);
  EXPECT_EQ(store_b->Wait(), 0);
  master->Signal(SIGTERM);
  EXPECT_EQ(master->Wait(), 0);
  bool says_ucx = false;
  for (const std::string& line : ReadLines(dir_ / "store_a.log")) {
    if (line.find("copies over ucx") != std::string::npos) says_ucx = true;
  }
  EXPECT_TRUE(says_ucx);
}

namespace {

TEST_F(ProcessesTest, StoresCopyOverUcxWithTheDataMoverFlag) {
  // Store b's segments are mbind'ed to node 0 (every machine has one): RMA
  // puts land in NUMA-bound, registered memory.
  CopyOverUcxAndReadInDomainB({"--segment-node", "0"});
  EXPECT_TRUE(LogSays("store_b.log", "MiB on NUMA node 0"));
}

TEST_F(ProcessesTest, HeadPoolStoreTakesUcxCopiesAndScoresTheirReads) {
  // Store b's segment is the head pool: RMA puts land in its blocks, and the
  // reads it serves of the copy are scored.
  CopyOverUcxAndReadInDomainB({"--memory", "16M"});
  EXPECT_TRUE(LogSays("store_b.log", "head pool, promotion on"));
  EXPECT_FALSE(LogSays("store_b.log", "head pool: reads served 0 "));
  EXPECT_TRUE(LogSays("store_b.log", "local-hit fraction 1.000"));
}

// The score-carrying counters of the last head-pool report in `lines`:
// copies out, copies in, chunks raised (all -1 without a report).
struct CopyScoreCounts {
  long long out = -1, in = -1, raised = -1;
};
CopyScoreCounts ReportedCopyScores(const std::vector<std::string>& lines) {
  CopyScoreCounts counts;
  constexpr std::string_view kLabel = "copies carrying scores out ";
  for (const std::string& line : lines) {
    const size_t at = line.find(kLabel);
    if (line.find("heatsink-store: head pool: reads served") == std::string::npos ||
        at == std::string::npos) {
      continue;
    }
    CopyScoreCounts parsed;
    if (std::sscanf(line.c_str() + at + kLabel.size(), "%lld, in %lld (%lld chunks raised)",
                    &parsed.out, &parsed.in, &parsed.raised) == 3) {
      counts = parsed;
    }
  }
  return counts;
}

TEST_F(ProcessesTest, HeadPoolStoresCarryScoresWithTheirCopies) {
  // Both stores keep scores: the reads store a served of the hot object
  // travel with its dynamic copy, and store b raises the chunks it landed in.
  CopyOverUcxAndReadInDomainB({"--memory", "16M"}, {"--memory", "16M"});
  const std::vector<std::string> a = ReadLines(dir_ / "store_a.log");
  const std::vector<std::string> b = ReadLines(dir_ / "store_b.log");
  EXPECT_GE(ReportedCopyScores(a).out, 1) << absl::StrJoin(a, "\n");
  const CopyScoreCounts in_b = ReportedCopyScores(b);
  EXPECT_GE(in_b.in, 1) << absl::StrJoin(b, "\n");
  // The object is over 3 MiB: at least 12 chunks of 256 KiB.
  EXPECT_GE(in_b.raised, 12) << absl::StrJoin(b, "\n");
}

// heatsink-load --mode zipf against a head-pool store: the keys are written
// coldest first into the segments given, so the first segment holds the cold
// tail and the second the hottest keys, which most reads then hit. A bad
// --zipf-s is refused.
TEST_F(ProcessesTest, ZipfLoadPutsTheHotKeysInTheLastSegmentItWrites) {
  std::unique_ptr<Process> master = StartMaster({});
  ASSERT_FALSE(master_address_.empty());
  const std::string tool = std::string(HEATSINK_TOOLS_DIR) + "/heatsink-load";
  const SegmentId cold = StoreSegmentId(ClientId(1), 0);
  const SegmentId hot = StoreSegmentId(ClientId(1), 1);
  // One Put per key, then BatchPut calls of 16 keys (on a fresh store of the
  // same id, so the same segments): the same placement either way.
  for (const std::string batch : {"1", "16"}) {
    // Two segments of 16 MiB: the 64 coldest keys of 256 KiB fill the first.
    std::unique_ptr<Process> store =
        StartStore(1, "host-a", "a", {}, "pool-" + batch, {"--memory", "32M", "--segments", "2"});
    const std::string log = absl::StrCat("load-", batch, ".log");
    Process load(
        {tool, "--master", master_address_, "--mode", "zipf", "--keys", "88", "--value-bytes",
         "262144", "--zipf-s", "1.2", "--write-segments", absl::StrCat(cold.value, ",", hot.value),
         "--threads", "1", "--duration-ms", "500", "--put-batch", batch},
        {}, dir_ / log);
    EXPECT_EQ(load.Wait(), 0) << log;
    int64_t cold_reads = -1, hot_reads = -1, errors = -1, write_calls = -1;
    for (const std::string& line : ReadLines(dir_ / log)) {
      long long segment = 0, count = 0, keys = 0;
      if (std::sscanf(line.c_str(), "writes keys=%lld calls=%lld", &keys, &count) == 2) {
        EXPECT_EQ(keys, 88) << log;
        write_calls = count;
      }
      if (std::sscanf(line.c_str(), "reads segment=%lld count=%lld", &segment, &count) == 2) {
        (static_cast<uint64_t>(segment) == cold.value ? cold_reads : hot_reads) = count;
      }
      long long ops = 0;
      if (std::sscanf(line.c_str(), "ops=%lld errors=%lld", &ops, &count) == 2) errors = count;
    }
    EXPECT_EQ(errors, 0) << log;
    EXPECT_EQ(write_calls, batch == "1" ? 88 : 6) << log;  // 88 keys in calls of 16
    // Ranks 0-23 (about 85% of the draws) are in the second segment.
    EXPECT_GT(hot_reads, 3 * cold_reads) << log << ": " << cold_reads << " " << hot_reads;
    EXPECT_GT(cold_reads, 0) << log;
    store->Signal(SIGTERM);  // leaves: its segments and their objects go
    EXPECT_EQ(store->Wait(), 0);
  }
  Process bad({tool, "--master", master_address_, "--mode", "zipf", "--zipf-s", "0"}, {},
              dir_ / "bad_zipf.log");
  EXPECT_EQ(bad.Wait(), 2);
  const std::vector<std::string> bad_lines = ReadLines(dir_ / "bad_zipf.log");
  EXPECT_FALSE(bad_lines.empty() || bad_lines[0].find("--zipf-s") == std::string::npos)
      << absl::StrJoin(bad_lines, "\n");
  master->Signal(SIGTERM);
  EXPECT_EQ(master->Wait(), 0);
}

// The source store dies (SIGKILL) in the middle of a dynamic copy. The copy
// is held mid-transfer by stopping the target store (SIGSTOP) before the
// source connects, so the kill lands after DynamicReplicaCopyStart reserved
// the target range and before any CopyEnd. Then: no readable partial replica,
// the target's reservation and the pending state clear within the lease TTL
// (no heartbeat timeout involved: client_live_ttl_sec is far longer), and the
// restarted source registers again.
TEST_F(ProcessesTest, SourceKilledMidCopyLeavesNoPartialReplica) {
  std::unique_ptr<Process> master =
      StartMaster({"dynamic_replication_mode=enforce", "dynamic_replication_lease_ttl_ms=1500",
                   "client_live_ttl_sec=60"});
  ASSERT_FALSE(master_address_.empty());
  std::unique_ptr<Process> store_a = StartStore(1, "host-a", "a", {}, "store_a");
  std::unique_ptr<Process> store_b = StartStore(2, "host-b", "b", {}, "store_b");
  // A third store beside the source in domain "a": the copy's target is in
  // the readers' domain "b" only.
  std::unique_ptr<Process> store_c = StartStore(3, "host-c", "a", {}, "store_c");

  absl::StatusOr<std::unique_ptr<GrpcMasterClient>> rpc =
      GrpcMasterClient::Connect(&clock_, master_address_, RpcOptions{});
  ASSERT_TRUE(rpc.ok());
  auto segment_in = [&](const std::string& domain) -> std::optional<SegmentView> {
    absl::StatusOr<std::vector<SegmentView>> segments = (*rpc)->ListSegments();
    if (!segments.ok()) return std::nullopt;
    for (const SegmentView& s : *segments) {
      if (s.location.domain == domain) return s;
    }
    return std::nullopt;
  };
  ASSERT_TRUE(WaitFor([&] {
    absl::StatusOr<std::vector<SegmentView>> segments = (*rpc)->ListSegments();
    return segments.ok() && segments->size() == 3;
  }));
  const SegmentId segment_a = StoreSegmentId(ClientId(1), 0);

  HeatsinkClientOptions writer_options;
  writer_options.client_id = ClientId(100);
  writer_options.preferred_segments = {segment_a};
  HeatsinkClient writer(rpc->get(), writer_options);
  const std::string bytes = Pattern(11, 4 << 20);
  ASSERT_TRUE(writer.Put("hot", bytes).ok());

  store_b->Signal(SIGSTOP);  // the target accepts no byte from now on
  HeatsinkClientOptions reader_options;
  reader_options.client_id = ClientId(200);
  reader_options.domain = "b";
  HeatsinkClient reader(rpc->get(), reader_options);
  const bool reserved = WaitFor([&] {
    absl::StatusOr<GetResult> got = reader.Get("hot");
    EXPECT_TRUE(got.ok() && got->bytes == bytes);
    std::optional<SegmentView> b = segment_in("b");
    return b.has_value() && b->reserved_bytes > 0;
  });
  store_a->Signal(SIGKILL);
  EXPECT_EQ(store_a->Wait(), 128 + SIGKILL);
  store_b->Signal(SIGCONT);
  ASSERT_TRUE(reserved) << "the dynamic copy never started";

  // Within the lease TTL (1.5 s, plus scheduling slack) the pending copy is
  // gone: no reservation, no dynamic replica, the failure counted.
  EXPECT_TRUE(WaitFor([&] {
    std::optional<SegmentView> b = segment_in("b");
    return b.has_value() && b->reserved_bytes == 0;
  }, absl::Seconds(5)));
  const std::string metrics = HttpGet(metrics_address_, "/metrics");
  EXPECT_EQ(MetricValue(metrics, "heatsink_dynamic_replication_replicas"), 0) << metrics;
  EXPECT_GE(MetricValue(metrics, "heatsink_dynamic_replication_copy_tasks_failed_total"), 1);
  EXPECT_EQ(MetricValue(metrics, "heatsink_master_reserved_bytes"), 0);
  // The master still lists only the original replica (its store is not yet
  // reaped), never a partial copy in "b".
  absl::StatusOr<GetReplicaListResponse> listed = reader.Lookup("hot");
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->replicas.size(), 1u);
  EXPECT_EQ(listed->replicas[0].segment_id, segment_a);

  // Restarted under the same id: it registers again (its segment is mounted
  // afresh at the same id) and serves puts.
  store_a = StartStore(1, "host-a", "a", {}, "store_a2");
  const std::string again = Pattern(12, 3000);
  ASSERT_TRUE(WaitFor([&] { return writer.Put("after-restart", again).ok(); }));
  absl::StatusOr<GetResult> got = reader.Get("after-restart");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->bytes, again);

  rpc->reset();
  store_a->Signal(SIGTERM);
  store_b->Signal(SIGTERM);
  store_c->Signal(SIGTERM);
  EXPECT_EQ(store_a->Wait(), 0);
  EXPECT_EQ(store_b->Wait(), 0);
  EXPECT_EQ(store_c->Wait(), 0);
  master->Signal(SIGTERM);
  EXPECT_EQ(master->Wait(), 0);
}

// Observe mode on the same three-store cluster: the hot key is counted as
// would-propose, no copy runs and every read stays on the put's replica.
TEST_F(ProcessesTest, SighupSwitchesTheModeFromTheConfigAndKeepsOtherKnobs) {
  // The rollout without a restart: the mode lives in --config; SIGHUP reads
  // it again. Other knobs apply only at start; a config that does not load
  // changes nothing.
  const fs::path config = dir_ / "master.conf";
  const auto write_config = [&config](const std::string& text) {
    std::ofstream out(config, std::ios::trunc);
    out << text;
  };
  write_config("dynamic_replication_mode = off\n");
  std::unique_ptr<Process> master = StartMaster({}, {"--config", config.string()});
  ASSERT_FALSE(metrics_address_.empty());
  const auto mode = [&] {
    return MetricValue(HttpGet(metrics_address_, "/metrics"), "heatsink_dynamic_replication_mode");
  };
  EXPECT_EQ(mode(), 0);
  write_config("dynamic_replication_mode = enforce\neviction_ratio = 0.25\n");
  master->Signal(SIGHUP);
  EXPECT_TRUE(WaitFor([&] { return mode() == 2; })) << mode();
  EXPECT_TRUE(WaitFor([&] {
    return LogSays("master.log", "reload (SIGHUP): dynamic_replication_mode off -> enforce");
  }));
  EXPECT_TRUE(LogSays("master.log", "eviction_ratio changed, but only"));
  write_config("dynamic_replication_mode = sometimes\n");
  master->Signal(SIGHUP);
  EXPECT_TRUE(WaitFor([&] { return LogSays("master.log", "nothing changed"); }));
  EXPECT_EQ(mode(), 2);
  write_config("dynamic_replication_mode = observe\n");
  master->Signal(SIGHUP);
  EXPECT_TRUE(WaitFor([&] { return mode() == 1; })) << mode();
  // Still serving, and SIGTERM still stops it cleanly.
  absl::StatusOr<std::unique_ptr<GrpcMasterClient>> rpc =
      GrpcMasterClient::Connect(&clock_, master_address_, RpcOptions{});
  ASSERT_TRUE(rpc.ok());
  EXPECT_TRUE((*rpc)->ListSegments().ok());
  master->Signal(SIGTERM);
  EXPECT_TRUE(WaitFor([&] { return LogSays("master.log", "shutting down"); }));
}

TEST_F(ProcessesTest, ObserveModeCountsWouldProposeAndCreatesNoReplica) {
  std::unique_ptr<Process> master = StartMaster({"dynamic_replication_mode=observe"});
  ASSERT_FALSE(master_address_.empty());
  std::unique_ptr<Process> store_a = StartStore(1, "host-a", "a", {}, "store_a");
  std::unique_ptr<Process> store_b = StartStore(2, "host-b", "b", {}, "store_b");
  std::unique_ptr<Process> store_c = StartStore(3, "host-c", "b", {}, "store_c");
  absl::StatusOr<std::unique_ptr<GrpcMasterClient>> rpc =
      GrpcMasterClient::Connect(&clock_, master_address_, RpcOptions{});
  ASSERT_TRUE(rpc.ok());
  ASSERT_TRUE(WaitFor([&] {
    absl::StatusOr<std::vector<SegmentView>> segments = (*rpc)->ListSegments();
    return segments.ok() && segments->size() == 3;
  }));
  const SegmentId segment_a = StoreSegmentId(ClientId(1), 0);
  HeatsinkClientOptions writer_options;
  writer_options.client_id = ClientId(100);
  writer_options.preferred_segments = {segment_a};
  HeatsinkClient writer(rpc->get(), writer_options);
  const std::string bytes = Pattern(13, 200'000);
  ASSERT_TRUE(writer.Put("hot", bytes).ok());

  HeatsinkClientOptions reader_options;
  reader_options.client_id = ClientId(200);
  reader_options.domain = "b";
  absl::StatusOr<std::unique_ptr<GrpcObjectDataPath>> grpc_data =
      GrpcObjectDataPath::Create(GrpcDataPathOptions{});
  ASSERT_TRUE(grpc_data.ok());
  HeatsinkClient reader(rpc->get(), grpc_data->get(), reader_options);
  int64_t reads = 0;
  const bool counted = WaitFor([&] {
    absl::StatusOr<GetResult> got = reader.Get("hot");
    EXPECT_TRUE(got.ok()) << got.status();
    if (got.ok()) {
      ++reads;
      EXPECT_EQ(got->segment, segment_a);
      EXPECT_EQ(got->replica_count, 1u);
      EXPECT_EQ(StableHash(got->bytes), StableHash(bytes));
    }
    return MetricValue(HttpGet(metrics_address_, "/metrics"),
                       "heatsink_dynamic_replication_would_propose_total") >= 1;
  });
  EXPECT_TRUE(counted) << "no would-propose after " << reads << " reads";
  // Keep reading past a few sweeps: still no replica, no copy.
  for (int i = 0; i < 50; ++i) {
    absl::StatusOr<GetResult> got = reader.Get("hot");
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->segment, segment_a);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const std::string metrics = HttpGet(metrics_address_, "/metrics");
  EXPECT_EQ(MetricValue(metrics, "heatsink_dynamic_replication_replicas"), 0) << metrics;
  EXPECT_LE(MetricValue(metrics, "heatsink_dynamic_replication_copy_tasks_completed_total"), 0);
  EXPECT_EQ(MetricValue(metrics, "heatsink_master_reserved_bytes"), 0);

  rpc->reset();
  for (Process* p : {store_a.get(), store_b.get(), store_c.get(), master.get()}) {
    p->Signal(SIGTERM);
    EXPECT_EQ(p->Wait(), 0);
  }
}

TEST_F(ProcessesTest, BadFlagsAreRejectedWithAClearError) {
  Process unknown({std::string(HEATSINK_TOOLS_DIR) + "/heatsink-master", "--set", "no_such=1"}, {},
                  dir_ / "unknown.log");
  EXPECT_EQ(unknown.Wait(), 2);
  std::ifstream log(dir_ / "unknown.log");
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("unknown knob 'no_such'"), std::string::npos) << text;

  Process invalid({std::string(HEATSINK_TOOLS_DIR) + "/heatsink-master", "--set",
                   "eviction_ratio=2"},
                  {}, dir_ / "invalid.log");
  EXPECT_EQ(invalid.Wait(), 2);
  Process store({std::string(HEATSINK_TOOLS_DIR) + "/heatsink-store", "--segments", "0"}, {},
                dir_ / "store.log");
  EXPECT_NE(store.Wait(), 0);
  Process tenant({std::string(HEATSINK_TOOLS_DIR) + "/heatsink-master", "--tenant", "0=t1"}, {},
                 dir_ / "tenant.log");
  EXPECT_EQ(tenant.Wait(), 2);
  std::ifstream tenant_log(dir_ / "tenant.log");
  std::string tenant_text((std::istreambuf_iterator<char>(tenant_log)),
                          std::istreambuf_iterator<char>());
  EXPECT_NE(tenant_text.find("--tenant"), std::string::npos) << tenant_text;
  Process chunk({std::string(HEATSINK_TOOLS_DIR) + "/heatsink-store", "--data-chunk-bytes",
                 "100000000"},
                {}, dir_ / "chunk.log");
  EXPECT_EQ(chunk.Wait(), 2);
  Process mover({std::string(HEATSINK_TOOLS_DIR) + "/heatsink-store", "--data-mover", "rdma"}, {},
                dir_ / "mover.log");
  EXPECT_NE(mover.Wait(), 0);
  std::ifstream mover_log(dir_ / "mover.log");
  std::string mover_text((std::istreambuf_iterator<char>(mover_log)),
                         std::istreambuf_iterator<char>());
  EXPECT_NE(mover_text.find("--data-mover"), std::string::npos) << mover_text;
  // --segment-node: a node the machine does not have, a word that is not a
  // node, and mlock without a node are refused before anything starts.
  const auto store_fails = [&](const std::vector<std::string>& flags, const std::string& log_name,
                               const std::string& expected) {
    std::vector<std::string> argv = {std::string(HEATSINK_TOOLS_DIR) + "/heatsink-store"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    Process p(argv, {}, dir_ / log_name);
    EXPECT_EQ(p.Wait(), 2) << log_name;
    std::ifstream in(dir_ / log_name);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find(expected), std::string::npos) << text;
  };
  store_fails({"--segment-node", "99"}, "node99.log",
              "--segment-node: NUMA node 99 does not exist");
  store_fails({"--segment-node", "near"}, "near.log",
              "--segment-node must be none, auto or a node id");
  store_fails({"--segment-mlock"}, "mlock.log", "need a segment NUMA node");
  store_fails({"--segment-commit-on-write", "--segment-node", "0"}, "commit.log",
              "segments committed on write are plain memory");
  store_fails({"--segment-node", "0", "--segment-mib", "1048576", "--segments", "255"},
              "toobig.log", "which has only");
  // The head pool: regions of whole blocks, no --segment-node beside it,
  // no more foreign regions than foreign nodes, equal segments, and its
  // report flags only with it.
  store_fails({"--memory", "3M"}, "pool_block.log", "multiple of block");
  store_fails({"--memory", "4M", "--segment-node", "0"}, "pool_node.log",
              "give --serving-node instead");
  store_fails({"--memory", "4M", "--sub-memory", "2M,2M,2M,2M,2M,2M,2M,2M"}, "pool_sub.log",
              "--sub-memory describes 8 foreign region(s)");
  store_fails({"--memory", "4M", "--segments", "3"}, "pool_split.log",
              "do not split into 3 segments");
  store_fails({"--memory", "4M", "--segment-mib", "8"}, "pool_mib.log", "leave --segment-mib out");
  store_fails({"--head-pool-report-s", "1"}, "pool_report.log",
              "--head-pool-report-s needs --memory");
  // Readers' tenants need readers proven by certificates.
  store_fails({"--tenant", "3=team-a"}, "store_tenant.log",
              "--tenant needs --data-tls-cert and --data-tls-client-ca");
  store_fails({"--tls-trust-domain", "Bad Domain"}, "store_trust.log",
              "--tls-trust-domain 'Bad Domain' may hold only lowercase letters");
  store_fails({"--no-inherit-copy-score"}, "pool_inherit.log",
              "--no-inherit-copy-score need --memory");
}

// heatsink-store --memory: the segments are the ADR-0019 head pool, and every
// read the store serves raises the scores of the chunks it covers (all local
// here: one region on the serving node). The store reports its reads and
// local-hit fraction while running and at exit.
TEST_F(ProcessesTest, HeadPoolStoreScoresTheReadsItServes) {
  std::unique_ptr<Process> master = StartMaster({});
  ASSERT_FALSE(master_address_.empty());
  std::unique_ptr<Process> store = StartStore(
      1, "host-a", "a", {}, "pool",
      {"--memory", "16M", "--head-pool-report-s", "1", "--metrics-listen", "127.0.0.1:0"});
  absl::StatusOr<std::unique_ptr<GrpcMasterClient>> rpc =
      GrpcMasterClient::Connect(&clock_, master_address_, RpcOptions{});
  ASSERT_TRUE(rpc.ok());
  ASSERT_TRUE(WaitFor([&] {
    absl::StatusOr<std::vector<SegmentView>> segments = (*rpc)->ListSegments();
    return segments.ok() && segments->size() == 1;
  }));
  absl::StatusOr<std::vector<SegmentView>> segments = (*rpc)->ListSegments();
  ASSERT_TRUE(segments.ok());
  EXPECT_EQ((*segments)[0].capacity_bytes, 16u << 20);
  HeatsinkClient writer(rpc->get(), WriterInDomainA((*segments)[0].location.id));
  const std::string bytes = Pattern(5, (600 << 10) + 3);  // covers 3 or 4 chunks
  ASSERT_TRUE(writer.Put("scored", bytes).ok());
  constexpr int kReads = 7;
  for (int i = 0; i < kReads; ++i) {
    absl::StatusOr<GetResult> got = writer.Get("scored");
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(StableHash(got->bytes), StableHash(bytes));
  }
  // The head pool's metrics endpoint: every chunk read local, no exchange
  // (one region), the pause histogram and decay counter exported.
  std::string metrics_port;
  for (const std::string& line : ReadLines(dir_ / "pool.log")) {
    constexpr absl::string_view kPort = "heatsink-store: metrics on port ";
    if (absl::StartsWith(line, kPort)) metrics_port = line.substr(kPort.size());
  }
  ASSERT_FALSE(metrics_port.empty());
  const std::string metrics = HttpGet(absl::StrCat("127.0.0.1:", metrics_port), "/metrics");
  const int64_t local = MetricValue(metrics, R"(heatsink_tiering_reads_total{placement="local"})");
  EXPECT_TRUE(local == 3 * kReads || local == 4 * kReads) << metrics;
  EXPECT_EQ(MetricValue(metrics, R"(heatsink_tiering_reads_total{placement="foreign"})"), 0);
  EXPECT_EQ(MetricValue(metrics, "heatsink_tiering_exchanges_total"), 0);
  EXPECT_EQ(MetricValue(metrics, "heatsink_tiering_exchange_pause_seconds_count"), 0);
  EXPECT_GE(MetricValue(metrics, "heatsink_tiering_decay_passes_total"), 0);
  // Every byte served came from the serving node's memory.
  EXPECT_EQ(MetricValue(metrics, R"(heatsink_store_head_served_bytes_total{memory="local"})"),
            kReads * static_cast<int64_t>(bytes.size()));
  EXPECT_EQ(MetricValue(metrics, R"(heatsink_store_head_served_bytes_total{memory="remote"})"), 0);
  rpc->reset();
  store->Signal(SIGTERM);
  EXPECT_EQ(store->Wait(), 0);
  master->Signal(SIGTERM);
  EXPECT_EQ(master->Wait(), 0);
  const std::vector<std::string> lines = ReadLines(dir_ / "pool.log");
  bool announced = false;
  std::string last_report;
  for (const std::string& line : lines) {
    if (line.find("heatsink-store: head pool, promotion on, 64 chunks of 256 KiB") !=
        std::string::npos) {
      announced = true;
    }
    if (line.find("heatsink-store: head pool: reads served") != std::string::npos) {
      last_report = line;
    }
  }
  EXPECT_TRUE(announced) << absl::StrJoin(lines, "\n");
  // The exit report: every read counted, each on its 3 or 4 chunks, all local.
  EXPECT_NE(last_report.find(absl::StrCat("reads served ", kReads, " ")), std::string::npos)
      << last_report;
  const bool three =
      last_report.find(absl::StrCat("chunk reads local ", 3 * kReads, ",")) != std::string::npos;
  const bool four =
      last_report.find(absl::StrCat("chunk reads local ", 4 * kReads, ",")) != std::string::npos;
  EXPECT_TRUE(three || four) << last_report;
  EXPECT_NE(last_report.find("local-hit fraction 1.000"), std::string::npos) << last_report;
  bool share_reported = false;
  for (const std::string& line : lines) {
    if (absl::StartsWith(line, "heatsink-store: head pool remote share 0.00% of ") &&
        line.find("since start") != std::string::npos &&
        line.find("every page on its block's node") != std::string::npos) {
      share_reported = true;
    }
  }
  EXPECT_TRUE(share_reported) << absl::StrJoin(lines, "\n");
}

}  // namespace
}  // namespace heatsink::runtime
