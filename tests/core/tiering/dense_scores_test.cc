// Covers the dense score arrays and score arithmetic: the slot mapping
// (block * heads_per_block + head offset, no hash table), single ownership
// (publish into an occupied slot and extract from an empty one are rejected),
// increment and decay with exact binary values, the no-score tag, and the
// slice swap used by an exchange.
#include <atomic>
#include <cmath>
#include <limits>

#include "core/tiering/dense_scores.h"
#include "core/tiering/head_pool.h"
#include "core/tiering/score.h"
#include "gtest/gtest.h"

namespace heatsink {
namespace {

TEST(PoolGeometry, SlotMappingIsBlockTimesHeadsPlusOffset) {
  const PoolGeometry g{2 * kMiB, 256 * kKiB, 8};
  // Block 2, third head: 2 * 2 MiB + 2 * 256 KiB.
  const uint64_t offset = 2 * 2 * kMiB + 2 * 256 * kKiB;
  EXPECT_EQ(g.SlotOfOffset(offset), 18u);
  EXPECT_EQ(g.SlotOf(2, 2), 18u);
  EXPECT_EQ(g.BlockOfSlot(18), 2u);
  EXPECT_EQ(g.HeadInBlock(18), 2u);
  EXPECT_EQ(g.OffsetOfSlot(18), offset);
  EXPECT_EQ(g.BlockOfOffset(offset), 2u);
  for (uint64_t block = 0; block < 4; ++block) {
    for (uint64_t head = 0; head < 8; ++head) {
      const uint64_t slot = g.SlotOf(block, head);
      EXPECT_EQ(g.BlockOfSlot(slot), block);
      EXPECT_EQ(g.HeadInBlock(slot), head);
      EXPECT_EQ(g.SlotOfOffset(g.OffsetOfSlot(slot)), slot);
    }
  }
}

// The runtime moves exactly the array's pages onto its region's node, so the
// storage is page-aligned, whole pages, and holds every slot.
TEST(DenseScoreArray, StorageIsWholeAlignedPages) {
  for (const uint64_t slots :
       {uint64_t{1}, uint64_t{8}, uint64_t{512}, uint64_t{513}, uint64_t{4096}}) {
    DenseScoreArray a(slots);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.storage()) % kDenseScorePageBytes, 0u) << slots;
    EXPECT_EQ(a.storage_bytes() % kDenseScorePageBytes, 0u) << slots;
    EXPECT_GE(a.storage_bytes(), slots * sizeof(double)) << slots;
    EXPECT_LT(a.storage_bytes(), slots * sizeof(double) + kDenseScorePageBytes) << slots;
    for (uint64_t i = 0; i < slots; ++i) ASSERT_FALSE(a.occupied(i)) << i;
  }
}

TEST(DenseScoreArray, SingleOwnerPerSlot) {
  DenseScoreArray a(4);
  EXPECT_FALSE(a.occupied(1));
  EXPECT_EQ(a.Extract(1).status().code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(a.Publish(1, 2.5).ok());
  EXPECT_TRUE(a.occupied(1));
  EXPECT_EQ(a.Publish(1, 7.0).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(a.Load(1), 2.5);  // the rejected publish changed nothing
  EXPECT_EQ(a.Publish(4, 1.0).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(a.Publish(2, std::numeric_limits<double>::infinity()).code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<double> taken = a.Extract(1);
  ASSERT_TRUE(taken.ok());
  EXPECT_EQ(*taken, 2.5);
  EXPECT_FALSE(a.occupied(1));
  EXPECT_EQ(a.Extract(1).status().code(), absl::StatusCode::kFailedPrecondition);
  // Zero is a real score, distinct from an empty slot.
  ASSERT_TRUE(a.Publish(0, 0.0).ok());
  EXPECT_TRUE(a.occupied(0));
}

TEST(DenseScoreArray, IncrementAndDecayAreExact) {
  DenseScoreArray a(3);
  ASSERT_TRUE(a.Publish(0, 0.0).ok());
  ASSERT_TRUE(a.Publish(1, 0.0).ok());
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(a.Add(0, 1.0));
  EXPECT_EQ(a.Load(0), 3.0);
  a.Scale(0, 3, 0.5);
  EXPECT_EQ(a.Load(0), 1.5);
  EXPECT_TRUE(a.Add(0, 0.25));
  EXPECT_EQ(a.Load(0), 1.75);
  a.Scale(0, 3, 0.5);
  EXPECT_EQ(a.Load(0), 0.875);
  EXPECT_EQ(a.Load(1), 0.0);
  // Decay skips an empty slot, increment refuses it.
  EXPECT_FALSE(a.occupied(2));
  EXPECT_FALSE(a.Add(2, 1.0));
  EXPECT_FALSE(a.occupied(2));
  EXPECT_EQ(a.Sum(0, 2), 0.875);
}

TEST(Score, TagIsCanonicalNanAndNeverArithmetic) {
  EXPECT_TRUE(std::isnan(NoScoreTag()));
  EXPECT_TRUE(IsNoScoreTag(NoScoreTag()));
  EXPECT_FALSE(IsNoScoreTag(0.0));
  // A NaN with another payload or sign is not the tag.
  EXPECT_FALSE(IsNoScoreTag(-std::numeric_limits<double>::quiet_NaN()));
  std::atomic<double> s{NoScoreTag()};
  EXPECT_FALSE(AtomicAddScore(s, 1.0));
  AtomicScaleScore(s, 0.5);
  EXPECT_TRUE(IsNoScoreTag(s.load()));
  s.store(6.0);
  EXPECT_TRUE(AtomicAddScore(s, 2.0));
  AtomicScaleScore(s, 0.25);
  EXPECT_EQ(s.load(), 2.0);
}

TEST(DenseScoreArray, SwapSlicesMovesOwnership) {
  DenseScoreArray a(8), b(8);
  ASSERT_TRUE(a.Publish(4, 1.0).ok());
  ASSERT_TRUE(a.Publish(5, 2.0).ok());
  ASSERT_TRUE(b.Publish(0, 10.0).ok());
  DenseScoreArray::SwapSlices(a, 4, b, 0, 2);
  EXPECT_EQ(a.Load(4), 10.0);
  EXPECT_FALSE(a.occupied(5));
  EXPECT_EQ(b.Load(0), 1.0);
  EXPECT_EQ(b.Load(1), 2.0);
  // Two slices of one array.
  DenseScoreArray::SwapSlices(b, 0, b, 4, 2);
  EXPECT_EQ(b.Load(4), 1.0);
  EXPECT_EQ(b.Load(5), 2.0);
  EXPECT_FALSE(b.occupied(0));
}

}  // namespace
}  // namespace heatsink
