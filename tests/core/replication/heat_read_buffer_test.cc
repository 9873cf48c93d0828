// HeatReadBuffer on its own: records come out of a drain in append order with
// their key bytes, times and kinds, across the ring's end with keys of every
// length; a record takes 16 bytes plus its key bytes in whole units; a full
// stripe drops and counts; the high-water mark is reported on the append that
// reaches it; keys longer than a record are refused; the memory is the
// documented fixed size. Appends from many
// threads are in tests/core/stress/replication_stress_test.cc.
#include "core/replication/heat_read_buffer.h"

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "core/env/rng.h"
#include "core/replication/replication_knobs.h"
#include "gtest/gtest.h"

namespace heatsink {
namespace {

struct Drained {
  TimeNs t_ns;
  HeatKey key;
  friend bool operator==(const Drained&, const Drained&) = default;
};

std::vector<Drained> DrainAll(HeatReadBuffer& b) {
  std::vector<Drained> out;
  const int64_t n = b.Drain([&](TimeNs t, HeatKeyView key, HeatReadKind) { out.push_back({t, HeatKey(key)}); });
  EXPECT_EQ(n, static_cast<int64_t>(out.size()));
  return out;
}

using Result = HeatReadBuffer::AppendResult;

TEST(HeatReadBuffer, DrainReturnsTheReadsInAppendOrderWithTheirTimes) {
  HeatReadBuffer b(16);
  EXPECT_FALSE(b.HasUndrained());
  EXPECT_EQ(b.Append(5, HeatKeyView{"default", "a", ""}), Result::kAppended);
  EXPECT_EQ(b.Append(7, HeatKeyView{"t", "bb", "zone-a"}), Result::kAppended);
  EXPECT_EQ(b.Append(7, HeatKeyView{"", "", ""}), Result::kAppended);
  EXPECT_TRUE(b.HasUndrained());
  const std::vector<Drained> expected = {{5, HeatKey("default", "a", "")},
                                         {7, HeatKey("t", "bb", "zone-a")},
                                         {7, HeatKey("", "", "")}};
  EXPECT_EQ(DrainAll(b), expected);
  EXPECT_FALSE(b.HasUndrained());
  EXPECT_TRUE(DrainAll(b).empty());
  // The ring wraps: many laps, each drained.
  for (int lap = 0; lap < 5; ++lap) {
    for (int i = 0; i < 7; ++i) {
      (void)b.Append(lap * 10 + i, HeatKeyView{"default", "k" + std::to_string(i), ""});
    }
    const std::vector<Drained> got = DrainAll(b);
    ASSERT_EQ(got.size(), 7u);
    for (int i = 0; i < 7; ++i) {
      EXPECT_EQ(got[static_cast<size_t>(i)].t_ns, lap * 10 + i);
      EXPECT_EQ(got[static_cast<size_t>(i)].key.key, "k" + std::to_string(i));
    }
  }
  EXPECT_EQ(b.dropped(), 0);
}

TEST(HeatReadBuffer, ARecordTakesItsHeaderAndKeyBytesInWholeUnits) {
  EXPECT_EQ(HeatReadBuffer::UnitsFor(HeatKeyView{"", "", ""}), 1);
  EXPECT_EQ(HeatReadBuffer::UnitsFor(HeatKeyView{"d", "k", ""}), 2);
  EXPECT_EQ(HeatReadBuffer::UnitsFor(HeatKeyView{"", std::string(16, 'k'), ""}), 2);
  EXPECT_EQ(HeatReadBuffer::UnitsFor(HeatKeyView{"", std::string(17, 'k'), ""}), 3);
  // A 48-byte key is one 64-byte record: the unit records_per_stripe counts.
  EXPECT_EQ(HeatReadBuffer::UnitsFor(HeatKeyView{"t", std::string(40, 'k'), "zone-ab"}), 4);
  EXPECT_EQ(HeatReadBuffer::UnitsFor(
                HeatKeyView{"", std::string(HeatReadBuffer::kKeyBytesMax, 'k'), ""}),
            16);
  HeatReadBuffer b(16);
  EXPECT_EQ(b.stripe_units(), 64);
  EXPECT_EQ(b.high_water_units(), 32);
}

TEST(HeatReadBuffer, TheDrainIsAskedForAt128KiBWhateverTheStripeSize) {
  // Half a stripe up to 4,096 records; 8,192 units (2,048 records of 64
  // bytes) above, so a larger stripe only adds room before drops.
  EXPECT_EQ(HeatReadBuffer(4'096).high_water_units(), 8'192);
  EXPECT_EQ(HeatReadBuffer(16'384).high_water_units(), 8'192);
  EXPECT_EQ(HeatReadBuffer(HeatReadBuffer::kRecordsPerStripeMax).high_water_units(), 8'192);
  EXPECT_EQ(HeatReadBuffer(1'024).high_water_units(), 2'048);
  // 16,384 records: 65,536 units. Reads of "d"/"k" take 2 units; the one
  // that leaves 8,192 undrained reports the mark, and the stripe goes on
  // taking reads until it is full.
  HeatReadBuffer b(16'384);
  for (int i = 0; i < 4'095; ++i) {
    ASSERT_EQ(b.Append(i, HeatKeyView{"d", "k", ""}), Result::kAppended) << i;
  }
  EXPECT_EQ(b.Append(4'095, HeatKeyView{"d", "k", ""}), Result::kAppendedHighWater);
  for (int i = 4'096; i < 32'768; ++i) {
    ASSERT_EQ(b.Append(i, HeatKeyView{"d", "k", ""}), Result::kAppendedHighWater) << i;
  }
  EXPECT_EQ(b.Append(32'768, HeatKeyView{"d", "k", ""}), Result::kFull);
  EXPECT_EQ(b.dropped(), 1);
  EXPECT_EQ(b.Drain([](TimeNs, HeatKeyView, HeatReadKind) {}), 32'768);
}

TEST(HeatReadBuffer, AFullStripeDropsAndCountsAndTheHighWaterMarkIsReported) {
  // 64 units; each read of "d"/"k" takes 2.
  HeatReadBuffer b(16);
  for (int i = 0; i < 15; ++i) EXPECT_EQ(b.Append(i, HeatKeyView{"d", "k", ""}), Result::kAppended);
  EXPECT_EQ(b.Append(15, HeatKeyView{"d", "k", ""}), Result::kAppendedHighWater);
  for (int i = 16; i < 32; ++i) {
    EXPECT_EQ(b.Append(i, HeatKeyView{"d", "k", ""}), Result::kAppendedHighWater);
  }
  EXPECT_EQ(b.Append(32, HeatKeyView{"d", "k", ""}), Result::kFull);
  EXPECT_EQ(b.Append(33, HeatKeyView{"d", "k", ""}), Result::kFull);
  EXPECT_EQ(b.dropped(), 2);
  const std::vector<Drained> got = DrainAll(b);
  ASSERT_EQ(got.size(), 32u);
  EXPECT_EQ(got.back().t_ns, 31);  // the dropped reads are gone, not delayed
  // Room again, below the mark.
  EXPECT_EQ(b.Append(34, HeatKeyView{"d", "k", ""}), Result::kAppended);
  EXPECT_EQ(b.dropped(), 2);
}

TEST(HeatReadBuffer, ARecordThatDoesNotFitBeforeTheRingsEndStartsTheNextLap) {
  // 64 units; reads of a 20-byte key take 3: after 21 of them one unit is
  // left before the end, so the 22nd needs a padding unit and its 3.
  HeatReadBuffer b(16);
  const std::string key(20, 'k');
  for (int i = 0; i < 21; ++i) (void)b.Append(i, HeatKeyView{"", key, ""});
  ASSERT_EQ(DrainAll(b).size(), 21u);
  for (int i = 0; i < 10; ++i) (void)b.Append(100 + i, HeatKeyView{"", key, ""});
  // The padding is not a read.
  const std::vector<Drained> got = DrainAll(b);
  ASSERT_EQ(got.size(), 10u);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(got[static_cast<size_t>(i)].t_ns, 100 + i);
    EXPECT_EQ(got[static_cast<size_t>(i)].key, HeatKey("", key, ""));
  }
  // Free units that are not in one piece before the end do not take a
  // record: head at unit 2, 30 reads of 2 units up to unit 62, so 4 units are
  // free but a read of 3 needs the 2 before the end as padding and 3 more.
  HeatReadBuffer c(16);
  (void)c.Append(0, HeatKeyView{"d", "k", ""});
  ASSERT_EQ(DrainAll(c).size(), 1u);
  for (int i = 1; i <= 30; ++i) {
    EXPECT_NE(c.Append(i, HeatKeyView{"d", "k", ""}), Result::kFull) << i;
  }
  EXPECT_EQ(c.Append(31, HeatKeyView{"", key, ""}), Result::kFull);
  EXPECT_EQ(c.dropped(), 1);
  // A read that fits before the end still goes in.
  EXPECT_EQ(c.Append(32, HeatKeyView{"d", "k", ""}), Result::kAppendedHighWater);
  const std::vector<Drained> rest = DrainAll(c);
  ASSERT_EQ(rest.size(), 31u);
  EXPECT_EQ(rest.back().t_ns, 32);
}

TEST(HeatReadBuffer, KeysOfEveryLengthComeBackIntactOverManyLaps) {
  HeatReadBuffer b(16);
  Rng rng(7);
  std::vector<Drained> expected;
  std::vector<HeatReadKind> expected_kinds;
  std::vector<Drained> got;
  std::vector<HeatReadKind> got_kinds;
  auto drain = [&] {
    (void)b.Drain([&](TimeNs t, HeatKeyView key, HeatReadKind kind) {
      got.push_back({t, HeatKey(key)});
      got_kinds.push_back(kind);
    });
  };
  int64_t full = 0;
  for (int i = 0; i < 5'000; ++i) {
    const size_t total = rng.Uniform(HeatReadBuffer::kKeyBytesMax + 1);
    const size_t tenant = rng.Uniform(std::min<size_t>(total, 20) + 1);
    const size_t domain = rng.Uniform(std::min<size_t>(total - tenant, 12) + 1);
    const std::string t(tenant, static_cast<char>('a' + i % 26));
    const std::string k(total - tenant - domain, static_cast<char>('A' + i % 26));
    const std::string d(domain, static_cast<char>('0' + i % 10));
    const HeatReadKind kind = i % 3 == 0 ? HeatReadKind::kAtCap : HeatReadKind::kCounted;
    if (b.Append(i, HeatKeyView{t, k, d}, kind) == Result::kFull) {
      ++full;
      drain();
      ASSERT_NE(b.Append(i, HeatKeyView{t, k, d}, kind), Result::kFull);
    }
    expected.push_back({i, HeatKey(t, k, d)});
    expected_kinds.push_back(kind);
    if (rng.Uniform(8) == 0) drain();
  }
  drain();
  EXPECT_EQ(got, expected);
  EXPECT_EQ(got_kinds, expected_kinds);
  EXPECT_GT(full, 0);  // the ring was full many times, and wrapped
  EXPECT_EQ(b.dropped(), full);
  EXPECT_FALSE(b.HasUndrained());
}

TEST(HeatReadBuffer, KeysLongerThanARecordAreRefused) {
  HeatReadBuffer b(16);
  const std::string fits(HeatReadBuffer::kKeyBytesMax - 9, 'k');
  EXPECT_TRUE(HeatReadBuffer::Fits(HeatKeyView{"tenant", fits, "zzz"}));
  EXPECT_EQ(b.Append(1, HeatKeyView{"tenant", fits, "zzz"}), Result::kAppended);
  EXPECT_FALSE(HeatReadBuffer::Fits(HeatKeyView{"tenant", fits, "zzzz"}));
  EXPECT_EQ(b.Append(2, HeatKeyView{"tenant", fits, "zzzz"}), Result::kTooLong);
  const std::vector<Drained> got = DrainAll(b);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].key, HeatKey("tenant", fits, "zzz"));
  EXPECT_EQ(b.dropped(), 0);
}

TEST(HeatReadBuffer, AStripeHoldsMemoryOnceAThreadAppendsToIt) {
  const int64_t records = ReplicationKnobs().dynamic_replication_heat_read_buffer_records;
  HeatReadBuffer b(records);
  EXPECT_EQ(b.records_per_stripe(), records);
  EXPECT_EQ(b.StripeBytes(), records * 64);
  EXPECT_EQ(b.MemoryBytes(), 0);
  // Each thread appends to its own stripe (round robin over kStripes): one
  // ring per thread, allocated by its first append, none by later ones.
  EXPECT_EQ(b.Append(1, HeatKeyView{"", "a", ""}), HeatReadBuffer::AppendResult::kAppended);
  EXPECT_EQ(b.Append(2, HeatKeyView{"", "b", ""}), HeatReadBuffer::AppendResult::kAppended);
  EXPECT_EQ(b.MemoryBytes(), b.StripeBytes());
  std::thread other([&b] { (void)b.Append(3, HeatKeyView{"", "c", ""}); });
  other.join();
  EXPECT_EQ(b.MemoryBytes(), 2 * b.StripeBytes());
  EXPECT_EQ(DrainAll(b).size(), 3u);
  std::printf("read buffer: %lld records x %zu bytes = %lld KiB per reading thread, at most %d\n",
              static_cast<long long>(b.records_per_stripe()), HeatReadBuffer::kRecordBytes,
              static_cast<long long>(b.StripeBytes() / 1024), HeatReadBuffer::kStripes);
}

}  // namespace
}  // namespace heatsink
