// File: core/master/internal/range_allocator.h
//
// Byte ranges inside one segment: first-fit over an ordered free list with
// coalescing on free. Replicas get real offsets so a worker can copy bytes
// between them. Deterministic: the lowest-offset range that fits wins.
//
// Thread safety: none; the segment table locks around it.
#ifndef HEATSINK_CORE_MASTER_INTERNAL_RANGE_ALLOCATOR_H_
#define HEATSINK_CORE_MASTER_INTERNAL_RANGE_ALLOCATOR_H_

#include <cstdint>
#include <map>
#include <optional>

namespace heatsink::master_internal {

class RangeAllocator {
 public:
  explicit RangeAllocator(uint64_t capacity_bytes);
  RangeAllocator(const RangeAllocator&) = delete;
  RangeAllocator& operator=(const RangeAllocator&) = delete;
  RangeAllocator(RangeAllocator&&) = default;
  RangeAllocator& operator=(RangeAllocator&&) = default;

  // Offset of a free range of `size` bytes (size > 0), or nullopt when no
  // single free range is large enough.
  std::optional<uint64_t> Allocate(uint64_t size);

  // Takes exactly [offset, offset + size) (size > 0). False, and nothing
  // changes, when any byte of it is outside the segment or not free.
  bool AllocateAt(uint64_t offset, uint64_t size);

  // Returns [offset, offset + size) to the free list. REQUIRES (checked): the
  // range was allocated and is not free.
  void Free(uint64_t offset, uint64_t size);

  uint64_t capacity_bytes() const { return capacity_bytes_; }
  uint64_t allocated_bytes() const { return allocated_bytes_; }
  uint64_t free_bytes() const { return capacity_bytes_ - allocated_bytes_; }
  // Size of the largest free range (0 when full).
  uint64_t LargestFreeRange() const;
  size_t free_range_count() const { return free_.size(); }

 private:
  uint64_t capacity_bytes_;
  uint64_t allocated_bytes_ = 0;
  std::map<uint64_t, uint64_t> free_;  // offset -> size, non-adjacent
};

}  // namespace heatsink::master_internal

#endif  // HEATSINK_CORE_MASTER_INTERNAL_RANGE_ALLOCATOR_H_
