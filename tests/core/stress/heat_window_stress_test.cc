// Covers the heat window under concurrent Records (label slow, so the TSan
// preset runs it): concurrent Records lose no read and cross once per key;
// Records of hot keys race a thread that inserts, replaces and cleans up
// entries of the same shards and a reader of counts (the admission worker's
// side), and still lose no read of a hot key, cross once, and leave every
// count and invariant exact. Time is integer nanoseconds passed in by the test; nothing sleeps.
#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "core/replication/heat_window.h"
#include "gtest/gtest.h"
#include "tests/core/replication/heat_window_test_util.h"

namespace heatsink {
namespace {

using testing::Key;
using testing::kMs;
using testing::kSec;
using testing::Names;
using testing::Opts;

TEST(HeatWindowStress, ConcurrentRecordsLoseNoReadAndCrossOnce) {
  HeatWindow w(Opts(1024, 500, /*shards=*/4));
  const auto keys = Names("k", 64);
  constexpr int kPerThread = 20'000;
  std::atomic<int64_t> crossings{0};
  auto worker = [&](int offset) {
    for (int i = 0; i < kPerThread; ++i) {
      const HeatRecord r = w.Record(kSec, Key(keys[(i + offset) % keys.size()]));
      if (r.crossed) crossings.fetch_add(1);
    }
  };
  std::thread t1(worker, 0);
  std::thread t2(worker, 31);
  t1.join();
  t2.join();
  int64_t total = 0;
  for (const auto& k : keys) total += w.CountInWindow(kSec, Key(k));
  EXPECT_EQ(total, 2 * kPerThread);
  // Each key is read 625 times (> 500): exactly one crossing per key.
  EXPECT_EQ(crossings.load(), 64);
  EXPECT_EQ(w.stats().records, 2 * kPerThread);
  EXPECT_TRUE(w.CheckInvariants().ok());
}

// Records of hot keys race with a thread that inserts, replaces and cleans up
// entries of the same shards, and with a reader of counts and hot keys. Hot
// keys (above the hit count, never replaced) lose no read and cross once
// each; the stats add up. Run under TSan.
TEST(HeatWindowStress, HotReadsRaceWithReplacementAndCountReadersAndLoseNoRead) {
  HeatWindow w(Opts(256, 50, /*shards=*/2));
  const auto hot = Names("hot", 16);
  const auto cold = Names("cold", 5'000);
  constexpr int kPerThread = 40'000;
  // Warm the hot keys past the hit count first, so none is replaceable.
  for (const auto& k : hot) {
    for (int i = 0; i < 50; ++i) (void)w.Record(kSec, Key(k));
  }
  std::atomic<int64_t> crossings{0};
  auto reader = [&](int offset) {
    for (int i = 0; i < kPerThread; ++i) {
      const size_t k = static_cast<size_t>(i + offset) % hot.size();
      const HeatRecord r = w.Record(kSec, Key(hot[k]));
      ASSERT_TRUE(r.tracked);
      if (r.crossed) crossings.fetch_add(1);
    }
  };
  std::atomic<bool> done{false};
  int64_t churn_records = 0;
  // A cold key that happens to be read twice before it is replaced outranks
  // the one-read keys and stays; while the readers run, the churn may go
  // round the cold keys often enough for such a key to cross too.
  int64_t churn_crossings = 0;
  std::thread churn([&] {
    // Cold keys in a later sub-bucket of the same window: the hot keys stay
    // counted, and the cold ones replace one another and get cleaned up.
    for (size_t i = 0; !done.load() || i < cold.size(); ++i) {
      if (w.Record(kSec + 500 * kMs, Key(cold[i % cold.size()])).crossed) ++churn_crossings;
      ++churn_records;
    }
  });
  std::thread counter([&] {
    // Counts only grow while the readers run (all in one window).
    int64_t last = 0;
    while (!done.load()) {
      const int64_t c = w.CountInWindow(kSec + 500 * kMs, Key(hot[3]));
      ASSERT_GE(c, last);
      last = c;
      ASSERT_LE(w.HotKeys(kSec + 500 * kMs, 50, 4).size(), 4u);
    }
  });
  std::thread t1(reader, 0);
  std::thread t2(reader, 7);
  t1.join();
  t2.join();
  done.store(true);
  churn.join();
  counter.join();
  int64_t total = 0;
  for (const auto& k : hot) total += w.CountInWindow(kSec + 500 * kMs, Key(k));
  EXPECT_EQ(total, 16 * 50 + 2 * kPerThread);
  EXPECT_EQ(crossings.load(), 0);  // every hot key crossed during warm-up
  const HeatWindowStats s = w.stats();
  EXPECT_EQ(s.records, 16 * 50 + 2 * kPerThread + churn_records);
  EXPECT_EQ(s.crossings, 16 + churn_crossings);
  EXPECT_GT(s.replacements + s.idle_reclaims, 1'000);
  EXPECT_TRUE(w.CheckInvariants().ok());
}

}  // namespace
}  // namespace heatsink
