// File: core/tiering/buddy_allocator.h
//
// A binary buddy allocator over one head-pool region. Allocation sizes are
// powers of two from `min_bytes` (one fixed head, --ram-head) to `max_bytes`
// (one block, --block); buddies never merge beyond a block, so a region only
// needs to be a whole number of blocks. Fixed heads take minimum-size buddy
// slots (8 per default block); arena blocks take a whole block.
//
// Placement is deterministic: the smallest free order that fits, and within an
// order the lowest address, so partially used blocks fill up before a fresh
// block is split (complete blocks are what promotion can move).
//
// Thread safety: none; TierManager calls it under its exclusive tier lock.
#ifndef HEATSINK_CORE_TIERING_BUDDY_ALLOCATOR_H_
#define HEATSINK_CORE_TIERING_BUDDY_ALLOCATOR_H_

#include <cstdint>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/btree_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace heatsink {

class BuddyAllocator {
 public:
  // REQUIRES: min_bytes and max_bytes powers of two, min_bytes <= max_bytes,
  // region_bytes a multiple of max_bytes.
  BuddyAllocator(uint64_t region_bytes, uint64_t min_bytes, uint64_t max_bytes);
  BuddyAllocator(const BuddyAllocator&) = delete;
  BuddyAllocator& operator=(const BuddyAllocator&) = delete;

  // Returns the offset of a new allocation of exactly `bytes`.
  // INVALID_ARGUMENT unless bytes is a power of two in [min, max];
  // RESOURCE_EXHAUSTED when no free range fits.
  [[nodiscard]] absl::StatusOr<uint64_t> Allocate(uint64_t bytes);
  // Whether Allocate(bytes) would succeed now, without building a status (a
  // full pool is probed on every store).
  bool CanAllocate(uint64_t bytes) const;
  // Frees the allocation that starts at `offset`, merging free buddies up to
  // a block. NOT_FOUND if no allocation starts there.
  [[nodiscard]] absl::Status Free(uint64_t offset);

  // Size of the allocation starting at `offset`, 0 if none starts there.
  uint64_t AllocationBytes(uint64_t offset) const;
  uint64_t region_bytes() const { return region_bytes_; }
  uint64_t block_count() const { return block_allocated_bytes_.size(); }
  uint64_t free_bytes() const { return free_bytes_; }
  uint64_t allocated_bytes_in_block(uint64_t block) const;
  bool block_fully_allocated(uint64_t block) const {
    return allocated_bytes_in_block(block) == max_bytes_;
  }

  // Exchanges the allocation metadata of block `block_a` of `a` with block
  // `block_b` of `b` (the two may be the same allocator, different blocks):
  // afterwards each block has the other's allocations and free ranges at the
  // same relative offsets. Part of a promotion exchange.
  static void SwapBlocks(BuddyAllocator& a, uint64_t block_a, BuddyAllocator& b,
                         uint64_t block_b);

  // Free and allocated ranges tile the region exactly, no two free buddies
  // remain unmerged, per-block byte counts match.
  [[nodiscard]] absl::Status CheckInvariants() const;

 private:
  int OrderOf(uint64_t bytes) const;  // -1 if not an allowed size
  uint64_t BytesOf(int order) const { return min_bytes_ << order; }
  void InsertFree(int order, uint64_t offset);

  const uint64_t region_bytes_;
  const uint64_t min_bytes_;
  const uint64_t max_bytes_;
  const int max_order_;
  // Ordered (lowest offset first), B-trees: a node holds many offsets, so
  // an allocation or a free touches a few cache lines and rarely allocates.
  std::vector<absl::btree_set<uint64_t>> free_;  // free_[order]: start offsets
  absl::btree_map<uint64_t, int> allocated_;     // start offset -> order
  std::vector<uint64_t> block_allocated_bytes_;
  uint64_t free_bytes_ = 0;
};

}  // namespace heatsink

#endif  // HEATSINK_CORE_TIERING_BUDDY_ALLOCATOR_H_
