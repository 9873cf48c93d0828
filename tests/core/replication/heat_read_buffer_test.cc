// HeatReadBuffer on its own: records come out of a drain in append order with
// their key bytes and times; a full stripe drops and counts; the high-water
// mark is reported on the append that reaches it; keys longer than a record
// are refused; the memory is the documented fixed size. Appends from many
// threads are in tests/core/stress/replication_stress_test.cc.
#include "core/replication/heat_read_buffer.h"
#include "core/replication/replication_knobs.h"

#include <cstdio>
#include <string>
#include <vector>

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

TEST(HeatReadBuffer, AFullStripeDropsAndCountsAndTheHighWaterMarkIsReported) {
  HeatReadBuffer b(16);
  ASSERT_EQ(b.high_water(), 8);
  for (int i = 0; i < 7; ++i) EXPECT_EQ(b.Append(i, HeatKeyView{"d", "k", ""}), Result::kAppended);
  EXPECT_EQ(b.Append(7, HeatKeyView{"d", "k", ""}), Result::kAppendedHighWater);
  for (int i = 8; i < 16; ++i) {
    EXPECT_EQ(b.Append(i, HeatKeyView{"d", "k", ""}), Result::kAppendedHighWater);
  }
  EXPECT_EQ(b.Append(16, HeatKeyView{"d", "k", ""}), Result::kFull);
  EXPECT_EQ(b.Append(17, HeatKeyView{"d", "k", ""}), Result::kFull);
  EXPECT_EQ(b.dropped(), 2);
  const std::vector<Drained> got = DrainAll(b);
  ASSERT_EQ(got.size(), 16u);
  EXPECT_EQ(got.back().t_ns, 15);  // the dropped reads are gone, not delayed
  // Room again, below the mark.
  EXPECT_EQ(b.Append(18, HeatKeyView{"d", "k", ""}), Result::kAppended);
  EXPECT_EQ(b.dropped(), 2);
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

TEST(HeatReadBuffer, MemoryIsFixedPerStripe) {
  const int64_t records = ReplicationKnobs().dynamic_replication_heat_read_buffer_records;
  HeatReadBuffer b(records);
  EXPECT_EQ(b.records_per_stripe(), records);
  EXPECT_EQ(b.MemoryBytes(), int64_t{HeatReadBuffer::kStripes} * records * 128);
  std::printf("read buffer: %d stripes x %lld records x %zu bytes = %lld KiB\n",
              HeatReadBuffer::kStripes, static_cast<long long>(b.records_per_stripe()),
              HeatReadBuffer::kRecordBytes, static_cast<long long>(b.MemoryBytes() / 1024));
}

}  // namespace
}  // namespace heatsink
