// Covers the buddy allocator under the head pool: lowest-address placement in
// the smallest free order, splitting and merging up to (never beyond) one
// block, exhaustion, rejection of sizes outside [head, block], and the block
// metadata swap used by an exchange.
#include "core/tiering/buddy_allocator.h"

#include <vector>

#include "gtest/gtest.h"

namespace heatsink {
namespace {

constexpr uint64_t kHead = 8 * 1024;
constexpr uint64_t kBlock = 64 * 1024;

TEST(BuddyAllocator, FillsPartialBlocksBeforeSplittingFreshOnes) {
  BuddyAllocator a(3 * kBlock, kHead, kBlock);
  for (uint64_t i = 0; i < 8; ++i) {
    absl::StatusOr<uint64_t> off = a.Allocate(kHead);
    ASSERT_TRUE(off.ok());
    EXPECT_EQ(*off, i * kHead);
  }
  EXPECT_TRUE(a.block_fully_allocated(0));
  EXPECT_EQ(a.allocated_bytes_in_block(1), 0u);
  ASSERT_TRUE(a.Free(3 * kHead).ok());
  EXPECT_FALSE(a.block_fully_allocated(0));
  // The hole in block 0 is reused before block 1 is split.
  EXPECT_EQ(*a.Allocate(kHead), 3 * kHead);
  EXPECT_EQ(*a.Allocate(kBlock), kBlock);
  EXPECT_EQ(*a.Allocate(kHead), 2 * kBlock);
  EXPECT_TRUE(a.CheckInvariants().ok());
}

TEST(BuddyAllocator, MergesBuddiesBackIntoABlock) {
  BuddyAllocator a(kBlock, kHead, kBlock);
  std::vector<uint64_t> offs;
  for (int i = 0; i < 8; ++i) offs.push_back(*a.Allocate(kHead));
  EXPECT_EQ(a.Allocate(kHead).status().code(), absl::StatusCode::kResourceExhausted);
  for (uint64_t off : offs) ASSERT_TRUE(a.Free(off).ok());
  EXPECT_EQ(a.free_bytes(), kBlock);
  // Fully merged: a whole block fits again.
  EXPECT_EQ(*a.Allocate(kBlock), 0u);
  EXPECT_TRUE(a.CheckInvariants().ok());
}

TEST(BuddyAllocator, RejectsBadSizesAndFrees) {
  BuddyAllocator a(2 * kBlock, kHead, kBlock);
  EXPECT_EQ(a.Allocate(kHead / 2).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(a.Allocate(3 * kHead).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(a.Allocate(2 * kBlock).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(a.Free(kHead).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(*a.Allocate(2 * kHead), 0u);  // intermediate orders work too
  EXPECT_EQ(a.AllocationBytes(0), 2 * kHead);
  EXPECT_EQ(*a.Allocate(kHead), 2 * kHead);
  EXPECT_TRUE(a.CheckInvariants().ok());
}

TEST(BuddyAllocator, CanAllocateAgreesWithAllocate) {
  // One block: fill it with heads except one, then check every size against
  // what Allocate does, including the fragmented case (free bytes enough for
  // a bigger range, but no free range of that order).
  BuddyAllocator a(kBlock, kHead, kBlock);
  EXPECT_TRUE(a.CanAllocate(kBlock));
  EXPECT_FALSE(a.CanAllocate(kHead / 2));  // not a valid size
  EXPECT_FALSE(a.CanAllocate(3 * kHead));
  std::vector<uint64_t> offs;
  for (int i = 0; i < 8; ++i) offs.push_back(*a.Allocate(kHead));
  EXPECT_FALSE(a.CanAllocate(kHead));
  ASSERT_TRUE(a.Free(offs[1]).ok());
  ASSERT_TRUE(a.Free(offs[6]).ok());
  // 2 heads free, in different pairs: no 2-head range.
  EXPECT_EQ(a.free_bytes(), 2 * kHead);
  EXPECT_TRUE(a.CanAllocate(kHead));
  EXPECT_FALSE(a.CanAllocate(2 * kHead));
  EXPECT_EQ(a.Allocate(2 * kHead).status().code(), absl::StatusCode::kResourceExhausted);
  ASSERT_TRUE(a.Free(offs[0]).ok());  // merges with offs[1]
  EXPECT_TRUE(a.CanAllocate(2 * kHead));
  EXPECT_EQ(*a.Allocate(2 * kHead), 0u);
  EXPECT_TRUE(a.CheckInvariants().ok());
}

TEST(BuddyAllocator, SwapBlocksExchangesMetadata) {
  BuddyAllocator a(2 * kBlock, kHead, kBlock);
  BuddyAllocator b(2 * kBlock, kHead, kBlock);
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(a.Allocate(kHead).ok());  // a: block 0 full
  ASSERT_TRUE(b.Allocate(kBlock).ok());                               // b: block 0 whole
  ASSERT_TRUE(b.Allocate(kHead).ok());                                // b: block 1 one head
  BuddyAllocator::SwapBlocks(a, 0, b, 1);
  EXPECT_EQ(a.allocated_bytes_in_block(0), kHead);
  EXPECT_EQ(a.AllocationBytes(0), kHead);
  EXPECT_EQ(b.allocated_bytes_in_block(1), kBlock);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(b.AllocationBytes(kBlock + i * kHead), kHead);
  EXPECT_EQ(a.free_bytes(), 2 * kBlock - kHead);
  EXPECT_EQ(b.free_bytes(), 0u);
  EXPECT_TRUE(a.CheckInvariants().ok());
  EXPECT_TRUE(b.CheckInvariants().ok());
  // Freed heads in the swapped block merge at their new place.
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(b.Free(kBlock + i * kHead).ok());
  EXPECT_EQ(b.free_bytes(), kBlock);
  EXPECT_TRUE(b.CheckInvariants().ok());
}

}  // namespace
}  // namespace heatsink
