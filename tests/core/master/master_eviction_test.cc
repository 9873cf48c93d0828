// Covers eviction: a posted pass when usage crosses
// eviction_high_watermark_ratio, a synchronous pass when an allocation fails,
// about eviction_ratio of used bytes per pass, near-LRU order by read-lease
// expiry (PutEnd time for unread objects), whole objects, and the objects it
// must keep: read-leased ones, ones still being put, and copy sources.
#include "gtest/gtest.h"
#include "tests/core/master/master_test_util.h"

namespace heatsink {
namespace {

using testing::MasterHarness;
using testing::Name;
using testing::RemovalLog;

MasterKnobs EvictionKnobs() {
  MasterKnobs k = testing::TestKnobs();
  k.eviction_high_watermark_ratio = 0.9;
  k.eviction_ratio = 0.25;
  k.sweep_interval_ms = 3'600'000;  // passes here come from puts, not the sweep
  k.client_live_ttl_sec = 36'000;
  return k;
}

// Ten 100-byte objects k0..k9 on one 1000-byte segment, put 1 ms apart.
void FillTen(MasterHarness& h) {
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(h.Put("k" + std::to_string(i), 100).ok());
    h.env().clock().AdvanceBy(MsToNs(1));
  }
}

bool Present(MasterHarness& h, const std::string& key) {
  return h.master().GetObjectView(Name(key)).ok();
}

TEST(MasterEviction, CrossingTheWatermarkEvictsTheOldestObjects) {
  MasterHarness h(EvictionKnobs());
  RemovalLog log;
  h.master().SetReplicaRemovalObserver(&log);
  HS_ASSERT_OK(h.AddStore(1, 1000));
  FillTen(h);  // 100% used after k9; 90% after k8 is not above 0.9
  EXPECT_EQ(h.master().Stats().eviction_passes_total, 0);
  h.env().RunUntilIdle();  // the posted pass
  EXPECT_EQ(h.master().Stats().eviction_passes_total, 1);
  // 25% of 1000 used bytes: the three oldest objects, whole.
  for (int i = 0; i < 10; ++i) EXPECT_EQ(Present(h, "k" + std::to_string(i)), i >= 3) << i;
  EXPECT_EQ(h.master().Stats().used_bytes, 700u);
  ASSERT_EQ(log.removals.size(), 3u);
  EXPECT_EQ(log.removals[0].name.key, "k0");
  EXPECT_EQ(log.removals[0].cause, RemovalCause::kEviction);
  EXPECT_TRUE(log.removals[0].object_deleted);
  HS_EXPECT_OK(h.master().CheckInvariants());
}

TEST(MasterEviction, LeasedObjectsAreKeptAndOrderFollowsLeaseExpiry) {
  MasterHarness h(EvictionKnobs());
  HS_ASSERT_OK(h.AddStore(1, 1000));
  FillTen(h);
  // k0 is read now (lease live); k1 was read long enough ago that its lease
  // expired, but later than every other object's PutEnd time.
  HS_ASSERT_OK(h.Get("k1"));
  h.env().clock().AdvanceBy(h.master().knobs().default_kv_lease_ttl_ns());
  HS_ASSERT_OK(h.Get("k0"));
  h.env().RunUntilIdle();
  EXPECT_TRUE(Present(h, "k0"));   // leased
  EXPECT_TRUE(Present(h, "k1"));   // most recently used among the expired
  EXPECT_FALSE(Present(h, "k2"));
  EXPECT_FALSE(Present(h, "k3"));
  EXPECT_FALSE(Present(h, "k4"));
  EXPECT_TRUE(Present(h, "k5"));
}

TEST(MasterEviction, AllocationFailureEvictsAndRetries) {
  MasterHarness h(EvictionKnobs());
  HS_ASSERT_OK(h.AddStore(1, 1000));
  FillTen(h);  // full; the posted pass has not run
  HS_ASSERT_OK(h.Put("new", 100));
  EXPECT_FALSE(Present(h, "k0"));
  EXPECT_TRUE(Present(h, "new"));
  HS_EXPECT_OK(h.master().CheckInvariants());
}

TEST(MasterEviction, NothingEvictableMeansResourceExhausted) {
  MasterHarness h(EvictionKnobs());
  HS_ASSERT_OK(h.AddStore(1, 1000));
  FillTen(h);
  for (int i = 0; i < 10; ++i) HS_ASSERT_OK(h.Get("k" + std::to_string(i)));
  HS_EXPECT_CODE(h.Start("new", 100), kResourceExhausted);
  EXPECT_EQ(h.master().Stats().objects, 10);
  // Objects still being put are not evicted either.
  MasterHarness w(EvictionKnobs());
  HS_ASSERT_OK(w.AddStore(1, 1000));
  HS_ASSERT_OK(w.Start("writing", 1000));
  HS_EXPECT_CODE(w.Start("new", 100), kResourceExhausted);
  EXPECT_TRUE(Present(w, "writing"));
}

TEST(MasterEviction, CopySourceIsProtected) {
  MasterHarness h(EvictionKnobs());
  HS_ASSERT_OK(h.AddStore(1, 1000));
  HS_ASSERT_OK(h.AddStore(2, 1000));
  // k0 (the oldest) on segment 1 is the source of a copy task.
  for (int i = 0; i < 10; ++i) {
    HS_ASSERT_OK(h.Put("k" + std::to_string(i), 100, 1, {SegmentId(1)}));
    h.env().clock().AdvanceBy(MsToNs(1));
  }
  HS_ASSERT_OK(h.master().CreateCopyTask(CopyTaskRequest{Name("k0"), SegmentId(2), {}}));
  EXPECT_EQ(h.master().Evict(300), 300u);
  EXPECT_TRUE(Present(h, "k0"));
  EXPECT_FALSE(Present(h, "k1"));
  EXPECT_FALSE(Present(h, "k3"));
  EXPECT_TRUE(Present(h, "k4"));
  HS_EXPECT_OK(h.master().CheckInvariants());
}

TEST(MasterEviction, SweepEvictsAboveTheWatermark) {
  MasterKnobs knobs = EvictionKnobs();
  knobs.sweep_interval_ms = 100;
  MasterHarness h(knobs);
  HS_ASSERT_OK(h.AddStore(1, 1000));
  HS_ASSERT_OK(h.AddStore(2, 1000));
  for (int i = 0; i < 10; ++i) HS_ASSERT_OK(h.Put("k" + std::to_string(i), 100, 1, {SegmentId(1)}));
  h.env().RunUntilIdle();
  EXPECT_EQ(h.master().Stats().eviction_passes_total, 0);  // 50%: below the watermark
  // Losing segment 2 puts usage at 100% without any put: only the sweep sees it.
  HS_ASSERT_OK(h.master().UnmountSegment(ClientId(2), SegmentId(2)));
  h.env().RunUntilIdle();
  EXPECT_EQ(h.master().Stats().eviction_passes_total, 0);
  h.env().AdvanceBy(knobs.sweep_interval_ns());
  EXPECT_EQ(h.master().Stats().eviction_passes_total, 1);
  EXPECT_EQ(h.master().Stats().used_bytes, 700u);
}

}  // namespace
}  // namespace heatsink
