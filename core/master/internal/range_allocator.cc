#include "core/master/internal/range_allocator.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "core/base/check.h"

namespace heatsink::master_internal {

RangeAllocator::RangeAllocator(uint64_t capacity_bytes) : capacity_bytes_(capacity_bytes) {
  if (capacity_bytes_ > 0) free_.emplace(0, capacity_bytes_);
}

std::optional<uint64_t> RangeAllocator::Allocate(uint64_t size) {
  HS_CHECK(size > 0);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < size) continue;
    const uint64_t offset = it->first;
    const uint64_t rest = it->second - size;
    // The rest keeps the range's node (no allocation): its key moves up by
    // `size`, still below the next range.
    auto node = free_.extract(it);
    if (rest > 0) {
      node.key() = offset + size;
      node.mapped() = rest;
      free_.insert(std::move(node));
    }
    allocated_bytes_ += size;
    return offset;
  }
  return std::nullopt;
}

bool RangeAllocator::AllocateAt(uint64_t offset, uint64_t size) {
  HS_CHECK(size > 0);
  if (offset > capacity_bytes_ || size > capacity_bytes_ - offset) return false;
  // The free range that starts at or before `offset` must cover it whole.
  auto it = free_.upper_bound(offset);
  if (it == free_.begin()) return false;
  --it;
  const uint64_t start = it->first;
  const uint64_t end = it->first + it->second;
  if (offset + size > end) return false;
  free_.erase(it);
  if (start < offset) free_.emplace(start, offset - start);
  if (offset + size < end) free_.emplace(offset + size, end - offset - size);
  allocated_bytes_ += size;
  return true;
}

void RangeAllocator::Free(uint64_t offset, uint64_t size) {
  HS_CHECK(size > 0);
  HS_CHECK_MSG(offset <= capacity_bytes_ && size <= capacity_bytes_ - offset,
               "freed range outside the segment");
  auto next = free_.lower_bound(offset);
  HS_CHECK_MSG(next == free_.end() || offset + size <= next->first, "double free (overlaps next)");
  uint64_t start = offset;
  uint64_t length = size;
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    HS_CHECK_MSG(prev->first + prev->second <= offset, "double free (overlaps previous)");
    if (prev->first + prev->second == offset) {
      start = prev->first;
      length += prev->second;
      free_.erase(prev);
    }
  }
  if (next != free_.end() && offset + size == next->first) {
    length += next->second;
    free_.erase(next);
  }
  free_.emplace(start, length);
  allocated_bytes_ -= size;
}

uint64_t RangeAllocator::LargestFreeRange() const {
  uint64_t largest = 0;
  for (const auto& [offset, size] : free_) largest = std::max(largest, size);
  return largest;
}

}  // namespace heatsink::master_internal
