// Covers the heat window: the crossing fires exactly once on the read that
// brings the sliding count to the hit count (DESIGN decision 1), reads expire
// after one window and the window slides rather than tumbles, the entry
// limit holds with bounded incremental cleanup (work per Record is counted),
// a hot key is still admitted within one window when the table is full of
// cold keys, every read of a hot key is counted, the domain is part of the
// key, hot entries are never replaced, the fixed memory per tracked key
// stays within 64 bytes plus the key bytes, and results are deterministic.
// Concurrent Records are in tests/core/stress/heat_window_stress_test.cc (run
// under TSan too). Time is integer nanoseconds passed in by the test; nothing
// sleeps.
#include "core/replication/heat_window.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/env/rng.h"
#include "gtest/gtest.h"
#include "tests/core/replication/heat_window_test_util.h"

namespace heatsink {
namespace {

using testing::Key;
using testing::kMs;
using testing::kSec;
using testing::Names;
using testing::Opts;

TEST(HeatWindow, CrossesExactlyOnceOnTheHitCountRead) {
  HeatWindow w(Opts(100, 8));
  const std::string k = "k";
  for (int i = 0; i < 8; ++i) {
    const HeatRecord r = w.Record(i * kSec, Key(k));
    EXPECT_TRUE(r.tracked);
    EXPECT_EQ(r.count_in_window, i + 1);
    EXPECT_EQ(r.crossed, i == 7) << "read " << i;
  }
  // Keeps reading well above the threshold while old reads slide out.
  for (int i = 0; i < 200; ++i) {
    const HeatRecord r = w.Record(8 * kSec + i * 100 * kMs, Key(k));
    EXPECT_FALSE(r.crossed) << "read " << i;
    EXPECT_GE(r.count_in_window, 8);
  }
  EXPECT_EQ(w.stats().crossings, 1);
}

// Found by fuzz/replicated_master.cc under UBSan: an empty part given as a
// default-constructed view (null data(), as the stage-1 domain is) reached
// memcpy/memcmp with a null pointer. Such keys must count like any other.
TEST(HeatWindow, EmptyPartsWithNullDataCount) {
  HeatWindow w(Opts(10, 3));
  const HeatKeyView null_domain{"tenant", "k", absl::string_view()};
  ASSERT_EQ(null_domain.domain.data(), nullptr);
  EXPECT_EQ(w.Record(0, null_domain).count_in_window, 1);
  EXPECT_EQ(w.Record(1, HeatKeyView{"tenant", "k", ""}).count_in_window, 2);
  EXPECT_TRUE(w.Record(2, null_domain).crossed);
  // A key with a domain is a different key.
  EXPECT_EQ(w.Record(3, HeatKeyView{"tenant", "k", "d1"}).count_in_window, 1);
  EXPECT_EQ(w.CountInWindow(4, null_domain), 3);
}

TEST(HeatWindow, HitCountOfOneCrossesOnTheFirstRead) {
  HeatWindow w(Opts(10, 1));
  const std::string k = "k";
  EXPECT_TRUE(w.Record(0, Key(k)).crossed);
  EXPECT_FALSE(w.Record(1, Key(k)).crossed);
}

TEST(HeatWindow, WindowSlidesRatherThanTumbles) {
  // Four reads just before a 10 s boundary and four just after: a tumbling
  // window would split them; the sliding window sees eight.
  HeatWindow w(Opts(100, 8));
  const std::string k = "k";
  for (int i = 0; i < 4; ++i) EXPECT_FALSE(w.Record(8 * kSec + i * kMs, Key(k)).crossed);
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(w.Record(12 * kSec + i * kMs, Key(k)).crossed);
  const HeatRecord r = w.Record(12 * kSec + 3 * kMs, Key(k));
  EXPECT_TRUE(r.crossed);
  EXPECT_EQ(r.count_in_window, 8);
}

TEST(HeatWindow, ReadsExpireAfterOneWindow) {
  HeatWindow w(Opts(100, 100));
  const std::string a = "a";
  const std::string b = "b";
  // A read late in its sub-bucket is still counted for at least
  // window - window/sub_buckets (9 s here).
  for (int i = 0; i < 5; ++i) (void)w.Record(990 * kMs, Key(a));
  EXPECT_EQ(w.CountInWindow(990 * kMs + 9 * kSec, Key(a)), 5);
  EXPECT_EQ(w.CountInWindow(10 * kSec - 1, Key(a)), 5);
  EXPECT_EQ(w.CountInWindow(10 * kSec, Key(a)), 0);
  // Part of the window slides out, part stays.
  for (int i = 0; i < 3; ++i) (void)w.Record(0, Key(b));
  for (int i = 0; i < 3; ++i) (void)w.Record(5 * kSec, Key(b));
  EXPECT_EQ(w.CountInWindow(9 * kSec, Key(b)), 6);
  EXPECT_EQ(w.CountInWindow(10 * kSec, Key(b)), 3);
  EXPECT_EQ(w.CountInWindow(15 * kSec - 1, Key(b)), 3);
  EXPECT_EQ(w.CountInWindow(15 * kSec, Key(b)), 0);
  EXPECT_EQ(w.CountInWindow(0, Key("never-read")), 0);
}

TEST(HeatWindow, CrossesAgainAfterCoolingDown) {
  HeatWindow w(Opts(100, 8));
  const std::string k = "k";
  for (int i = 0; i < 8; ++i) EXPECT_EQ(w.Record(i * kMs, Key(k)).crossed, i == 7);
  // A window later the count restarts from zero and the key must earn its
  // crossing again.
  for (int i = 0; i < 8; ++i) {
    const HeatRecord r = w.Record(20 * kSec + i * kMs, Key(k));
    EXPECT_EQ(r.count_in_window, i + 1);
    EXPECT_EQ(r.crossed, i == 7);
  }
}

TEST(HeatWindow, LateReadCountsInTheNewestBucket) {
  HeatWindow w(Opts(10, 100));
  const std::string k = "k";
  (void)w.Record(5 * kSec, Key(k));
  // A reader that took its timestamp earlier but got the lock later.
  EXPECT_EQ(w.Record(4 * kSec, Key(k)).count_in_window, 2);
  EXPECT_EQ(w.CountInWindow(15 * kSec - 1, Key(k)), 2);
  EXPECT_EQ(w.CountInWindow(15 * kSec, Key(k)), 0);
}

TEST(HeatWindow, DomainAndFieldBoundariesArePartOfTheKey) {
  HeatWindow w(Opts(100, 100));
  (void)w.Record(0, HeatKeyView{"t", "k", "domain-a"});
  (void)w.Record(0, HeatKeyView{"t", "k", "domain-a"});
  (void)w.Record(0, HeatKeyView{"t", "k", "domain-b"});
  (void)w.Record(0, HeatKeyView{"t", "k", ""});
  EXPECT_EQ(w.CountInWindow(0, HeatKeyView{"t", "k", "domain-a"}), 2);
  EXPECT_EQ(w.CountInWindow(0, HeatKeyView{"t", "k", "domain-b"}), 1);
  EXPECT_EQ(w.CountInWindow(0, HeatKeyView{"t", "k", ""}), 1);
  (void)w.Record(0, HeatKeyView{"ab", "c", ""});
  EXPECT_EQ(w.CountInWindow(0, HeatKeyView{"a", "bc", ""}), 0);
  EXPECT_EQ(w.CountInWindow(0, HeatKeyView{"ab", "c", ""}), 1);
  EXPECT_TRUE(w.CheckInvariants().ok());
}

TEST(HeatWindow, EntryLimitCleanupIsIncrementalAndBounded) {
  HeatWindow w(Opts(64, 8));
  const auto keys = Names("cold", 64);
  for (const auto& k : keys) ASSERT_TRUE(w.Record(0, Key(k)).tracked);
  ASSERT_EQ(w.stats().tracked_keys, 64);
  // A window later every entry is idle. A read of a tracked key cleans
  // nothing up: it touches its own entry only.
  int64_t visits = w.stats().slot_visits;
  EXPECT_EQ(w.Record(20 * kSec, Key(keys[0])).count_in_window, 1);
  EXPECT_EQ(w.stats().slot_visits, visits);
  EXPECT_EQ(w.stats().tracked_keys, 64);
  // New keys make room as they arrive: each insert visits a bounded number
  // of slots at the hand (probe, then cleanup) and frees the idle entries
  // there; never a sweep of the table.
  const auto fresh = Names("fresh", 32);
  for (size_t i = 0; i < fresh.size(); ++i) {
    ASSERT_TRUE(w.Record(20 * kSec, Key(fresh[i])).tracked);
    const HeatWindowStats s = w.stats();
    EXPECT_GE(s.slot_visits - visits, 2) << "insert " << i;
    EXPECT_LE(s.slot_visits - visits, 2 + 8) << "insert " << i;
    visits = s.slot_visits;
    EXPECT_LE(s.tracked_keys, 64);
  }
  // After 32 inserts (64 cleanup visits) the hand has passed every slot:
  // only the key read in this window and the newcomers are left, and none
  // was displaced while idle entries were at hand.
  const HeatWindowStats s = w.stats();
  EXPECT_EQ(s.tracked_keys, 1 + 32);
  EXPECT_EQ(s.idle_reclaims, 63);
  EXPECT_EQ(s.replacements, 0);
  EXPECT_EQ(w.CountInWindow(20 * kSec, Key(keys[0])), 1);
  for (const auto& k : fresh) EXPECT_EQ(w.CountInWindow(20 * kSec, Key(k)), 1) << k;
  EXPECT_TRUE(w.CheckInvariants().ok());
}

// A replacement reuses the victim's key storage when the lengths agree and
// reallocates it when they do not: either way the newcomer is found under its
// own name with its own count, and the victim is gone.
TEST(HeatWindow, ReplacementKeepsKeysExactAcrossKeyLengths) {
  HeatWindow w(Opts(8, 100));
  const auto old_keys = Names("o", 8);  // 10 bytes each
  for (const auto& k : old_keys) ASSERT_TRUE(w.Record(0, Key(k)).tracked);
  const std::vector<std::string> fresh = {"n-00000000", "longer-key-0000000001", "s",
                                          "n-00000001"};
  for (const std::string& k : fresh) {
    const HeatRecord r = w.Record(kSec, Key(k));
    ASSERT_TRUE(r.tracked) << k;
    EXPECT_EQ(r.count_in_window, 1) << k;
    ASSERT_TRUE(w.CheckInvariants().ok()) << k;
  }
  EXPECT_EQ(w.stats().replacements, 4);
  EXPECT_EQ(w.stats().tracked_keys, 8);
  for (const std::string& k : fresh) {
    EXPECT_EQ(w.Record(2 * kSec, Key(k)).count_in_window, 2) << k;
  }
  int64_t still_tracked = 0;
  for (const auto& k : old_keys) still_tracked += w.CountInWindow(2 * kSec, Key(k));
  EXPECT_EQ(still_tracked, 4);
  // Tenant "tenant" (6 bytes) plus the key, per tracked key.
  EXPECT_EQ(w.Memory().key_bytes, 4 * (6 + 10) + (6 + 10) + (6 + 21) + (6 + 1) + (6 + 10));
  EXPECT_TRUE(w.CheckInvariants().ok());
}

TEST(HeatWindow, FullTableRecordDoesBoundedWork) {
  HeatWindow::Options o = Opts(4096, 8);
  HeatWindow w(o);
  const auto cold = Names("cold", 4096);
  for (const auto& k : cold) (void)w.Record(0, Key(k));
  ASSERT_EQ(w.stats().tracked_keys, 4096);
  // Every further new key meets a full table of live cold keys and replaces
  // one; the work per call stays within cleanup + probe slots.
  const auto fresh = Names("fresh", 2000);
  int64_t visits = w.stats().slot_visits;
  int64_t max_delta = 0;
  for (const auto& k : fresh) {
    EXPECT_TRUE(w.Record(kSec, Key(k)).tracked);
    const int64_t now_visits = w.stats().slot_visits;
    max_delta = std::max(max_delta, now_visits - visits);
    visits = now_visits;
  }
  EXPECT_LE(max_delta, o.cleanup_slots_per_record + o.replacement_probe_slots);
  EXPECT_EQ(w.stats().tracked_keys, 4096);
  EXPECT_EQ(w.stats().replacements, 2000);
  EXPECT_TRUE(w.CheckInvariants().ok());
}

TEST(HeatWindow, TableNeverExceedsItsLimitUnderChurn) {
  HeatWindow w(Opts(1000, 4, /*shards=*/16));
  Rng rng(42);
  const auto keys = Names("k", 20'000);
  TimeNs now = 0;
  for (int i = 0; i < 60'000; ++i) {
    now += static_cast<TimeNs>(rng.Uniform(2 * kMs));
    // A skewed mix: a few hot keys among many cold ones.
    const size_t idx = rng.Bernoulli(1, 4) ? rng.Uniform(8) : rng.Uniform(keys.size());
    (void)w.Record(now, Key(keys[idx]));
    if (i % 5'000 == 0) {
      ASSERT_TRUE(w.CheckInvariants().ok()) << w.CheckInvariants();
      ASSERT_LE(w.stats().tracked_keys, 1000);
    }
  }
  EXPECT_TRUE(w.CheckInvariants().ok()) << w.CheckInvariants();
  EXPECT_LE(w.stats().tracked_keys, 1000);
  // The hot keys are tracked and hot.
  for (size_t i = 0; i < 8; ++i) EXPECT_GE(w.CountInWindow(now, Key(keys[i])), 4) << i;
}

TEST(HeatWindow, HotKeyIsAdmittedWithinOneWindowWhenTheTableIsFullOfColdKeys) {
  const HeatWindow::Options o = Opts(512, 8);
  HeatWindow w(o);
  const auto initial = Names("cold", 512);
  for (size_t i = 0; i < initial.size(); ++i)
    (void)w.Record(static_cast<TimeNs>(i) * kMs, Key(initial[i]));
  ASSERT_EQ(w.stats().tracked_keys, 512);
  ASSERT_EQ(w.stats().idle_reclaims, 0);

  // The hot key reads at exactly the admission rate (8 reads in 10 s). New
  // cold keys keep arriving between its reads: 40 before its second read
  // (less than one turn of the clock hand), then 1000 between each later
  // read, i.e. several complete turnovers of the table.
  const std::string hot = "hot";
  const auto flood = Names("flood", 40 + 6 * 1000);
  size_t next = 0;
  const TimeNs first = 1 * kSec;
  const TimeNs gap = 1250 * kMs;
  for (int j = 0; j < 8; ++j) {
    const TimeNs t = first + j * gap;
    const HeatRecord r = w.Record(t, Key(hot));
    ASSERT_TRUE(r.tracked);
    EXPECT_EQ(r.count_in_window, j + 1) << "hot read " << j;
    EXPECT_EQ(r.crossed, j == 7) << "hot read " << j;
    if (j == 7) break;
    const size_t burst = j == 0 ? 40 : 1000;
    for (size_t b = 0; b < burst; ++b) {
      const TimeNs tb = t + static_cast<TimeNs>(b + 1) * (gap / static_cast<TimeNs>(burst + 1));
      ASSERT_TRUE(w.Record(tb, Key(flood[next++])).tracked);
    }
  }
  EXPECT_LT(7 * gap, o.window_ns);  // crossed within one window of its first read
  EXPECT_EQ(next, flood.size());
  const HeatWindowStats s = w.stats();
  EXPECT_EQ(s.tracked_keys, 512);
  EXPECT_GE(s.replacements, 6000);
  EXPECT_TRUE(w.CheckInvariants().ok());
}

TEST(HeatWindow, OneReadKeyIsDisplacedByAFlood) {
  // The control for the test above: replacement is real, and a key read
  // only once does not survive a turnover of the table.
  HeatWindow w(Opts(512, 8));
  const auto initial = Names("cold", 512);
  for (const auto& k : initial) (void)w.Record(0, Key(k));
  const std::string once = "once";
  ASSERT_TRUE(w.Record(kSec, Key(once)).tracked);
  const auto flood = Names("flood", 2000);
  for (const auto& k : flood) (void)w.Record(2 * kSec, Key(k));
  EXPECT_EQ(w.CountInWindow(2 * kSec, Key(once)), 0);
}

TEST(HeatWindow, HotEntriesAreNeverReplaced) {
  HeatWindow w(Opts(4, 2));
  const auto hot = Names("hot", 4);
  for (const auto& k : hot) {
    (void)w.Record(0, Key(k));
    EXPECT_TRUE(w.Record(0, Key(k)).crossed);
  }
  const HeatRecord r = w.Record(kMs, Key("newcomer"));
  EXPECT_FALSE(r.tracked);
  EXPECT_EQ(r.count_in_window, 0);
  EXPECT_EQ(w.stats().untracked, 1);
  for (const auto& k : hot) EXPECT_EQ(w.CountInWindow(kMs, Key(k)), 2);
}

TEST(HeatWindow, OverlongTenantIsNotTracked) {
  HeatWindow w(Opts(4, 2));
  const std::string tenant(70'000, 't');
  const HeatRecord r = w.Record(0, HeatKeyView{tenant, "k", ""});
  EXPECT_FALSE(r.tracked);
  EXPECT_EQ(w.stats().tracked_keys, 0);
}

TEST(HeatWindow, OverlongKeyIsNotTracked) {
  HeatWindow w(Opts(4, 2));
  const std::string key(70'000, 'k');
  const HeatRecord r = w.Record(0, HeatKeyView{"tenant", key, ""});
  EXPECT_FALSE(r.tracked);
  EXPECT_EQ(w.stats().tracked_keys, 0);
  EXPECT_EQ(w.stats().untracked, 1);
  // The longest key that fits is tracked.
  EXPECT_TRUE(w.Record(0, HeatKeyView{"tenant", std::string(65'535, 'k'), ""}).tracked);
  EXPECT_TRUE(w.CheckInvariants().ok());
}

double FixedBytesPerKeyAtFullTable(int32_t sub_buckets, int64_t entries_max, int64_t* key_bytes_out,
                                   int64_t* tracked_out) {
  HeatWindow::Options o = Opts(entries_max, 8, /*shards=*/16);
  o.sub_buckets = sub_buckets;
  o.window_ns = 12 * kSec;  // divisible by every sub-bucket count tested
  HeatWindow w(o);
  // Twice the limit so that every shard fills (keys spread unevenly).
  const int64_t n = 2 * entries_max;
  for (int64_t i = 0; i < n; ++i) {
    const std::string k = absl::StrFormat("key-%08d", i);  // 12 bytes
    (void)w.Record(i, HeatKeyView{"tenant-a", k, ""});     // + 8 tenant bytes
  }
  const HeatWindowMemory m = w.Memory();
  *key_bytes_out = m.key_bytes;
  *tracked_out = m.tracked_keys;
  return static_cast<double>(m.fixed_bytes) / static_cast<double>(m.tracked_keys);
}

TEST(HeatWindow, FixedMemoryPerTrackedKeyIsAtMost64Bytes) {
  for (const int32_t sub_buckets : {10, 12}) {
    int64_t key_bytes = 0;
    int64_t tracked = 0;
    const double per_key = FixedBytesPerKeyAtFullTable(sub_buckets, 50'000, &key_bytes, &tracked);
    std::printf(
        "heat window: %d sub-buckets, %lld keys tracked: %.2f fixed bytes/key + %.2f key "
        "bytes/key\n",
        sub_buckets, static_cast<long long>(tracked), per_key,
        static_cast<double>(key_bytes) / static_cast<double>(tracked));
    EXPECT_EQ(tracked, 50'000);
    EXPECT_EQ(key_bytes, tracked * 20);
    EXPECT_LE(per_key, 64.0) << sub_buckets << " sub-buckets";
  }
}

TEST(HeatWindow, HotKeysAreOrderedAndBounded) {
  HeatWindow w(Opts(100, 100, /*shards=*/4));
  const auto keys = Names("k", 10);
  for (int i = 0; i < 10; ++i) {
    for (int r = 0; r <= i % 5; ++r) (void)w.Record(0, Key(keys[i]));
  }
  const std::vector<HotKey> top = w.HotKeys(0, /*min_count=*/3, /*limit=*/5);
  ASSERT_EQ(top.size(), 5u);
  // Counts 5,5,4,4,3 (keys 4,9 then 3,8 then 2); ties by key.
  EXPECT_EQ(top[0].key.key, keys[4]);
  EXPECT_EQ(top[0].count_in_window, 5);
  EXPECT_EQ(top[1].key.key, keys[9]);
  EXPECT_EQ(top[2].key.key, keys[3]);
  EXPECT_EQ(top[3].key.key, keys[8]);
  EXPECT_EQ(top[4].key.key, keys[2]);
  EXPECT_EQ(top[4].count_in_window, 3);
  EXPECT_EQ(top[0].key.tenant, "tenant");
  EXPECT_TRUE(w.HotKeys(20 * kSec, 1, 10).empty());  // all cooled
}

TEST(HeatWindow, ClearForgetsEveryKey) {
  HeatWindow w(Opts(16, 2, /*shards=*/2));
  const auto keys = Names("k", 16);
  for (const auto& k : keys) (void)w.Record(0, Key(k));
  w.Clear();
  EXPECT_EQ(w.stats().tracked_keys, 0);
  EXPECT_EQ(w.Memory().key_bytes, 0);
  EXPECT_EQ(w.CountInWindow(0, Key(keys[0])), 0);
  EXPECT_TRUE(w.CheckInvariants().ok());
  EXPECT_EQ(w.Record(0, Key(keys[0])).count_in_window, 1);
}

std::vector<std::pair<HeatKey, int64_t>> Replay(uint64_t seed) {
  HeatWindow w(Opts(256, 6, /*shards=*/4));
  Rng rng(seed);
  const auto keys = Names("k", 3'000);
  TimeNs now = 0;
  for (int i = 0; i < 30'000; ++i) {
    now += static_cast<TimeNs>(rng.Uniform(kMs));
    (void)w.Record(now, Key(keys[rng.Bernoulli(1, 3) ? rng.Uniform(20) : rng.Uniform(3'000)]));
  }
  std::vector<std::pair<HeatKey, int64_t>> out;
  for (const HotKey& h : w.HotKeys(now, 1, 10'000)) out.emplace_back(h.key, h.count_in_window);
  const HeatWindowStats s = w.stats();
  out.emplace_back(HeatKey("stats", absl::StrFormat("%d/%d/%d/%d", s.inserts, s.replacements,
                                                    s.idle_reclaims, s.crossings)),
                   s.untracked);
  return out;
}

TEST(HeatWindow, SameSequenceGivesSameResults) {
  const auto a = Replay(7);
  const auto b = Replay(7);
  EXPECT_EQ(a, b);
  EXPECT_GT(a.size(), 100u);
  EXPECT_NE(a, Replay(8));
}

// A hot key read 200,000 times: every read is counted, in the window's
// sub-buckets without saturating, and it crosses once.
TEST(HeatWindow, EveryReadOfAHotKeyIsCounted) {
  HeatWindow w(Opts(16, 2));
  constexpr int kReads = 200'000;
  // One read every 0.1 ms: 10,000 per one-second sub-bucket (no counter
  // saturates), 100,000 in the last window.
  for (int i = 0; i < kReads; ++i) (void)w.Record(TimeNs{i} * 100'000, Key("k"));
  const HeatWindowStats s = w.stats();
  EXPECT_EQ(s.records, kReads);
  EXPECT_EQ(s.crossings, 1);
  EXPECT_EQ(w.CountInWindow(TimeNs{kReads - 1} * 100'000, Key("k")), kReads / 2);
  EXPECT_TRUE(w.CheckInvariants().ok());
}

// The domain is part of the heat key: the same object read from two domains
// is two entries.
TEST(HeatWindow, TheDomainIsPartOfTheKey) {
  HeatWindow w(Opts(16, 100));
  const HeatKeyView in_a{"tenant", "k", "domain-a"};
  const HeatKeyView in_b{"tenant", "k", "domain-b"};
  EXPECT_EQ(w.Record(0, in_a).count_in_window, 1);
  EXPECT_EQ(w.Record(0, in_a).count_in_window, 2);
  EXPECT_EQ(w.Record(0, in_b).count_in_window, 1);
  EXPECT_EQ(w.Record(0, in_b).count_in_window, 2);
  EXPECT_EQ(w.Record(0, in_a).count_in_window, 3);
  EXPECT_EQ(w.stats().tracked_keys, 2);
  EXPECT_EQ(w.CountInWindow(0, in_a), 3);
  EXPECT_EQ(w.CountInWindow(0, in_b), 2);
  EXPECT_EQ(w.CountInWindow(0, Key("k")), 0);
  EXPECT_TRUE(w.CheckInvariants().ok());
}

TEST(StableHeatKeyHash, IsPinnedAcrossProcessesAndSeparatesFields) {
  // A golden value: the shard of a key must not change between builds or
  // machines, or simulator runs stop being reproducible.
  EXPECT_EQ(StableHeatKeyHash(HeatKeyView{"tenant", "key", "domain"}), 14947843500285832686ull);
  EXPECT_EQ(StableHeatKeyHash(HeatKeyView{"", "", ""}), 17223777563291888923ull);
  EXPECT_NE(StableHeatKeyHash(HeatKeyView{"ab", "c", ""}),
            StableHeatKeyHash(HeatKeyView{"a", "bc", ""}));
  EXPECT_NE(StableHeatKeyHash(HeatKeyView{"t", "k", ""}),
            StableHeatKeyHash(HeatKeyView{"t", "k", "d"}));
}

}  // namespace
}  // namespace heatsink
