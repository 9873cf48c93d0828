// Covers the determinism contract: driven from one thread, the same calls give
// the same results, offsets, versions and observer calls whatever the shard
// count. Shard membership comes from a hash that Abseil salts per process, so
// varying the shard count here exercises what varies between processes: any
// decision or observer order that followed hash order would differ.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/core/master/master_test_util.h"

namespace heatsink {
namespace {

using testing::MasterHarness;
using testing::Name;

class TextLog final : public ReplicaRemovalObserver, public ReadObserver {
 public:
  void OnReplicaRemoved(const ReplicaRemoval& r) override {
    lines.push_back(absl::StrCat("rm t=", r.t_ns, " ", r.name.tenant, "/", r.name.key, " seg=",
                                 r.replica.segment_id.value, " off=", r.replica.offset, " ",
                                 RemovalCauseName(r.cause), r.object_deleted ? " deleted" : ""));
  }
  void OnKeyRead(const ReadObservation& r) override {
    lines.push_back(absl::StrCat("read ", r.tenant, "/", r.key, " v=", r.version, " n=",
                                 r.readable_replicas.size()));
  }
  std::vector<std::string> lines;
};

std::vector<std::string> RunScenario(int64_t shards) {
  MasterKnobs knobs = testing::TestKnobs();
  knobs.metadata_shards = shards;
  knobs.eviction_ratio = 0.3;
  knobs.discarded_puts_max = 3;
  MasterHarness h(knobs, /*seed=*/99);
  TextLog log;
  h.master().SetReplicaRemovalObserver(&log);
  h.master().SetReadObserver(&log);
  auto note = [&](const std::string& what, const absl::Status& s) {
    log.lines.push_back(absl::StrCat(what, " -> ", s.ToString()));
  };
  for (uint64_t id = 1; id <= 4; ++id) note("store", h.AddStore(id, 2'000));
  for (int i = 0; i < 30; ++i) {
    const std::string key = absl::StrCat("key", (i * 7) % 23);
    absl::StatusOr<Version> v = h.Put(key, 100 + 10 * (i % 5), 1 + i % 2, {}, i % 3 ? "" : "t");
    note(absl::StrCat("put ", key), v.status());
    if (v.ok()) log.lines.push_back(absl::StrCat("version ", *v));
    if (i % 4 == 0) note("get", h.Get(key, i % 3 ? "" : "t").status());
    h.Advance(MsToNs(50));
  }
  for (int i = 0; i < 6; ++i) note("stuck", h.Start(absl::StrCat("stuck", i), 50).status());
  for (int i = 0; i < 5; ++i) {
    absl::StatusOr<CopyTaskResponse> t = h.master().CreateCopyTask(
        CopyTaskRequest{Name(absl::StrCat("key", i)), SegmentId(1 + i % 4), {}});
    note("copy", t.status());
  }
  h.StopHeartbeats(2);
  h.Advance(SecToNs(8));  // client 2 dies, puts are discarded, tasks time out
  note("unmount", h.master().UnmountSegment(ClientId(3), SegmentId(3)));
  note("evict", absl::OkStatus());
  h.master().Evict(1'000);
  for (int i = 0; i < 23; ++i) {
    absl::StatusOr<ObjectView> v = h.master().GetObjectView(Name(absl::StrCat("key", i)));
    if (!v.ok()) continue;
    std::string line = absl::StrCat("obj key", i, " v=", v->version);
    for (const ReplicaDescriptor& d : v->replicas) {
      absl::StrAppend(&line, " ", d.segment_id.value, "@", d.offset);
    }
    log.lines.push_back(line);
  }
  EXPECT_TRUE(h.master().CheckInvariants().ok());
  return log.lines;
}

TEST(MasterDeterminism, SameCallsSameOutcomesForAnyShardCount) {
  const std::vector<std::string> one = RunScenario(1);
  ASSERT_GT(one.size(), 50u);
  // The scenario must reach the paths whose order matters.
  auto contains = [&](const std::string& needle) {
    for (const std::string& l : one) {
      if (l.find(needle) != std::string::npos) return true;
    }
    return false;
  };
  EXPECT_TRUE(contains("eviction"));
  EXPECT_TRUE(contains("client_dead"));
  EXPECT_TRUE(contains("put_discarded"));
  EXPECT_TRUE(contains(" unmount"));
  for (int64_t shards : {2, 3, 8, 61}) {
    const std::vector<std::string> other = RunScenario(shards);
    ASSERT_EQ(other.size(), one.size()) << shards << " shards";
    for (size_t i = 0; i < one.size(); ++i) {
      ASSERT_EQ(other[i], one[i]) << "line " << i << " with " << shards << " shards";
    }
  }
}

}  // namespace
}  // namespace heatsink
