// The production processes survive a master crash: heatsink-master killed
// with SIGKILL and started again on the same address rebuilds its objects
// from the stores' manifests (docs/runtime.md, "Master restart"). Real
// processes on loopback, as in processes_test.cc.
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

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "runtime/client/heatsink_client.h"
#include "runtime/rpc/grpc_master_client.h"
#include "tests/runtime/rpc/process_test_util.h"
#include "tests/runtime/rpc/processes_fixture.h"

namespace heatsink::runtime {
namespace {

using test::FreePort;
using test::HttpGet;
using test::MetricValue;
using test::Pattern;
using test::Process;
using test::ProcessesTest;
using test::ReadLines;
using test::SpreadReaderOnHostB;
using test::WaitFor;
using test::WriterInDomainA;

// kill -9 of the master and a restart on the same address lose nothing:
// objects of mixed sizes (one and two replicas) and a dynamic replica made
// by hot reads from domain b are all readable again, bytes and versions
// unchanged, once the two stores noticed the new master (heartbeat) and
// reported their manifests; until then reads are UNAVAILABLE, never
// NOT_FOUND. A put in flight at the kill leaves no readable replica and its
// bytes are freed after the release timeout, so every segment's used bytes
// end as before minus that put. A dynamic copy in flight at the kill (its
// source held mid-transfer with SIGSTOP, its target store already told of
// the reserved range) leaves no replica on the target, readable or not, and
// its reserved bytes come back.
//
// HEATSINK_RESTART_OBJECTS=N adds N small objects (64 to 448 bytes, written
// by four threads) before the kill, for the restart figures of
// docs/performance.md; every one of them must be listed again afterwards.
TEST_F(ProcessesTest, MasterKilledAndRestartedLosesNoObject) {
  const char* extra_env = std::getenv("HEATSINK_RESTART_OBJECTS");
  int extra = 0;
  if (extra_env != nullptr) {
    ASSERT_TRUE(absl::SimpleAtoi(extra_env, &extra)) << extra_env;
  }
  store_segment_mib_ = extra > 0 ? "128" : "64";
  const std::string listen = absl::StrCat("127.0.0.1:", FreePort());
  const std::vector<std::string> sets = {
      "dynamic_replication_mode=enforce", "restart_grace_ms=30000", "restart_expected_stores=2",
      "put_start_discard_timeout_sec=5", "put_start_release_timeout_sec=5"};
  std::unique_ptr<Process> master = StartMaster(sets, {}, listen);
  ASSERT_EQ(master_address_, listen);
  std::unique_ptr<Process> store_a = StartStore(1, "host-a", "a", {}, "store_a");
  std::unique_ptr<Process> store_b = StartStore(2, "host-b", "b", {}, "store_b");
  absl::StatusOr<std::unique_ptr<GrpcMasterClient>> rpc =
      GrpcMasterClient::Connect(&clock_, master_address_, RpcOptions{});
  ASSERT_TRUE(rpc.ok());
  SegmentId segment_a, segment_b;
  ASSERT_TRUE(WaitFor([&] {
    absl::StatusOr<std::vector<SegmentView>> segments = (*rpc)->ListSegments();
    if (!segments.ok() || segments->size() != 2) return false;
    for (const SegmentView& v : *segments) {
      (v.location.owner == ClientId(1) ? segment_a : segment_b) = v.location.id;
    }
    return true;
  }));
  // The two stores reported (empty manifests): the first start's recovery
  // is over and puts are taken.
  ASSERT_TRUE(WaitFor([&] {
    return MetricValue(HttpGet(metrics_address_, "/metrics"), "heatsink_master_recovering") == 0;
  }));

  HeatsinkClient writer(rpc->get(), WriterInDomainA(segment_a));
  HeatsinkClientOptions twice = WriterInDomainA(segment_a);
  twice.client_id = ClientId(101);
  twice.replica_num = 2;
  HeatsinkClient writer2(rpc->get(), twice);
  struct Written {
    std::string key;
    uint64_t hash;
    Version version;
  };
  std::vector<Written> written;
  for (int i = 0; i < 24; ++i) {
    const std::string key = absl::StrCat("obj-", i);
    const size_t size = (i % 4 == 0) ? (1 << 20) + 7 * i : 1000 + 997 * i;
    const std::string bytes = Pattern(100 + i, size);
    ASSERT_TRUE((i % 3 == 0 ? writer2 : writer).Put(key, bytes).ok()) << key;
    absl::StatusOr<GetReplicaListResponse> list = writer.Lookup(key);
    ASSERT_TRUE(list.ok()) << list.status();
    written.push_back({key, StableHash(bytes), list->version});
  }
  // A dynamic replica of obj-1 in domain b, made by hot reads from b.
  HeatsinkClient reader(rpc->get(), SpreadReaderOnHostB());
  ASSERT_TRUE(WaitFor([&] {
    absl::StatusOr<GetResult> got = reader.Get("obj-1");
    return got.ok() && got->segment == segment_b;
  }));
  // The figures' small objects, written by four threads.
  {
    std::vector<std::thread> threads;
    std::atomic<int> failed{0};
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        HeatsinkClientOptions options;
        options.client_id = ClientId(300 + t);
        HeatsinkClient small(rpc->get(), options);
        for (int i = t; i < extra; i += 4) {
          if (!small.Put(absl::StrCat("small-", i), std::string(64 + (i % 7) * 64, 's')).ok()) {
            ++failed;
          }
        }
      });
    }
    for (std::thread& th : threads) th.join();
    ASSERT_EQ(failed.load(), 0);
  }
  // A put in flight at the kill: started, never ended.
  PutStartRequest in_flight;
  in_flight.name = ObjectName{"", "in-flight"};
  in_flight.size_bytes = 4096;
  in_flight.preferred_segments = {segment_a};
  std::optional<absl::StatusOr<PutStartResponse>> started;
  (*rpc)->PutStart(ClientId(100), in_flight,
                   [&](absl::StatusOr<PutStartResponse> r) { started = std::move(r); });
  ASSERT_TRUE(WaitFor([&] { return started.has_value(); }));
  ASSERT_TRUE(started->ok()) << started->status();
  const auto changes_pending = [&] {
    return MetricValue(HttpGet(metrics_address_, "/metrics"),
                       "heatsink_master_manifest_changes_pending");
  };
  // A dynamic copy in flight at the kill. Store b stops, so the copy of a
  // 24 MiB object that hot reads from domain b start blocks in its source,
  // store a, once the socket buffers are full; then store a stops mid-copy
  // and store b resumes and learns of the range reserved for the copy.
  const std::string big_key = "copy-in-flight";
  const std::string big = Pattern(999, 24 << 20);
  ASSERT_TRUE(writer.Put(big_key, big).ok());
  absl::StatusOr<GetReplicaListResponse> big_list = writer.Lookup(big_key);
  ASSERT_TRUE(big_list.ok()) << big_list.status();
  const Version big_version = big_list->version;
  ASSERT_TRUE(WaitFor([&] { return changes_pending() == 0; }));
  store_b->Signal(SIGSTOP);
  ASSERT_TRUE(WaitFor([&] {
    (void)reader.Lookup(big_key);  // reads from domain b make it hot
    return MetricValue(HttpGet(metrics_address_, "/metrics"), "heatsink_master_reserved_bytes") >=
           static_cast<int64_t>(big.size());
  })) << "no copy of the hot object started";
  store_a->Signal(SIGSTOP);
  store_b->Signal(SIGCONT);
  // Every change reached the stores' manifests (fetch interval 20 ms),
  // store b's reserved range among them.
  ASSERT_TRUE(WaitFor([&] { return changes_pending() == 0; }));
  const std::string before = HttpGet(metrics_address_, "/metrics");
  ASSERT_GE(MetricValue(before, "heatsink_master_reserved_bytes"),
            static_cast<int64_t>(big.size()))
      << "the copy is no longer in flight";
  const int64_t objects_before = MetricValue(before, "heatsink_master_objects");
  // 24, the put in flight, the copy's object, the small ones
  EXPECT_EQ(objects_before, 26 + extra);
  absl::StatusOr<std::vector<SegmentView>> used_before = (*rpc)->ListSegments();
  ASSERT_TRUE(used_before.ok());

  master->Signal(SIGKILL);
  EXPECT_EQ(master->Wait(), 128 + SIGKILL);
  const absl::Time killed = absl::Now();
  master = StartMaster(sets, {}, listen);
  ASSERT_EQ(master_address_, listen);
  // The copy's source resumes: its transfer ends against a master that
  // never granted its lease.
  store_a->Signal(SIGCONT);
  int unavailable = 0;
  absl::Time first_read;
  ASSERT_TRUE(WaitFor([&] {
    absl::StatusOr<GetResult> got = reader.Get("obj-0");
    if (got.ok()) {
      first_read = absl::Now();
      return true;
    }
    EXPECT_FALSE(absl::IsNotFound(got.status())) << got.status();
    unavailable += absl::IsUnavailable(got.status()) ? 1 : 0;
    return false;
  }));
  std::printf("first successful read %.0f ms after the kill (%d UNAVAILABLE answers before)\n",
              absl::ToDoubleMilliseconds(first_read - killed), unavailable);
  // Keys of a store that has not reported yet are UNAVAILABLE a little
  // longer: a client retries them.
  for (const Written& w : written) {
    absl::StatusOr<GetResult> got;
    ASSERT_TRUE(WaitFor([&] {
      got = reader.Get(w.key);
      EXPECT_FALSE(absl::IsNotFound(got.status())) << w.key << ": " << got.status();
      return !absl::IsUnavailable(got.status());
    }));
    ASSERT_TRUE(got.ok()) << w.key << ": " << got.status();
    EXPECT_EQ(StableHash(got->bytes), w.hash) << w.key;
    EXPECT_EQ(got->version, w.version) << w.key;
  }
  ASSERT_TRUE(WaitFor([&] {
    return MetricValue(HttpGet(metrics_address_, "/metrics"), "heatsink_master_recovering") == 0;
  }));
  std::printf("both stores reported %.0f ms after the kill\n",
              absl::ToDoubleMilliseconds(absl::Now() - killed));
  absl::StatusOr<GetReplicaListResponse> hot = writer.Lookup("obj-1");
  ASSERT_TRUE(hot.ok());
  bool dynamic_in_b = false;
  for (const ReplicaDescriptor& r : hot->replicas) {
    dynamic_in_b |= r.dynamic && r.segment_id == segment_b;
  }
  EXPECT_TRUE(dynamic_in_b) << "the dynamic replica did not come back";
  EXPECT_TRUE(absl::IsNotFound(writer.Lookup("in-flight").status()));
  // The copy in flight left nothing on store b: its object is whole on
  // store a only, at its version, with its bytes.
  absl::StatusOr<GetResult> big_got;
  ASSERT_TRUE(WaitFor([&] {
    big_got = writer.Get(big_key);
    return !absl::IsUnavailable(big_got.status());
  }));
  ASSERT_TRUE(big_got.ok()) << big_got.status();
  EXPECT_EQ(big_got->version, big_version);
  EXPECT_EQ(StableHash(big_got->bytes), StableHash(big));
  big_list = writer.Lookup(big_key);
  ASSERT_TRUE(big_list.ok()) << big_list.status();
  ASSERT_EQ(big_list->replicas.size(), 1u);
  EXPECT_EQ(big_list->replicas[0].segment_id, segment_a);
  EXPECT_FALSE(big_list->replicas[0].dynamic);
  int small_listed = 0;
  for (int i = 0; i < extra; ++i) {
    small_listed += writer.Lookup(absl::StrCat("small-", i)).ok() ? 1 : 0;
  }
  EXPECT_EQ(small_listed, extra);
  std::printf("objects recovered %lld of %lld (%d small ones listed again)\n",
              static_cast<long long>(
                  MetricValue(HttpGet(metrics_address_, "/metrics"), "heatsink_master_objects")),
              static_cast<long long>(objects_before - 1), small_listed);
  const std::string after = HttpGet(metrics_address_, "/metrics");
  EXPECT_EQ(MetricValue(after, "heatsink_master_objects"), objects_before - 1);
  // The put in flight and the copy in flight.
  EXPECT_EQ(MetricValue(after, "heatsink_master_manifest_entries_discarded_total"), 2);
  EXPECT_EQ(MetricValue(after, "heatsink_master_manifest_entries_rejected_total"), 0);
  // Nothing leaked: once the in-flight put's and copy's bytes are released,
  // every segment uses what it used before, minus that put, and nothing is
  // reserved.
  ASSERT_TRUE(WaitFor([&] {
    absl::StatusOr<std::vector<SegmentView>> now = (*rpc)->ListSegments();
    if (!now.ok() || now->size() != used_before->size()) return false;
    for (size_t i = 0; i < now->size(); ++i) {
      const uint64_t expected =
          (*used_before)[i].used_bytes - ((*now)[i].location.id == segment_a ? 4096 : 0);
      if ((*now)[i].used_bytes != expected || (*now)[i].reserved_bytes != 0) return false;
      if ((*now)[i].free_bytes != (*now)[i].capacity_bytes - expected) return false;
    }
    return true;
  }, absl::Seconds(15)));
  // The version counter restarted above every reported version.
  ASSERT_TRUE(writer.Put("after-restart", "x").ok());
  EXPECT_GT(writer.Lookup("after-restart")->version, (*started)->version);

  rpc->reset();
  for (Process* p : {store_a.get(), store_b.get(), master.get()}) {
    p->Signal(SIGTERM);
    EXPECT_EQ(p->Wait(), 0);
  }
}

}  // namespace
}  // namespace heatsink::runtime
